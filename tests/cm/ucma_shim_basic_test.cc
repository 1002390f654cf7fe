// The shim's ucma emulation through unmodified librdmacm 44: run under `uroce run` (UROCE_PORT=loopback)
// by tests/verbs/run_under_uroce.sh. Covers the event channel's fd semantics (fstat, O_NONBLOCK, poll,
// write's header checks), ids, binds and ports, address and route resolution to 127.0.0.1, QUERY_ROUTE's
// device and GIDs, INIT_QP_ATTR, MIGRATE_ID and the stand-in connection backend.
#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "provider/shim/ucma_backend.h"

namespace {

constexpr uint16_t kPort = 7174;

// The ucma write header and GET_EVENT's payload (rdma/rdma_user_cm.h, which cannot be included together
// with rdma/rdma_cma.h), for the raw-write checks.
struct CmdHdr {
  uint32_t cmd;
  uint16_t in;
  uint16_t out;
};
struct GetEvent {
  uint64_t response;
};
constexpr uint32_t kCmdGetEvent = 12;

sockaddr_in loopback(uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

sockaddr* sa(sockaddr_in& a) { return reinterpret_cast<sockaddr*>(&a); }

bool readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN) != 0;
}

// Waits (bounded) for the next event on ch and checks its type; returns it unacknowledged.
rdma_cm_event* expect_event(rdma_event_channel* ch, rdma_cm_event_type type) {
  EXPECT_TRUE(readable(ch->fd, 5000)) << "no event within 5 s";
  rdma_cm_event* ev = nullptr;
  EXPECT_EQ(rdma_get_cm_event(ch, &ev), 0) << std::strerror(errno);
  if (ev != nullptr) {
    EXPECT_EQ(ev->event, type) << rdma_event_str(ev->event);
  }
  return ev;
}

class UcmaShim : public ::testing::Test {
 protected:
  void SetUp() override {
    alarm(30);  // a hang in GET_EVENT or rdma_destroy_id fails the test instead of stalling it
    ch_ = rdma_create_event_channel();
    ASSERT_NE(ch_, nullptr) << "rdma_create_event_channel: " << std::strerror(errno);
  }
  void TearDown() override {
    if (ch_ != nullptr) rdma_destroy_event_channel(ch_);
    alarm(0);
  }
  rdma_event_channel* ch_ = nullptr;
};

