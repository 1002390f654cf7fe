#include "pmd_glue/dpdk_spec.h"

#include <net/if.h>
#include <sys/un.h>

#include <algorithm>
#include <charconv>
#include <set>
#include <string_view>
#include <vector>

namespace uroce::glue {

namespace {

// af_packet ring geometry. Its rx queue setup demands framesz - 32 <= mbuf data room (32 = TPACKET2_HDRLEN
// minus the sockaddr_ll it includes). The PMD addresses slot i at i * framesz, as if slots were contiguous,
// while the kernel starts every block on a block boundary: blocksz must be a multiple of framesz (and of
// the page size), or every frame after the first block's lands where the other side does not look.
constexpr unsigned kAfPacketSlotOverhead = 32;
constexpr unsigned kPage = 4096;
// The kernel writes a received frame 66 bytes into its slot (TPACKET_V2 header + sockaddr_ll, aligned);
// 18 more covers the Ethernet header and a VLAN tag left in the frame. An interface whose MTU fits a
// 2048-byte slot gets 2048-byte slots (one page holds two), else slots sized for uroce's largest frame.
constexpr unsigned kAfPacketFrameOffset = 66 + 18;
constexpr unsigned kAfPacketSmallSlot = 2048;
// The rx ring (the tx ring is the same size) is what absorbs a burst while the engine is not polling:
// DPDK 22.11's af_packet has no rx interrupt, so an idle engine looks at it every few milliseconds only.
// The PMD's default of 512 slots lost 26-35% of a 20000-frame burst to an idle engine over veth;
// 8 MiB (4096 slots of 2048 bytes at MTU 1500) lost none (tests/trust/rx_missed.sh, docs/observability.md).
constexpr unsigned kAfPacketRingBytes = 8u << 20;
constexpr unsigned kAfPacketMinSlots = 512;

unsigned gcd(unsigned a, unsigned b) { return b == 0 ? a : gcd(b, a % b); }

bool fail(std::string* err, const std::string& msg) {
  if (err) *err = msg;
  return false;
}

template <typename T>
bool parse_uint(std::string_view v, T min, T max, T* out) {
  uint64_t x = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || p != v.data() + v.size() || x < static_cast<uint64_t>(min) ||
      x > static_cast<uint64_t>(max))
    return false;
  *out = static_cast<T>(x);
  return true;
}

bool valid_name(std::string_view s, size_t max_len) {
  if (s.empty() || s.size() > max_len) return false;
  for (char c : s)
    if (!(isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
  return true;
}

std::string list(const std::vector<std::string_view>& keys) {
  std::string s;
  for (std::string_view k : keys) s += (s.empty() ? "" : ", ") + std::string(k);
  return s;
}

}  // namespace

const char* kind_name(PortKind kind) {
  switch (kind) {
    case PortKind::kMemif:
      return "memif";
    case PortKind::kAfPacket:
      return "af_packet";
    case PortKind::kTap:
      return "tap";
    case PortKind::kRing:
      return "ring";
    case PortKind::kAfXdp:
      return "af_xdp";
  }
  return "?";
}

const char* vdev_driver(PortKind kind) {
  switch (kind) {
    case PortKind::kMemif:
      return "net_memif";
    case PortKind::kAfPacket:
      return "net_af_packet";
    case PortKind::kTap:
      return "net_tap";
    case PortKind::kRing:
      return "";
    case PortKind::kAfXdp:
      return "net_af_xdp";
  }
  return "";
}

int PortSpec::effective_wait_ms() const {
  if (wait_ms >= 0) return wait_ms;
  if (kind == PortKind::kMemif) return server ? 0 : 3000;
  return 1000;
}

bool parse_port_spec(const std::string& text, PortSpec* out, std::string* err) {
  PortSpec s;
  s.text = text;
  const size_t colon = text.find(':');
  if (colon == std::string::npos)
    return fail(err,
                "port spec '" + text + "': expected KIND:ARGS (memif:, af_packet:, af_xdp:, tap:, ring:)");
  const std::string_view kind(text.data(), colon);
  std::vector<std::string_view> keys;
  if (kind == "memif") {
    s.kind = PortKind::kMemif;
    keys = {"socket", "role", "id", "rsize", "wait", "mbufs", "driver"};
  } else if (kind == "af_packet") {
    s.kind = PortKind::kAfPacket;
    keys = {"iface", "rsize", "wait", "mbufs", "promisc"};
  } else if (kind == "af_xdp") {
    s.kind = PortKind::kAfXdp;
    keys = {"iface", "prog", "wait", "mbufs"};
  } else if (kind == "tap") {
    s.kind = PortKind::kTap;
    keys = {"iface", "wait", "mbufs"};
  } else if (kind == "ring") {
    s.kind = PortKind::kRing;
    keys = {"wait", "mbufs"};
  } else {
    return fail(err, "port spec '" + text + "': unknown kind '" + std::string(kind) +
                         "' (memif, af_packet, af_xdp, tap, ring)");
  }
  const std::string where = "port spec '" + text + "': ";

  std::set<std::string, std::less<>> seen;
  bool have_role = false;
  std::string_view rest(text.data() + colon + 1, text.size() - colon - 1);
  bool first = true;
  while (!rest.empty() || first) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const bool was_first = first;
    first = false;
    if (item.empty() && was_first && rest.empty())
      break;  // "memif:" alone: the checks below say what is missing
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      if (s.kind == PortKind::kRing && was_first) {
        if (!valid_name(item, 64)) return fail(err, where + "ring name must be 1-64 of [A-Za-z0-9_.-]");
        s.ring = item;
        continue;
      }
      return fail(err, where + "expected key=value, got '" + std::string(item) + "'");
    }
    const std::string key(item.substr(0, eq));
    const std::string_view val = item.substr(eq + 1);
    bool known = false;
    for (std::string_view k : keys) known = known || key == k;
    if (!known)
      return fail(
          err, where + "unknown key '" + key + "' for " + kind_name(s.kind) + " (valid: " + list(keys) + ")");
    if (!seen.insert(key).second) return fail(err, where + "key '" + key + "' given twice");
    if (val.empty()) return fail(err, where + "key '" + key + "' has no value");

    if (key == "socket") {
      const size_t max = sizeof(sockaddr_un::sun_path) - 1;
      if (val.size() > max) return fail(err, where + "key 'socket': path longer than " + std::to_string(max));
      // An abstract-namespace socket has no file permissions: any user on the host may connect to it and
      // read and write the shared memory of the link. Only filesystem sockets are accepted.
      if (val[0] == '@')
        return fail(err, where + "key 'socket': '" + std::string(val) +
                             "' names an abstract socket, which any local user can connect to; give a "
                             "filesystem path in a private directory instead");
      s.socket = val;
    } else if (key == "role") {
      if (val != "server" && val != "client") return fail(err, where + "key 'role' must be server or client");
      s.server = val == "server";
      have_role = true;
    } else if (key == "id") {
      if (!parse_uint<uint32_t>(val, 0, UINT32_MAX, &s.id))
        return fail(err, where + "key 'id': not a uint32");
    } else if (key == "rsize") {
      if (!parse_uint<uint8_t>(val, 1, 14, &s.log2_ring))
        return fail(err, where + "key 'rsize': log2 ring size 1..14");
      s.ring_size_given = true;
    } else if (key == "iface") {
      if (!valid_name(val, IFNAMSIZ - 1))
        return fail(err, where + "key 'iface': interface names are 1-15 of [A-Za-z0-9_.-]");
      s.iface = val;
    } else if (key == "prog") {
      // DPDK's devargs are split at ',' and '='; the PMD needs the file to exist when it is probed.
      if (val[0] != '/' || val.find_first_of(",=") != std::string_view::npos)
        return fail(err, where + "key 'prog': an absolute path without ',' or '='");
      s.xdp_prog = val;
    } else if (key == "promisc") {
      if (val != "0" && val != "1") return fail(err, where + "key 'promisc' must be 0 or 1");
      s.promisc = val == "1";
    } else if (key == "wait") {
      if (!parse_uint<int>(val, 0, 600000, &s.wait_ms))
        return fail(err, where + "key 'wait': milliseconds 0..600000");
    } else if (key == "driver") {
      if (val != "dpdk" && val != "uroce") return fail(err, where + "key 'driver' must be dpdk or uroce");
      s.own_driver = val == "uroce";
      s.driver_given = true;
    } else if (key == "mbufs") {
      if (!parse_uint<uint32_t>(val, 256, 1u << 20, &s.mbufs))
        return fail(err, where + "key 'mbufs': 256..1048576");
    }
  }

