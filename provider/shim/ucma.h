// The shim's emulation of the kernel's ucma (/dev/infiniband/rdma_cm, ABI 4) for unmodified librdmacm.
// docs/design/rdma-cm.md sections 2-4 and 7 hold the facts; rdma/rdma_user_cm.h is the ABI.
//
// Files: ucma_channel.cc (fd interposition, channels, event queues, GET_EVENT, MIGRATE_ID, dispatch),
// ucma_cmd.cc (the commands served locally), ucma_device.cc (device identity from the sysfs tree),
// ucma_backend.cc (the connection-manager hook of ucma_backend.h and its stand-in).
//
// Locking: one process-wide mutex (lock()) guards every channel, queue and id. CM commands are rare and
// short, so one lock costs nothing measurable and makes MIGRATE_ID (two channels) and CONNECT_REQUEST
// (listener + child) trivially consistent. Nobody blocks while holding it: GET_EVENT waits in poll() on the
// channel's eventfd after dropping it, and backend entry points are called without it.
//
// No libstdc++ at run time (see CMakeLists.txt): memory comes from calloc/realloc.
#pragma once

#include <netinet/in.h>
#include <rdma/rdma_user_cm.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "provider/shim/ucma_backend.h"

namespace uroce::shim::ucma {

// The event numbers of the ABI (the kernel's enum rdma_cm_event_type = librdmacm's RDMA_CM_EVENT_*; the
// ucma_abi_layout test compares them with rdma/rdma_cma.h, which the shim does not need).
enum CmEvent : uint32_t {
  kEvAddrResolved = 0,
  kEvAddrError = 1,
  kEvRouteResolved = 2,
  kEvRouteError = 3,
  kEvConnectRequest = 4,
  kEvConnectResponse = 5,
  kEvConnectError = 6,
  kEvUnreachable = 7,
  kEvRejected = 8,
  kEvEstablished = 9,
  kEvDisconnected = 10,
  kEvMulticastJoin = 12,
  kEvMulticastError = 13,
};

struct Channel;

struct Event {
  Event* next;
  uint32_t owner;  // the id that counts it when reported: the listener for CONNECT_REQUEST, else resp.id
  uint32_t mc;     // the multicast group it is about (ucma_mcast.cc), which counts it too; 0: none
  rdma_ucm_event_resp resp;
};

enum class IdState : uint8_t {
  kIdle,
  kBound,
  kAddrQuery,
  kAddrResolved,
  kRouteQuery,
  kRouteResolved,
  kListen,
  kConnect,
  kConnected,
  kDisconnected
};

struct Id {
  uint32_t handle;
  uint64_t uid;  // librdmacm's cma_id_private*, echoed in events; 0 for a child until ACCEPT
  Channel* channel;
  uint16_t ps;
  uint8_t qp_type;
  IdState state;
  uint32_t events_reported;  // handed out by GET_EVENT (DESTROY_ID/MIGRATE_ID return it)
  uint32_t listener;         // a connection-request child whose CONNECT_REQUEST is not reported yet:
                             // the listener's handle; else kNoId
  bool src_set;              // bound (explicitly, or implicitly by RESOLVE_IP)
  bool has_dev;              // the address maps to the uroce device (node_guid reported)
  bool has_port;             // holds (ps, port) in the port table
  bool dst_set;
  bool reuseaddr;
  bool tos_set;
  int afonly;
  uint8_t tos;
  uint8_t ack_timeout;
  int gid_index;
  uint8_t sgid[16];
  uint8_t dgid[16];
  sockaddr_in6 src;  // sockaddr_in or sockaddr_in6 in sin6 space
  sockaddr_in6 dst;
  uint32_t num_paths;
  ib_user_path_rec path;
  bool has_conn;
  uroce_cm_conn conn;
};

constexpr uint32_t kNoId = UINT32_MAX;

struct Channel {
  Channel* next;  // in the list of live channels
  int fd;         // the application's fd (an eventfd): readable iff the queue is non-empty
  int users;      // threads inside a command on it (GET_EVENT waiters included)
  bool closed;    // no longer in the list; freed by the last user
  bool fd_owned;  // whether freeing it closes fd (not when dup2 replaced the fd)
  Event* head;
  Event* tail;
};

void lock();
void unlock();

// ucma_channel.cc: queue management, all under lock().
void queue_event(Channel* ch, Event* ev);
void drop_events_of(uint32_t id);     // unreported events owned by or about a destroyed id
void drop_group_events(uint32_t mc);  // unreported events about a multicast group that was left
Channel* channel_of_fd(int fd);

// The open() interposers of sysfs_redirect.cc call this first: true when `path` is the RDMA CM device
// and a uroce tree is active; then *result is the new channel fd or -1 with errno set.
bool open_cdev(const char* path, int flags, int* result);

// A command's payload as its struct: copied into a zeroed one of its full size (shorter payloads of older
// callers read as zeros).
template <typename T>
T payload_as(const void* payload, size_t in_len) {
  T cmd;
  std::memset(&cmd, 0, sizeof cmd);
  std::memcpy(&cmd, payload, in_len < sizeof cmd ? in_len : sizeof cmd);
  return cmd;
}

// ucma_id.cc / ucma_cmd.cc: the id table and command handlers. Each handler gets the payload copied into a
// zeroed struct of its full size and returns 0 or a negative errno. Called without the lock.
Id* find_id(uint32_t handle);      // under lock()
Id* new_id(Channel* ch);           // under lock(); nullptr when out of memory
void destroy_ids_of(Channel* ch);  // channel closing: every id on it, backend told without the lock
int handle_command(Channel* ch, uint32_t cmd, const void* payload, size_t in_len, size_t out_len);
int connection_command(Channel* ch, uint32_t cmd, const void* payload, size_t in_len);  // ucma_conn.cc
// ucma_mcast.cc: JOIN_IP_MCAST, JOIN_MCAST and LEAVE_MCAST; the groups of a destroyed id (under lock());
// a group's reported event (under lock()).
int multicast_command(Channel* ch, uint32_t cmd, const void* payload, size_t in_len, size_t out_len);
void leave_groups_of(uint32_t id);
void count_group_event(uint32_t mc);
void fill_info(const Id& id, uroce_cm_id_info* info);

// ucma_backend.cc
const uroce_cm_backend& backend();

// ucma_device.cc: the uroce device this process runs on, read once from $SYSFS_PATH.
struct Device {
  bool ok;
  uint64_t node_guid;  // big-endian, as ibv_get_device_guid returns it
  int num_gids;
  uint8_t gids[16][16];
  int loopback_gid;  // the GID 127.0.0.0/8 and ::1 map to
  bool on_loopback;  // one GID is a loopback address (bare `uroce run`, memif); false on a real interface
  uint8_t mtu;       // IB enum of the port MTU
};
const Device& device();

}  // namespace uroce::shim::ucma
