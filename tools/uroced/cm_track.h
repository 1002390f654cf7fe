// The IB CM connections between the host's processes, as the host switch sees them go by, so that a process
// that dies without a word (SIGKILL, a crash) still ends its connections on the wire.
//
// A kernel RDMA stack ends every connection of a process when its rdma_cm file closes, however the process
// died: Linux cm_destroy_id sends DREQ for an established connection and REJ for one being set up. Under
// uroce the CM runs inside each process (provider/cm_service.cc) and does the same at exit, but nobody runs
// exit handlers after SIGKILL. uroced forwards every frame of the host and holds a lease per process whose
// end it learns from a pidfd, so it keeps this table of the CM exchanges it forwarded (REQ, REP, RTU, DREQ;
// REJ and DREP end an entry) and, when a lease ends, sends for the dead process what its kernel would
// have sent, with the transport/cm codec:
//   - established (RTU seen): DREQ, so the peer's rdma_cm reports DISCONNECTED;
//   - a DREQ received and not answered: the DREP (cm_destroy_id in DREQ_RCVD), so the peer's
//     rdma_disconnect completes at once instead of after its DREQ's retries (a server that crashes right
//     after its client disconnects: Debian's qperf 0.4.11);
//   - a DREQ sent and not answered: nothing (the peer answers a dead address);
//   - REQ seen, no REP, the passive side died: REJ 28 (consumer defined) for the REQ, local comm ID 0, as
//     cm_destroy_id in REQ_RCVD: the client reports REJECTED 28 at once instead of retrying its REQ;
//   - REQ seen, no REP, the active side died: REJ 4 (timeout) with its CA GUID in the ARI (cm_destroy_id in
//     REQ_SENT), which the passive CM matches by the active side's comm ID and GUID;
//   - REP seen, no RTU: REJ 28 naming both comm IDs (REP_SENT / REP_RCVD).
// The peer's answer (a DREP to the dead address) finds no port and is dropped.
//
// Only RC/UC connections are kept (SIDR has no connection). The table is bounded: entries still being set
// up are forgotten after kSetupForgetNs (the REQ's own retries give up sooner), and past kMaxConns the
// oldest entry goes. A MAD that does not decode is counted and otherwise ignored: the switch forwards it
// as any frame and the receiving CM counts it too.
//
// Threads: uroced's main loop only. Pure C++ (no DPDK), unit-tested with hand-built frames.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "transport/cm/mad.h"

namespace uroce::uroced {

// Whether an Ethernet frame is a RoCEv2 datagram to QP1 (IPv4 or IPv6, optionally VLAN-tagged), looking
// only at fixed header fields: the cheap test the switch makes on every frame before it hands one to the
// tracker, which parses and checks it in full.
bool is_gsi_frame(const uint8_t* frame, size_t len);

class CmTracker {
 public:
  static constexpr uint64_t kSetupForgetNs = 120'000'000'000;
  static constexpr size_t kMaxConns = 8192;

  explicit CmTracker(uint32_t hi_tid) : hi_tid_(hi_tid) {}

  // A GSI frame the switch forwarded (is_gsi_frame() was true). Parses, checks the ICRC, decodes the MAD.
  void observe(const uint8_t* frame, size_t len, uint64_t now_ns);

  // The frames to send for a process whose address `gid` is gone: one per connection it had (see above),
  // each a whole Ethernet frame with its ICRC, addressed to the peer's MAC as seen in the exchange. Every
  // connection with an end at `gid` leaves the table.
  std::vector<std::vector<uint8_t>> end_all(const cm::Gid& gid);

  size_t size() const { return conns_.size(); }

  struct Stats {
    uint64_t mads = 0;       // GSI datagrams observed
    uint64_t malformed = 0;  // of those, not a valid frame, GSI datagram or CM MAD
    uint64_t dreq_sent = 0;  // sent for dead processes
    uint64_t rej_sent = 0;
    uint64_t drep_sent = 0;
  };
  const Stats& stats() const { return stats_; }

 private:
  // kDreq: one end sent a DREQ and its peer has not answered with a DREP yet.
  enum class State : uint8_t { kReq, kRep, kEstablished, kDreq };
  struct Conn {
    State state = State::kReq;
    cm::Gid a_gid{}, b_gid{};  // active (REQ sender) and passive side
    wire::MacAddr a_mac{}, b_mac{};
    uint32_t a_comm = 0, b_comm = 0;
    uint32_t a_qpn = 0, b_qpn = 0;
    uint64_t a_guid = 0;
    uint64_t req_tid = 0;
    bool dreq_from_active = false;  // kDreq: which end sent it
    uint64_t dreq_tid = 0;          // the DREP answers with the DREQ's transaction ID
    uint64_t seen_ns = 0;
  };
  using Key = std::pair<cm::Gid, uint32_t>;  // (active side's GID, its comm ID)

  // The entry a MAD from `src` to `dst` naming (local, remote) comm IDs belongs to, whichever side sent it.
  std::map<Key, Conn>::iterator find(const cm::Gid& src, const cm::Gid& dst, uint32_t local, uint32_t remote);
  void forget_old(uint64_t now_ns);
  std::vector<uint8_t> frame(const Conn& c, bool from_active, const cm::MadHeader& hdr,
                             const cm::CmBody& body);

  uint32_t hi_tid_;
  std::map<Key, Conn> conns_;
  Stats stats_;
};

}  // namespace uroce::uroced
