// The memif 2.0 protocol as DPDK 22.11's memif PMD and libmemif speak it: the control messages on the Unix
// socket and the layout of a ring in shared memory. Layouts only; memif_client.h speaks it.
//
// Control: a SOCK_SEQPACKET socket. Every message is 128 bytes, a 16-bit type and then the body (packed,
// host byte order); a file descriptor travels beside ADD_REGION (the region's memory file) and ADD_RING (the
// ring's interrupt eventfd) as SCM_RIGHTS. The server (DPDK: "master") sends HELLO; the client answers with
// INIT, ADD_REGION per region, ADD_RING per ring and CONNECT, one at a time, each acknowledged with ACK;
// the server ends with CONNECTED. DISCONNECT (a code and a reason) ends the link from either side.
//
// Memory: the client creates every region and the rings in them; the server maps what it is sent. A ring
// is a header of two cache lines (cookie, flags and head in the first, tail in the second) and then 2^n
// descriptors of 16 bytes. head and tail are free-running 16-bit counters.
//   C2S (client to server; DPDK 22.11 calls it that, older code S2M): the client fills buffers, writes
//       their descriptors and advances head; the server copies them out and advances tail.
//   S2C (server to client): the client writes descriptors of empty buffers (length = the buffer's size) and
//       advances head; the server fills them, sets each length and advances tail.
// Interrupts: a producer writes the ring's eventfd after publishing unless the ring's flags hold MASK_INT.
#pragma once

#include <cstddef>
#include <cstdint>

namespace uroce::glue::memif {

constexpr uint32_t kCookie = 0x3E31F20;
constexpr uint16_t kVersion = 0x0200;  // 2.0: major in the high byte
constexpr size_t kNameSize = 32;

enum MsgType : uint16_t {
  kMsgNone = 0,
  kMsgAck = 1,
  kMsgHello = 2,
  kMsgInit = 3,
  kMsgAddRegion = 4,
  kMsgAddRing = 5,
  kMsgConnect = 6,
  kMsgConnected = 7,
  kMsgDisconnect = 8,
};

constexpr uint8_t kModeEthernet = 0;
constexpr uint16_t kAddRingC2S = 1;   // AddRing::flags: the ring carries frames from client to server
constexpr uint16_t kRingMaskInt = 1;  // Ring::flags: the consumer polls; do not write the eventfd
constexpr uint16_t kDescNext = 1;     // Desc::flags: the frame goes on in the next descriptor

#pragma pack(push, 1)
struct Hello {
  uint8_t name[kNameSize];
  uint16_t min_version, max_version;
  uint16_t max_region;    // the highest region index the server takes
  uint16_t max_s2c_ring;  // the highest ring index, per direction
  uint16_t max_c2s_ring;
  uint8_t max_log2_ring_size;
};
struct Init {
  uint16_t version;
  uint32_t id;  // which of the server's interfaces on this socket
  uint8_t mode;
  uint8_t secret[24];
  uint8_t name[kNameSize];
};
struct AddRegion {
  uint16_t index;
  uint64_t size;
};
struct AddRing {
  uint16_t flags;
  uint16_t index;
  uint16_t region;
  uint32_t offset;  // of the ring header in the region
  uint8_t log2_ring_size;
  uint16_t private_hdr_size;
};
struct Connect {
  uint8_t if_name[kNameSize];
};
struct Disconnect {
  uint32_t code;
  uint8_t reason[96];
};
struct Msg {
  uint16_t type;
  union {
    Hello hello;
    Init init;
    AddRegion add_region;
    AddRing add_ring;
    Connect connect;  // CONNECT and CONNECTED
    Disconnect disconnect;
    uint8_t raw[126];
  };
};
struct Desc {
  uint16_t flags;
  uint16_t region;
  uint32_t length;
  uint32_t offset;  // of the buffer in the region
  uint32_t metadata;
};
#pragma pack(pop)

// DPDK lays the ring out in cache lines of RTE_CACHE_LINE_SIZE: 64 bytes on x86-64, 128 on some arm64
// builds, where tail and the descriptors would sit elsewhere.
#if !defined(__x86_64__)
#error "memif_wire.h: the ring layout is DPDK's with 64-byte cache lines (x86-64)"
#endif
struct Ring {
  uint32_t cookie;
  uint16_t flags;
  uint16_t head;
  uint8_t pad0[56];
  uint16_t tail;
  uint8_t pad1[62];
  Desc desc[];
};

static_assert(sizeof(Msg) == 128, "every control message is 128 bytes");
static_assert(offsetof(Msg, hello) == 2);
static_assert(sizeof(Hello) == 43 && sizeof(Init) == 63 && sizeof(AddRegion) == 10 && sizeof(AddRing) == 13);
static_assert(sizeof(Disconnect) == 100 && sizeof(Desc) == 16);
static_assert(offsetof(Ring, head) == 6 && offsetof(Ring, tail) == 64 && offsetof(Ring, desc) == 128);

// Bytes a ring of 2^log2 descriptors takes in its region.
constexpr size_t ring_bytes(unsigned log2) { return sizeof(Ring) + sizeof(Desc) * (size_t{1} << log2); }

}  // namespace uroce::glue::memif
