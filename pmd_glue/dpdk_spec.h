// Port specs: the one-line text that names a DPDK port, parsed and checked before anything touches DPDK.
//
//   memif:socket=PATH,role=server|client[,id=N][,rsize=LOG2][,driver=dpdk|uroce]
//                                          shared-memory link to another process (PATH on the filesystem,
//                                          see "memif and other users" below). driver=uroce (client only):
//                                          uroce's own memif client (memif_client.h) instead of DPDK's PMD,
//                                          which builds and reads frames in the shared region (the transport
//                                          then parses frames the server could still rewrite: the server is
//                                          the same user, see docs/design/memif-datapath.md)
//   af_packet:iface=NAME[,rsize=LOG2][,promisc=0|1]
//                                          a kernel interface through a PACKET_MMAP socket; its rx ring
//                                          holds 8 MiB of slots (4096 at MTU <= 1964), or 2^LOG2 slots.
//                                          promisc=1 (default) sets the interface promiscuous, which the
//                                          derived-MAC scheme needs; promisc=0 leaves it alone (a device
//                                          bound with UROCE_NETDEV uses the interface's own MAC)
//   af_xdp:iface=NAME[,prog=PATH]          a kernel interface through an AF_XDP socket (queue 0). With prog=,
//                                          DPDK loads that XDP object (uroce_xdp.o: UDP 4791 to the socket,
//                                          everything else to the kernel); without it, libbpf's default
//                                          program takes every frame of the queue away from the kernel
//   tap:iface=NAME                         a new kernel tap interface NAME, owned by the port
//   ring:NAME                              in-process test link: the first two ports opened with the same
//                                          NAME are joined back to back (rte_ring, no copy)
// Every kind also takes:
//   wait=MS     how long open() waits for the link (default: 0 for a memif server, whose peer may come
//               later; 3000 for a memif client, which retries connecting that long; 1000 otherwise)
//   mbufs=N     buffers in the port's pool (default 4095)
// An unknown key, a repeated key or a bad value is an error that names the key.
//
// memif and other users. Whoever connects to a memif socket reads and writes the link's shared memory, and
// the memif PMD checks no credentials. The only guard is the socket file's directory: the PMD is always
// given socket-abstract=no (DPDK 22.11 defaults to yes, which would turn PATH into an abstract-namespace
// name that any uid can connect to), a socket "@name" is refused, and the sockets uroce makes itself live
// in the per-user 0700 runtime directory (runtime/runtime_dir.h): uroced's ports in uroced-ports/. A PATH
// given by hand should be in a directory only its user can enter, such as that one or $XDG_RUNTIME_DIR.
// The link's bell files (PATH.bell<ID>*, memif_bell.h) sit in the same directory, made 0600 by the server;
// whoever could reach them could only wake a progress thread early.
#pragma once

#include <cstdint>
#include <string>

namespace uroce::glue {

enum class PortKind : uint8_t { kMemif, kAfPacket, kTap, kRing, kAfXdp };

const char* kind_name(PortKind kind);

struct PortSpec {
  PortKind kind = PortKind::kRing;
  std::string text;  // as given

  // memif
  std::string socket;  // filesystem path (never abstract)
  bool server = false;
  uint32_t id = 0;
  uint8_t log2_ring = 10;     // memif; af_packet when ring_size_given
  bool own_driver = false;    // memif client: driver=uroce
  bool driver_given = false;  // the spec named a driver (else UROCE_MEMIF_DRIVER picks: open_port.h)
  bool ring_size_given = false;
  // af_packet, tap
  std::string iface;
  bool promisc = true;   // af_packet: set the interface promiscuous
  std::string xdp_prog;  // af_xdp: the XDP object DPDK loads (absolute path; empty: libbpf's default)
  // ring
  std::string ring;
  // all
  int wait_ms = -1;  // -1: the kind's default (see above)
  uint32_t mbufs = 4095;

  int effective_wait_ms() const;
};

bool parse_port_spec(const std::string& text, PortSpec* out, std::string* err);

// The devargs string rte_vdev_init gets for this spec (memif, af_packet, af_xdp, tap; empty for ring).
// `frame_room` is the data room of one mbuf: the PMDs' own buffers are sized to match it. `iface_mtu` is the
// af_packet interface's MTU (-1: unknown), which sizes its ring slots.
std::string vdev_args(const PortSpec& spec, uint16_t frame_room, int iface_mtu = -1);

// The DPDK driver name a vdev of this kind is probed with ("net_memif", ...; empty for ring).
const char* vdev_driver(PortKind kind);

}  // namespace uroce::glue