  if (s.kind == PortKind::kMemif && s.socket.empty()) return fail(err, where + "memif needs key 'socket'");
  if (s.kind == PortKind::kMemif && !have_role) return fail(err, where + "memif needs key 'role'");
  if (s.kind == PortKind::kMemif && s.own_driver && s.server)
    return fail(err, where + "key 'driver': uroce's own memif driver is a client only (role=client)");
  if ((s.kind == PortKind::kAfPacket || s.kind == PortKind::kTap || s.kind == PortKind::kAfXdp) &&
      s.iface.empty())
    return fail(err, where + std::string(kind_name(s.kind)) + " needs key 'iface'");
  if (s.kind == PortKind::kRing && s.ring.empty()) return fail(err, where + "ring needs a name (ring:NAME)");
  *out = std::move(s);
  return true;
}

std::string vdev_args(const PortSpec& s, uint16_t frame_room, int iface_mtu) {
  switch (s.kind) {
    case PortKind::kMemif: {
      // memif splits a frame over several bsize-byte descriptors (its default is 2048) and copies it into
      // one mbuf on rx; bsize = the frame room keeps every frame in one descriptor.
      // socket-abstract defaults to yes in DPDK 22.11: without "no" the path would only be a name in the
      // abstract namespace, reachable by every local user whatever the directory's permissions.
      return "role=" + std::string(s.server ? "server" : "client") + ",id=" + std::to_string(s.id) +
             ",socket=" + s.socket + ",socket-abstract=no,bsize=" + std::to_string(frame_room) +
             ",rsize=" + std::to_string(s.log2_ring);
    }
    case PortKind::kAfPacket: {
      const bool small =
          iface_mtu > 0 && kAfPacketFrameOffset + static_cast<unsigned>(iface_mtu) <= kAfPacketSmallSlot;
      const unsigned slot = small ? kAfPacketSmallSlot : frame_room + kAfPacketSlotOverhead;
      const unsigned block = slot / gcd(slot, kPage) * kPage;  // lcm(slot, page)
      const unsigned per_block = block / slot;
      const unsigned want =
          s.ring_size_given ? 1u << s.log2_ring : std::max(kAfPacketMinSlots, kAfPacketRingBytes / slot);
      const unsigned slots = (want + per_block - 1) / per_block * per_block;
      return "iface=" + s.iface + ",qpairs=1,framesz=" + std::to_string(slot) +
             ",blocksz=" + std::to_string(block) + ",framecnt=" + std::to_string(slots);
    }
    case PortKind::kTap:
      return "iface=" + s.iface;
    case PortKind::kAfXdp:
      return "iface=" + s.iface + ",start_queue=0,queue_count=1" +
             (s.xdp_prog.empty() ? "" : ",xdp_prog=" + s.xdp_prog);
    case PortKind::kRing:
      return "";
  }
  return "";
}

}  // namespace uroce::glue
