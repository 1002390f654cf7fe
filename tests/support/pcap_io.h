// Reading and writing pcap files in tests, through libpcap.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace uroce::test {

struct PcapFrame {
  std::vector<uint8_t> bytes;
};

struct PcapFile {
  int linktype = 0;  // DLT_* of the file
  std::vector<PcapFrame> frames;
};

// Reads every frame of a pcap or pcapng file; throws std::runtime_error naming the file on failure.
PcapFile read_pcap(const std::string& path);

// Writes Ethernet frames (DLT_EN10MB) to a new pcap file; throws std::runtime_error on failure.
void write_pcap(const std::string& path, const std::vector<std::vector<uint8_t>>& frames);

}  // namespace uroce::test