TEST_F(UcmaShim, ChannelLooksLikeTheCharacterDevice) {
  struct stat st {};
  ASSERT_EQ(fstat(ch_->fd, &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_FALSE(readable(ch_->fd, 0));
}

TEST_F(UcmaShim, WriteChecksTheHeader) {
  char small[4] = {};
  errno = 0;
  EXPECT_EQ(write(ch_->fd, small, sizeof small), -1);
  EXPECT_EQ(errno, EINVAL);
  CmdHdr hdr{kCmdGetEvent, 64, 0};  // claims more payload than written
  EXPECT_EQ(write(ch_->fd, &hdr, sizeof hdr), -1);
  EXPECT_EQ(errno, EINVAL);
  struct {
    CmdHdr hdr;
    GetEvent cmd;
  } unknown{{99, sizeof(GetEvent), 0}, {}};
  EXPECT_EQ(write(ch_->fd, &unknown, sizeof unknown), -1);
  EXPECT_EQ(errno, EINVAL);
  char resp[336] = {};
  struct {
    CmdHdr hdr;
    GetEvent cmd;
  } short_out{{kCmdGetEvent, sizeof(GetEvent), 8}, {reinterpret_cast<uintptr_t>(resp)}};
  EXPECT_EQ(write(ch_->fd, &short_out, sizeof short_out), -1);
  EXPECT_EQ(errno, ENOSPC);
}

TEST_F(UcmaShim, NonBlockingGetEventIsEagain) {
  ASSERT_EQ(fcntl(ch_->fd, F_SETFL, fcntl(ch_->fd, F_GETFL) | O_NONBLOCK), 0);
  rdma_cm_event* ev = nullptr;
  errno = 0;
  EXPECT_EQ(rdma_get_cm_event(ch_, &ev), -1);
  EXPECT_EQ(errno, EAGAIN);
}

TEST_F(UcmaShim, BindListenAndPorts) {
  rdma_cm_id* listen_id = nullptr;
  ASSERT_EQ(rdma_create_id(ch_, &listen_id, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in addr = loopback(kPort);
  ASSERT_EQ(rdma_bind_addr(listen_id, sa(addr)), 0) << std::strerror(errno);
  EXPECT_NE(listen_id->verbs, nullptr) << "127.0.0.1 names the uroce device";
  EXPECT_EQ(rdma_get_src_port(listen_id), htons(kPort));
  ASSERT_EQ(rdma_listen(listen_id, 4), 0) << std::strerror(errno);

  rdma_cm_id* dup_id = nullptr;
  ASSERT_EQ(rdma_create_id(ch_, &dup_id, nullptr, RDMA_PS_TCP), 0);
  errno = 0;
  EXPECT_EQ(rdma_bind_addr(dup_id, sa(addr)), -1);
  EXPECT_EQ(errno, EADDRINUSE);
  // The same port in another port space is free.
  rdma_cm_id* udp_id = nullptr;
  ASSERT_EQ(rdma_create_id(ch_, &udp_id, nullptr, RDMA_PS_UDP), 0);
  EXPECT_EQ(rdma_bind_addr(udp_id, sa(addr)), 0) << std::strerror(errno);

  rdma_cm_id* eph_id = nullptr;
  ASSERT_EQ(rdma_create_id(ch_, &eph_id, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in any = loopback(0);
  any.sin_addr.s_addr = htonl(INADDR_ANY);
  ASSERT_EQ(rdma_bind_addr(eph_id, sa(any)), 0) << std::strerror(errno);
  EXPECT_NE(rdma_get_src_port(eph_id), 0) << "port 0 gets an ephemeral port";
  EXPECT_EQ(eph_id->verbs, nullptr) << "a wildcard bind names no device yet";

  for (rdma_cm_id* id : {eph_id, udp_id, dup_id, listen_id}) EXPECT_EQ(rdma_destroy_id(id), 0);
  // The port is free again once its id is gone.
  ASSERT_EQ(rdma_create_id(ch_, &listen_id, nullptr, RDMA_PS_TCP), 0);
  EXPECT_EQ(rdma_bind_addr(listen_id, sa(addr)), 0) << std::strerror(errno);
  EXPECT_EQ(rdma_destroy_id(listen_id), 0);
}

TEST_F(UcmaShim, ResolveAddrAndRouteToLoopback) {
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_id(ch_, &id, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in dst = loopback(kPort);
  ASSERT_EQ(rdma_resolve_addr(id, nullptr, sa(dst), 2000), 0) << std::strerror(errno);
  rdma_cm_event* ev = expect_event(ch_, RDMA_CM_EVENT_ADDR_RESOLVED);
  ASSERT_NE(ev, nullptr);
  EXPECT_EQ(ev->id, id);
  EXPECT_EQ(ev->status, 0);
  EXPECT_EQ(rdma_ack_cm_event(ev), 0);
  EXPECT_FALSE(readable(ch_->fd, 0)) << "an empty queue is not readable";

  ASSERT_NE(id->verbs, nullptr);
  EXPECT_STREQ(ibv_get_device_name(id->verbs->device), getenv("UROCE_DEV"));
  ibv_gid gid0{};
  ASSERT_EQ(ibv_query_gid(id->verbs, 1, 0, &gid0), 0);
  EXPECT_EQ(std::memcmp(id->route.addr.addr.ibaddr.sgid.raw, gid0.raw, 16), 0) << "loopback maps to the GID";
  EXPECT_EQ(std::memcmp(id->route.addr.addr.ibaddr.dgid.raw, gid0.raw, 16), 0);
  EXPECT_EQ(id->port_num, 1);
  const auto* src = reinterpret_cast<const sockaddr_in*>(rdma_get_local_addr(id));
  EXPECT_EQ(src->sin_addr.s_addr, htonl(INADDR_LOOPBACK));
  EXPECT_NE(rdma_get_src_port(id), 0);

  ASSERT_EQ(rdma_resolve_route(id, 2000), 0) << std::strerror(errno);
  ev = expect_event(ch_, RDMA_CM_EVENT_ROUTE_RESOLVED);
  ASSERT_NE(ev, nullptr);
  EXPECT_EQ(rdma_ack_cm_event(ev), 0);
  ASSERT_EQ(id->route.num_paths, 1);
  const ibv_sa_path_rec& p = id->route.path_rec[0];
  EXPECT_EQ(std::memcmp(p.sgid.raw, gid0.raw, 16), 0);
  EXPECT_EQ(std::memcmp(p.dgid.raw, gid0.raw, 16), 0);
  EXPECT_EQ(p.pkey, htons(0xffff));
  EXPECT_EQ(p.packet_life_time, 18);
  EXPECT_EQ(p.mtu_selector, 2);

  ibv_qp_attr attr{};
  int mask = 0;
  attr.qp_state = IBV_QPS_INIT;
  ASSERT_EQ(rdma_init_qp_attr(id, &attr, &mask), 0) << std::strerror(errno);
  EXPECT_EQ(mask, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  EXPECT_EQ(attr.qp_state, IBV_QPS_INIT);
  EXPECT_EQ(attr.port_num, 1);
  EXPECT_EQ(attr.pkey_index, 0);

  // Nothing listens on the port (this process is alone on its in-process port): CONNECT is accepted and the
  // provider's CM answers with REJECTED 8, as a kernel's CM rejects a REQ for a service nobody listens on.
  rdma_conn_param param{};
  param.qp_num = 0x123;
  param.responder_resources = 1;
  param.initiator_depth = 1;
  param.retry_count = 7;
  param.rnr_retry_count = 7;
  ASSERT_EQ(rdma_connect(id, &param), 0) << std::strerror(errno);
  ev = expect_event(ch_, RDMA_CM_EVENT_REJECTED);
  ASSERT_NE(ev, nullptr);
  EXPECT_EQ(ev->status, 8);
  EXPECT_EQ(rdma_ack_cm_event(ev), 0);
  EXPECT_EQ(rdma_destroy_id(id), 0);
}

// ::1 names the device as 127.0.0.1 does; a wildcard bind conflicts with any holder of the port
// (cma_check_port: EADDRNOTAVAIL), unless both allow reuse.
TEST_F(UcmaShim, Ipv6LoopbackAndWildcardConflicts) {
  rdma_cm_id* v6 = nullptr;
  ASSERT_EQ(rdma_create_id(ch_, &v6, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in6 a6{};
  a6.sin6_family = AF_INET6;
  a6.sin6_port = htons(kPort + 2);
  a6.sin6_addr = in6addr_loopback;
  ASSERT_EQ(rdma_bind_addr(v6, reinterpret_cast<sockaddr*>(&a6)), 0) << std::strerror(errno);
  EXPECT_NE(v6->verbs, nullptr);
  rdma_cm_id* any = nullptr;
  ASSERT_EQ(rdma_create_id(ch_, &any, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in wild = loopback(kPort + 2);
  wild.sin_addr.s_addr = htonl(INADDR_ANY);
  errno = 0;
  EXPECT_EQ(rdma_bind_addr(any, sa(wild)), -1);
  EXPECT_EQ(errno, EADDRNOTAVAIL);
  EXPECT_EQ(rdma_destroy_id(any), 0);
  EXPECT_EQ(rdma_destroy_id(v6), 0);
  // An address that is not the device's cannot be bound.
  rdma_cm_id* other = nullptr;
  ASSERT_EQ(rdma_create_id(ch_, &other, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in foreign = loopback(kPort + 2);
  foreign.sin_addr.s_addr = inet_addr("192.0.2.1");
  errno = 0;
  EXPECT_EQ(rdma_bind_addr(other, sa(foreign)), -1);
  EXPECT_EQ(errno, EADDRNOTAVAIL);
  EXPECT_EQ(rdma_destroy_id(other), 0);
}

// The wildcard destination is this host: the source becomes its loopback address (cma_resolve_loopback).
TEST_F(UcmaShim, WildcardDestinationResolvesToLoopback) {
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_id(ch_, &id, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in dst = loopback(kPort);
  dst.sin_addr.s_addr = htonl(INADDR_ANY);
  ASSERT_EQ(rdma_resolve_addr(id, nullptr, sa(dst), 2000), 0) << std::strerror(errno);
  rdma_cm_event* ev = expect_event(ch_, RDMA_CM_EVENT_ADDR_RESOLVED);
  ASSERT_NE(ev, nullptr);
  EXPECT_EQ(rdma_ack_cm_event(ev), 0);
  const auto* src = reinterpret_cast<const sockaddr_in*>(rdma_get_local_addr(id));
  EXPECT_EQ(src->sin_family, AF_INET);
  EXPECT_EQ(src->sin_addr.s_addr, htonl(INADDR_LOOPBACK));
  EXPECT_NE(src->sin_port, 0);
  EXPECT_NE(id->verbs, nullptr);
  EXPECT_EQ(rdma_destroy_id(id), 0);
}

TEST_F(UcmaShim, RemoteDestinationIsAddrError) {
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_id(ch_, &id, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in dst = loopback(kPort);
  dst.sin_addr.s_addr = inet_addr("192.0.2.1");  // TEST-NET-1: nothing is sent
  ASSERT_EQ(rdma_resolve_addr(id, nullptr, sa(dst), 2000), 0) << std::strerror(errno);
  rdma_cm_event* ev = expect_event(ch_, RDMA_CM_EVENT_ADDR_ERROR);
  ASSERT_NE(ev, nullptr);
  EXPECT_LT(ev->status, 0);
  EXPECT_EQ(rdma_ack_cm_event(ev), 0);
  EXPECT_EQ(rdma_destroy_id(id), 0);
}

// A group address resolves through the device (its source is the device's), and a UD id joins the group at
// once (no subnet manager on RoCE): the event carries the multicast QPN, the UDP port space's Q_Key and an
// address handle to the group's GID (IPv4 as ::ffff:a.b.c.d). Nothing is sent.
TEST_F(UcmaShim, MulticastJoinAndLeave) {
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_id(ch_, &id, nullptr, RDMA_PS_UDP), 0);
  sockaddr_in group = loopback(0);
  group.sin_addr.s_addr = inet_addr("224.1.2.3");
  ASSERT_EQ(rdma_resolve_addr(id, nullptr, sa(group), 2000), 0) << std::strerror(errno);
  rdma_cm_event* ev = expect_event(ch_, RDMA_CM_EVENT_ADDR_RESOLVED);
  ASSERT_NE(ev, nullptr);
  EXPECT_EQ(rdma_ack_cm_event(ev), 0);
  ASSERT_NE(id->verbs, nullptr);
  const uint8_t mgid[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 224, 1, 2, 3};
  EXPECT_EQ(std::memcmp(id->route.addr.addr.ibaddr.dgid.raw, mgid, 16), 0);

  // A unicast address is no group.
  sockaddr_in unicast = loopback(0);
  errno = 0;
  EXPECT_EQ(rdma_join_multicast(id, sa(unicast), nullptr), -1);
  EXPECT_EQ(errno, EINVAL);

  int context = 0;
  ASSERT_EQ(rdma_join_multicast(id, sa(group), &context), 0) << std::strerror(errno);
  ev = expect_event(ch_, RDMA_CM_EVENT_MULTICAST_JOIN);
  ASSERT_NE(ev, nullptr);
  EXPECT_EQ(ev->id, id);
  EXPECT_EQ(ev->status, 0);
  EXPECT_EQ(ev->param.ud.private_data, &context);
  EXPECT_EQ(ev->param.ud.qp_num, 0xFFFFFFu);
  EXPECT_EQ(ev->param.ud.qkey, 0x01234567u);
  EXPECT_EQ(ev->param.ud.ah_attr.is_global, 1);
  EXPECT_EQ(ev->param.ud.ah_attr.port_num, 1);
  EXPECT_EQ(std::memcmp(ev->param.ud.ah_attr.grh.dgid.raw, mgid, 16), 0);
  EXPECT_EQ(ev->param.ud.ah_attr.grh.hop_limit, 64);
  EXPECT_EQ(rdma_ack_cm_event(ev), 0);
  EXPECT_EQ(rdma_leave_multicast(id, sa(group)), 0) << std::strerror(errno);
  errno = 0;
  EXPECT_EQ(rdma_leave_multicast(id, sa(group)), -1) << "left already";
  EXPECT_EQ(errno, EADDRNOTAVAIL);

  // Left before its event was read: the event goes back, and the channel is no longer readable.
  ASSERT_EQ(rdma_join_multicast(id, sa(group), nullptr), 0) << std::strerror(errno);
  EXPECT_TRUE(readable(ch_->fd, 0));
  EXPECT_EQ(rdma_leave_multicast(id, sa(group)), 0) << std::strerror(errno);
  EXPECT_FALSE(readable(ch_->fd, 0));

  // Joined and never left: destroying the id takes the group with it; its unread event goes too.
  ASSERT_EQ(rdma_join_multicast(id, sa(group), nullptr), 0) << std::strerror(errno);
  EXPECT_EQ(rdma_destroy_id(id), 0);
  EXPECT_FALSE(readable(ch_->fd, 0));

  // Only a UD id joins.
  rdma_cm_id* rc = nullptr;
  ASSERT_EQ(rdma_create_id(ch_, &rc, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in local = loopback(0);
  ASSERT_EQ(rdma_bind_addr(rc, sa(local)), 0) << std::strerror(errno);
  errno = 0;
  EXPECT_EQ(rdma_join_multicast(rc, sa(group), nullptr), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(rdma_destroy_id(rc), 0);
}

TEST_F(UcmaShim, MigrateMovesTheIdAndItsEvents) {
  rdma_event_channel* other = rdma_create_event_channel();
  ASSERT_NE(other, nullptr);
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_id(ch_, &id, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in dst = loopback(kPort);
  ASSERT_EQ(rdma_resolve_addr(id, nullptr, sa(dst), 2000), 0);
  ASSERT_TRUE(readable(ch_->fd, 5000));  // ADDR_RESOLVED queued, not read yet
  ASSERT_EQ(rdma_migrate_id(id, other), 0) << std::strerror(errno);
  EXPECT_EQ(id->channel, other);
  EXPECT_FALSE(readable(ch_->fd, 0)) << "the event left the old channel";
  rdma_cm_event* ev = expect_event(other, RDMA_CM_EVENT_ADDR_RESOLVED);
  ASSERT_NE(ev, nullptr);
  EXPECT_EQ(ev->id, id);
  EXPECT_EQ(rdma_ack_cm_event(ev), 0);
  // The id counted one reported event; destroy waits for its ack and then returns.
  EXPECT_EQ(rdma_destroy_id(id), 0);
  rdma_destroy_event_channel(other);
}

// rping's shape: a CM thread blocks in rdma_get_cm_event while the main thread destroys the ids and the
// channel. Neither may wait for the blocked thread (which, as on the kernel's file, keeps waiting).
TEST_F(UcmaShim, DestroyWhileAnotherThreadWaitsForAnEvent) {
  rdma_event_channel* other = rdma_create_event_channel();
  ASSERT_NE(other, nullptr);
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_id(other, &id, nullptr, RDMA_PS_TCP), 0);
  static std::atomic<pid_t> tid{0};
  const int fd = other->fd;
  std::thread waiter([fd] {
    tid = gettid();
    rdma_event_channel ch{fd};  // its own copy: the application's struct is freed below
    rdma_cm_event* ev = nullptr;
    if (rdma_get_cm_event(&ch, &ev) == 0) rdma_ack_cm_event(ev);
  });
  // Wait (bounded) until the waiter sits in poll(2), syscall 7 on x86-64: blocked inside GET_EVENT.
  bool blocked = false;
  for (int i = 0; i < 500 && !blocked; ++i) {
    if (tid != 0) {
      char path[64], buf[32] = {};
      std::snprintf(path, sizeof path, "/proc/self/task/%d/syscall", static_cast<int>(tid.load()));
      if (FILE* f = std::fopen(path, "r")) {
        blocked = std::fgets(buf, sizeof buf, f) != nullptr && std::strncmp(buf, "7 ", 2) == 0;
        std::fclose(f);
      }
    }
    if (!blocked) usleep(10000);
  }
  ASSERT_TRUE(blocked) << "the waiter never blocked in GET_EVENT";
  EXPECT_EQ(rdma_destroy_id(id), 0);
  rdma_destroy_event_channel(other);  // returns although the waiter may be blocked in GET_EVENT
  waiter.detach();
}

// Reads the syscall number the thread `tid` of this process is in (-1: running or unreadable).
long syscall_of(pid_t tid) {
  char path[64], buf[32] = {};
  std::snprintf(path, sizeof path, "/proc/self/task/%d/syscall", static_cast<int>(tid));
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return -1;
  const bool got = std::fgets(buf, sizeof buf, f) != nullptr;
  std::fclose(f);
  return got && buf[0] >= '0' && buf[0] <= '9' ? std::strtol(buf, nullptr, 10) : -1;
}

// A thread that comes back for its next event a moment after another thread destroyed the channel (rping's
// cm thread) waits as one that was already blocked does, instead of failing with EBADF. Other commands on
// that fd, and GET_EVENT on a closed fd that never was a channel, still fail with EBADF.
TEST_F(UcmaShim, GetEventJustAfterTheChannelClosedWaits) {
  rdma_event_channel* other = rdma_create_event_channel();
  ASSERT_NE(other, nullptr);
  const int fd = other->fd;
  rdma_destroy_event_channel(other);
  ASSERT_EQ(fcntl(fd, F_GETFD), -1) << "the fd was reused; the test needs it closed";

  char resp[336] = {};
  struct {
    CmdHdr hdr;
    GetEvent cmd;
  } get{{kCmdGetEvent, sizeof(GetEvent), sizeof resp}, {reinterpret_cast<uintptr_t>(resp)}};
  auto other_cmd = get;
  other_cmd.hdr.cmd = 1;  // DESTROY_ID
  errno = 0;
  EXPECT_EQ(write(fd, &other_cmd, sizeof other_cmd), -1);
  EXPECT_EQ(errno, EBADF);

  int p[2];
  ASSERT_EQ(pipe(p), 0);
  ASSERT_EQ(close(p[0]), 0);
  ASSERT_EQ(close(p[1]), 0);
  if (p[0] != fd && p[1] != fd) {
    errno = 0;
    EXPECT_EQ(write(p[1], &get, sizeof get), -1);
    EXPECT_EQ(errno, EBADF);
  }

  static std::atomic<pid_t> tid{0};
  static std::atomic<bool> returned{false};
  std::thread late([fd, get] {
    tid = gettid();
    (void)!write(fd, &get, sizeof get);
    returned = true;
  });
  // Wait (bounded) until the thread sits in pause(2), syscall 34 on x86-64.
  bool waiting = false;
  for (int i = 0; i < 500 && !waiting && !returned; ++i) {
    waiting = tid != 0 && syscall_of(tid) == 34;
    if (!waiting) usleep(10000);
  }
  EXPECT_FALSE(returned) << "GET_EVENT on the just-closed channel returned";
  EXPECT_TRUE(waiting) << "the late GET_EVENT never waited";
  late.detach();

  // The fd number becomes a channel again: GET_EVENT on it is an ordinary one.
  rdma_event_channel* again = rdma_create_event_channel();
  ASSERT_NE(again, nullptr);
  if (again->fd == fd) {
    ASSERT_EQ(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
    rdma_cm_event* ev = nullptr;
    errno = 0;
    EXPECT_EQ(rdma_get_cm_event(again, &ev), -1);
    EXPECT_EQ(errno, EAGAIN);
  }
  rdma_destroy_event_channel(again);
}

TEST_F(UcmaShim, SetOption) {
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_id(ch_, &id, nullptr, RDMA_PS_TCP), 0);
  uint8_t tos = 32;
  EXPECT_EQ(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, sizeof tos), 0);
  int one = 1;
  EXPECT_EQ(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one, sizeof one), 0);
  EXPECT_EQ(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &one, sizeof one), 0);
  errno = 0;
  EXPECT_EQ(rdma_set_option(id, RDMA_OPTION_ID, 77, &one, sizeof one), -1);
  EXPECT_EQ(errno, ENOSYS);
  EXPECT_EQ(rdma_destroy_id(id), 0);
}

// A connection-manager backend registered through the shim's exported functions, the way the IB CM will
// be: it sees LISTEN/ACCEPT/destroy with the id's addresses, and reports a connection request whose
// INIT_QP_ATTR answers come from the connection data it set.
// struct rdma_ucm_conn_param of rdma/rdma_user_cm.h (ucma_abi_layout checks that one's offsets).
struct ConnParam {
  uint32_t qp_num;
  uint32_t qkey;
  uint8_t private_data[256];
  uint8_t private_data_len, srq, responder_resources, initiator_depth, flow_control, retry_count,
      rnr_retry_count, valid;
};
static_assert(sizeof(ConnParam) == 272);

struct FakeCm {
  int listens = 0;
  uroce_cm_id_info listener{};
  int backlog = 0;
  int accepts = 0;
  bool accept_had_param = false;
  uint32_t accept_qpn = 0;
  int destroys = 0;
  uint32_t last_destroyed = 0;
};
FakeCm g_fake;

template <typename Fn>
Fn* shim_fn(const char* name) {
  return reinterpret_cast<Fn*>(dlsym(RTLD_DEFAULT, name));
}

TEST_F(UcmaShim, BackendDrivesAConnectionRequest) {
  auto* set_backend = shim_fn<decltype(uroce_ucma_set_backend)>(UROCE_UCMA_SET_BACKEND_SYMBOL);
  auto* push = shim_fn<decltype(uroce_ucma_push_event)>("uroce_ucma_push_event");
  auto* create_conn = shim_fn<decltype(uroce_ucma_create_conn_id)>("uroce_ucma_create_conn_id");
  auto* set_conn = shim_fn<decltype(uroce_ucma_set_conn)>("uroce_ucma_set_conn");
  ASSERT_TRUE(set_backend && push && create_conn && set_conn) << "the shim is not preloaded";
  g_fake = {};
  uroce_cm_backend b{};
  b.listen = [](void*, const uroce_cm_id_info* id, int backlog) {
    ++g_fake.listens;
    g_fake.listener = *id;
    g_fake.backlog = backlog;
    return 0;
  };
  b.connect = [](void*, const uroce_cm_id_info*, const rdma_ucm_conn_param*, const rdma_ucm_ece*) {
    return -EIO;
  };
  b.accept = [](void*, const uroce_cm_id_info*, const rdma_ucm_conn_param* p, const rdma_ucm_ece*) {
    ++g_fake.accepts;
    g_fake.accept_had_param = p != nullptr;
    if (p != nullptr) g_fake.accept_qpn = reinterpret_cast<const ConnParam*>(p)->qp_num;
    return 0;
  };
  b.reject = [](void*, const uroce_cm_id_info*, uint8_t, const uint8_t*, uint8_t) { return 0; };
  b.disconnect = [](void*, const uroce_cm_id_info*) { return 0; };
  b.destroy = [](void*, uint32_t id) {
    ++g_fake.destroys;
    g_fake.last_destroyed = id;
  };
  ASSERT_EQ(set_backend(&b), 0);

  rdma_cm_id* listen_id = nullptr;
  ASSERT_EQ(rdma_create_id(ch_, &listen_id, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in addr = loopback(kPort + 1);
  ASSERT_EQ(rdma_bind_addr(listen_id, sa(addr)), 0);
  ASSERT_EQ(rdma_listen(listen_id, 4), 0);
  ASSERT_EQ(g_fake.listens, 1);
  EXPECT_EQ(g_fake.backlog, 4);
  EXPECT_NE(g_fake.listener.node_guid, 0u);
  EXPECT_EQ(reinterpret_cast<const sockaddr_in&>(g_fake.listener.src).sin_port, htons(kPort + 1));
  ibv_gid gid0{};
  ASSERT_EQ(ibv_query_gid(listen_id->verbs, 1, 0, &gid0), 0);

  // What the CM does on a REQ: a child id with the request's addresses, its connection data, the event.
  uroce_cm_id_info req = g_fake.listener;
  sockaddr_in peer = loopback(5555);
  std::memcpy(&req.dst, &peer, sizeof peer);
  std::memcpy(req.dgid, gid0.raw, 16);
  req.path.hop_limit = 64;
  uint32_t child = 0;
  ASSERT_EQ(create_conn(g_fake.listener.id, &req, &child), 0);
  const uroce_cm_conn conn{0x99, 0x111, 0x222, 3, 2, 3, 7, 7, 19, 0, 0, {}};
  ASSERT_EQ(set_conn(child, &conn), 0);
  ConnParam p{};
  p.qp_num = 0x99;
  std::memcpy(p.private_data, "hello", 6);
  p.private_data_len = 56;
  p.responder_resources = 3;
  p.initiator_depth = 2;
  ASSERT_EQ(push(child, RDMA_CM_EVENT_CONNECT_REQUEST, 0, &p, sizeof p, nullptr), 0);

  rdma_cm_event* ev = expect_event(ch_, RDMA_CM_EVENT_CONNECT_REQUEST);
  ASSERT_NE(ev, nullptr);
  EXPECT_EQ(ev->listen_id, listen_id);
  rdma_cm_id* conn_id = ev->id;
  ASSERT_NE(conn_id, listen_id);
  EXPECT_NE(conn_id->verbs, nullptr);
  EXPECT_EQ(ev->param.conn.private_data_len, 56);
  EXPECT_STREQ(static_cast<const char*>(ev->param.conn.private_data), "hello");
  EXPECT_EQ(ev->param.conn.qp_num, 0x99u);
  EXPECT_EQ(rdma_ack_cm_event(ev), 0);

  ibv_qp_attr attr{};
  int mask = 0;
  attr.qp_state = IBV_QPS_RTR;
  ASSERT_EQ(rdma_init_qp_attr(conn_id, &attr, &mask), 0) << std::strerror(errno);
  EXPECT_EQ(mask & (IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN),
            IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN);
  EXPECT_EQ(attr.dest_qp_num, 0x99u);
  EXPECT_EQ(attr.rq_psn, 0x111u);
  EXPECT_EQ(attr.path_mtu, IBV_MTU_1024);
  EXPECT_EQ(attr.max_dest_rd_atomic, 2);
  EXPECT_EQ(attr.ah_attr.is_global, 1);
  EXPECT_EQ(attr.ah_attr.grh.hop_limit, 64);
  EXPECT_EQ(std::memcmp(attr.ah_attr.grh.dgid.raw, gid0.raw, 16), 0);
  attr = {};
  attr.qp_state = IBV_QPS_RTS;
  ASSERT_EQ(rdma_init_qp_attr(conn_id, &attr, &mask), 0);
  EXPECT_EQ(attr.sq_psn, 0x222u);
  EXPECT_EQ(attr.timeout, 19);
  EXPECT_EQ(attr.max_rd_atomic, 3);

  rdma_conn_param accept{};
  accept.qp_num = 0x77;
  accept.responder_resources = 1;
  accept.initiator_depth = 1;
  ASSERT_EQ(rdma_accept(conn_id, &accept), 0) << std::strerror(errno);
  EXPECT_EQ(g_fake.accepts, 1);
  EXPECT_TRUE(g_fake.accept_had_param);
  EXPECT_EQ(g_fake.accept_qpn, 0x77u);
  // An accepted id's events reach the application (RTU -> ESTABLISHED).
  ASSERT_EQ(push(child, RDMA_CM_EVENT_ESTABLISHED, 0, nullptr, 0, nullptr), 0);
  ev = expect_event(ch_, RDMA_CM_EVENT_ESTABLISHED);
  ASSERT_NE(ev, nullptr);
  EXPECT_EQ(ev->id, conn_id);
  EXPECT_EQ(rdma_ack_cm_event(ev), 0);

  EXPECT_EQ(rdma_destroy_id(conn_id), 0);
  EXPECT_EQ(g_fake.destroys, 1);
  EXPECT_EQ(g_fake.last_destroyed, child);
  EXPECT_EQ(push(child, RDMA_CM_EVENT_DISCONNECTED, 0, nullptr, 0, nullptr), -ENOENT);
  EXPECT_EQ(rdma_destroy_id(listen_id), 0);
  EXPECT_EQ(g_fake.destroys, 2);
  EXPECT_EQ(g_fake.last_destroyed, g_fake.listener.id);
  EXPECT_EQ(set_backend(nullptr), 0);
}

}  // namespace
