#include "tests/support/pcap_io.h"

#include <pcap/pcap.h>

#include <memory>
#include <stdexcept>

namespace uroce::test {

PcapFile read_pcap(const std::string& path) {
  char err[PCAP_ERRBUF_SIZE];
  std::unique_ptr<pcap_t, decltype(&pcap_close)> p(pcap_open_offline(path.c_str(), err), pcap_close);
  if (!p) throw std::runtime_error("cannot open " + path + ": " + err);
  PcapFile file;
  file.linktype = pcap_datalink(p.get());
  pcap_pkthdr* hdr;
  const u_char* data;
  while (pcap_next_ex(p.get(), &hdr, &data) == 1)
    file.frames.push_back(PcapFrame{std::vector<uint8_t>(data, data + hdr->caplen)});
  return file;
}

void write_pcap(const std::string& path, const std::vector<std::vector<uint8_t>>& frames) {
  std::unique_ptr<pcap_t, decltype(&pcap_close)> p(pcap_open_dead(DLT_EN10MB, 65535), pcap_close);
  pcap_dumper_t* d = pcap_dump_open(p.get(), path.c_str());
  if (!d) throw std::runtime_error("cannot write " + path + ": " + pcap_geterr(p.get()));
  uint32_t usec = 0;
  for (const auto& f : frames) {
    pcap_pkthdr hdr{};
    hdr.ts.tv_usec = usec++;
    hdr.caplen = hdr.len = static_cast<uint32_t>(f.size());
    pcap_dump(reinterpret_cast<u_char*>(d), &hdr, f.data());
  }
  pcap_dump_close(d);
}

}  // namespace uroce::test
