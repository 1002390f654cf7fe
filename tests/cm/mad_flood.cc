// mad_flood GID COUNT: sends COUNT malformed CM MADs from a UD QP to QP1 of the device whose GID is GID
// (text, as `uroce stats --json` prints it), with the GSI Q_Key, in bursts that wait for their send
// completions. Run under `uroce run`. The kinds cycle (one per rule of transport/cm/mad.h's MadError, plus
// short and random datagrams); prints "sent N malformed M" (M: the 256-byte ones that must count as
// malformed) and exits 0 when every send completed.
#include <arpa/inet.h>
#include <infiniband/verbs.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace {

constexpr uint32_t kGsiQkey = 0x80010000;
constexpr int kMadLen = 256, kBurst = 16, kKinds = 9;

// A MAD of kind k (< kKinds) in `m` (kMadLen bytes); returns its length.
int make_mad(int k, std::mt19937& rng, uint8_t* m) {
  std::memset(m, 0, kMadLen);
  m[0] = 1;     // base version
  m[1] = 0x07;  // CM class
  m[2] = 2;     // class version
  m[3] = 0x03;  // Send
  m[16] = 0x00;
  m[17] = 0x10;  // REQ
  switch (k) {
    case 0:
      m[0] = 2;
      break;  // bad base version
    case 1:
      m[1] = 0x04;
      break;  // not the CM class
    case 2:
      m[2] = 1;
      break;  // bad class version
    case 3:
      m[3] = 0x01;
      break;  // not Send
    case 4:
      m[17] = 0x99;
      break;  // unknown attribute
    case 5:
      m[17] = 0x19;
      break;  // LAP: unsupported
    case 6:
      m[17] = 0x12;
      m[24 + 9] = 0xFE;  // REJ whose ARI length (7 bits) exceeds its 72 bytes
      break;
    case 7:  // random bytes, then a header that decodes as nothing valid
      for (int i = 0; i < kMadLen; ++i) m[i] = static_cast<uint8_t>(rng());
      m[0] = 0;
      break;
    default:
      return 60;  // a short datagram: not a MAD at all
  }
  return kMadLen;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: mad_flood GID COUNT\n");
    return 2;
  }
  ibv_gid dgid{};
  if (inet_pton(AF_INET6, argv[1], dgid.raw) != 1) {
    std::fprintf(stderr, "mad_flood: bad GID %s\n", argv[1]);
    return 2;
  }
  const long count = std::strtol(argv[2], nullptr, 10);
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (!list || n == 0) {
    std::fprintf(stderr, "mad_flood: no RDMA device\n");
    return 1;
  }
  ibv_context* ctx = ibv_open_device(list[0]);
  ibv_pd* pd = ctx ? ibv_alloc_pd(ctx) : nullptr;
  ibv_cq* cq = pd ? ibv_create_cq(ctx, 2 * kBurst, nullptr, nullptr, 0) : nullptr;
  if (!cq) {
    std::fprintf(stderr, "mad_flood: cannot open %s\n", ibv_get_device_name(list[0]));
    return 1;
  }
  ibv_qp_init_attr ia{};
  ia.send_cq = ia.recv_cq = cq;
  ia.qp_type = IBV_QPT_UD;
  ia.cap.max_send_wr = kBurst;
  ia.cap.max_recv_wr = 1;
  ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
  ibv_qp* qp = ibv_create_qp(pd, &ia);
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qkey = kGsiQkey;  // QP1's Q_Key: a datagram with another would be dropped before the CM
  int rc = qp ? ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY) : -1;
  a.qp_state = IBV_QPS_RTR;
  if (!rc) rc = ibv_modify_qp(qp, &a, IBV_QP_STATE);
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 0;
  if (!rc) rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
  ibv_ah_attr ah_attr{};
  ah_attr.is_global = 1;
  ah_attr.grh.dgid = dgid;
  ah_attr.grh.hop_limit = 64;
  ah_attr.port_num = 1;
  ibv_ah* ah = rc ? nullptr : ibv_create_ah(pd, &ah_attr);
  std::vector<uint8_t> buf(size_t{kBurst} * kMadLen);
  ibv_mr* mr = ah ? ibv_reg_mr(pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE) : nullptr;
  if (!mr) {
    std::fprintf(stderr, "mad_flood: cannot set up the UD QP\n");
    return 1;
  }
  std::mt19937 rng(7);
  long sent = 0, malformed = 0;
  while (sent < count) {
    const int burst = static_cast<int>(std::min<long>(kBurst, count - sent));
    ibv_sge sge[kBurst];
    ibv_send_wr wr[kBurst]{};
    for (int i = 0; i < burst; ++i) {
      uint8_t* m = buf.data() + size_t(i) * kMadLen;
      const int len = make_mad(static_cast<int>((sent + i) % kKinds), rng, m);
      if (len == kMadLen) ++malformed;
      sge[i] = {reinterpret_cast<uintptr_t>(m), static_cast<uint32_t>(len), mr->lkey};
      wr[i].wr_id = static_cast<uint64_t>(i);
      wr[i].sg_list = &sge[i];
      wr[i].num_sge = 1;
      wr[i].opcode = IBV_WR_SEND;
      wr[i].send_flags = IBV_SEND_SIGNALED;
      wr[i].wr.ud.ah = ah;
      wr[i].wr.ud.remote_qpn = 1;
      wr[i].wr.ud.remote_qkey = kGsiQkey;
      wr[i].next = i + 1 < burst ? &wr[i + 1] : nullptr;
    }
    ibv_send_wr* bad = nullptr;
    if (ibv_post_send(qp, wr, &bad)) {
      std::fprintf(stderr, "mad_flood: post_send failed after %ld\n", sent);
      return 1;
    }
    for (int done = 0; done < burst;) {
      ibv_wc wc[kBurst];
      const int got = ibv_poll_cq(cq, kBurst, wc);
      if (got < 0) return 1;
      for (int i = 0; i < got; ++i)
        if (wc[i].status != IBV_WC_SUCCESS) {
          std::fprintf(stderr, "mad_flood: send completion %s\n", ibv_wc_status_str(wc[i].status));
          return 1;
        }
      done += got;
    }
    sent += burst;
  }
  std::printf("sent %ld malformed %ld\n", sent, malformed);
  ibv_dereg_mr(mr);
  ibv_destroy_ah(ah);
  ibv_destroy_qp(qp);
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  ibv_free_device_list(list);
  return 0;
}
