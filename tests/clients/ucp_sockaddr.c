/* UCX's client-server connection establishment over uroce: a UCP listener on a socket address and a client
 * endpoint created from that address (UCP_EP_PARAMS_FLAGS_CLIENT_SERVER), which UCX carries over the RDMA CM
 * (its rdmacm connection manager: rdma_listen, a REQ with UCX's address in the private data, rdma_accept),
 * as UCX-based programs that know only the server's IP address connect. Then tagged messages of three sizes,
 * each checked and echoed back changed, which UCX sends eagerly (short and copied) and by rendezvous (the
 * receiver READs the sender's buffer).
 *
 *   ucp_sockaddr --server PORT
 *   ucp_sockaddr --client ADDRESS PORT
 *
 * Prints "ucp sockaddr: N messages checked" and exits 0 when every byte was right. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucp/api/ucp.h>

enum { kRounds = 20 };
static const size_t kSizes[] = {8, 16 * 1024, 1024 * 1024};
enum { kNumSizes = sizeof(kSizes) / sizeof(kSizes[0]) };

static uint8_t pattern(unsigned seed, size_t i) { return (uint8_t)(seed * 29 + i * 11 + (i >> 8)); }

static ucp_conn_request_h g_conn_request;
static ucs_status_t g_ep_status = UCS_OK;

static void on_conn_request(ucp_conn_request_h request, void* arg) {
  (void)arg;
  g_conn_request = request;
}

static void on_ep_error(void* arg, ucp_ep_h ep, ucs_status_t status) {
  (void)arg;
  (void)ep;
  g_ep_status = status;
}

/* Waits for a request returned by a _nbx call; returns its status. */
static ucs_status_t wait_request(ucp_worker_h worker, void* request) {
  if (request == NULL) return UCS_OK;
  if (UCS_PTR_IS_ERR(request)) return UCS_PTR_STATUS(request);
  ucs_status_t status;
  while ((status = ucp_request_check_status(request)) == UCS_INPROGRESS) ucp_worker_progress(worker);
  ucp_request_free(request);
  return status;
}

static int check(const uint8_t* buf, size_t len, unsigned seed, const char* who) {
  for (size_t i = 0; i < len; ++i) {
    if (buf[i] != pattern(seed, i)) {
      fprintf(stderr, "%s: message %u byte %zu of %zu is %u, expected %u\n", who, seed, i, len, buf[i],
              pattern(seed, i));
      return 1;
    }
  }
  return 0;
}

static int exchange(ucp_worker_h worker, ucp_ep_h ep, int server) {
  const size_t most = kSizes[kNumSizes - 1];
  uint8_t* out = malloc(most);
  uint8_t* in = malloc(most);
  ucp_request_param_t param;
  memset(&param, 0, sizeof(param));
  int bad = 0;
  unsigned count = 0;
  for (int s = 0; s < kNumSizes && !bad; ++s) {
    const size_t len = kSizes[s];
    for (unsigned r = 0; r < kRounds && !bad; ++r) {
      const unsigned seed = s * kRounds + r;
      const ucp_tag_t tag = seed;
      if (!server) {
        for (size_t i = 0; i < len; ++i) out[i] = pattern(seed, i);
        if (wait_request(worker, ucp_tag_send_nbx(ep, out, len, tag, &param)) != UCS_OK) bad = 1;
      }
      memset(in, 0, len);
      ucs_status_t st = wait_request(worker, ucp_tag_recv_nbx(worker, in, len, tag, (ucp_tag_t)-1, &param));
      if (st != UCS_OK) {
        fprintf(stderr, "%s: receive %u: %s\n", server ? "server" : "client", seed, ucs_status_string(st));
        bad = 1;
        break;
      }
      /* The server answers each message with the next seed's pattern; the client checks that answer. */
      bad |= check(in, len, server ? seed : seed + 1000, server ? "server" : "client");
      if (server && !bad) {
        for (size_t i = 0; i < len; ++i) out[i] = pattern(seed + 1000, i);
        if (wait_request(worker, ucp_tag_send_nbx(ep, out, len, tag, &param)) != UCS_OK) bad = 1;
      }
      ++count;
    }
  }
  free(out);
  free(in);
  if (!bad) printf("ucp sockaddr: %u messages checked (%s)\n", count, server ? "server" : "client");
  return bad;
}

int main(int argc, char** argv) {
  const int server = argc == 3 && strcmp(argv[1], "--server") == 0;
  const int client = argc == 4 && strcmp(argv[1], "--client") == 0;
  if (!server && !client) {
    fprintf(stderr, "usage: %s --server PORT | --client ADDRESS PORT\n", argv[0]);
    return 2;
  }
  struct sockaddr_in sin;
  memset(&sin, 0, sizeof(sin));
  sin.sin_family = AF_INET;
  sin.sin_port = htons((uint16_t)atoi(argv[argc - 1]));
  if (client && inet_pton(AF_INET, argv[2], &sin.sin_addr) != 1) {
    fprintf(stderr, "bad address %s\n", argv[2]);
    return 2;
  }

  ucp_config_t* config;
  ucp_context_h context;
  ucp_worker_h worker;
  ucp_params_t params;
  memset(&params, 0, sizeof(params));
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG;
  if (ucp_config_read(NULL, NULL, &config) != UCS_OK) return 1;
  ucs_status_t st = ucp_init(&params, config, &context);
  ucp_config_release(config);
  if (st != UCS_OK) {
    fprintf(stderr, "ucp_init: %s\n", ucs_status_string(st));
    return 1;
  }
  ucp_worker_params_t wparams;
  memset(&wparams, 0, sizeof(wparams));
  wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
  if ((st = ucp_worker_create(context, &wparams, &worker)) != UCS_OK) {
    fprintf(stderr, "ucp_worker_create: %s\n", ucs_status_string(st));
    return 1;
  }

  ucp_listener_h listener = NULL;
  ucp_ep_params_t eparams;
  memset(&eparams, 0, sizeof(eparams));
  eparams.field_mask = UCP_EP_PARAM_FIELD_ERR_HANDLER | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  eparams.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  eparams.err_handler.cb = on_ep_error;
  if (server) {
    ucp_listener_params_t lparams;
    memset(&lparams, 0, sizeof(lparams));
    lparams.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
    lparams.sockaddr.addr = (const struct sockaddr*)&sin;
    lparams.sockaddr.addrlen = sizeof(sin);
    lparams.conn_handler.cb = on_conn_request;
    if ((st = ucp_listener_create(worker, &lparams, &listener)) != UCS_OK) {
      fprintf(stderr, "ucp_listener_create: %s\n", ucs_status_string(st));
      return 1;
    }
    printf("listening on port %s\n", argv[2]);
    fflush(stdout);
    while (g_conn_request == NULL) ucp_worker_progress(worker);
    eparams.field_mask |= UCP_EP_PARAM_FIELD_CONN_REQUEST;
    eparams.conn_request = g_conn_request;
  } else {
    eparams.field_mask |= UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR;
    eparams.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    eparams.sockaddr.addr = (const struct sockaddr*)&sin;
    eparams.sockaddr.addrlen = sizeof(sin);
  }
  ucp_ep_h ep;
  if ((st = ucp_ep_create(worker, &eparams, &ep)) != UCS_OK) {
    fprintf(stderr, "ucp_ep_create: %s\n", ucs_status_string(st));
    return 1;
  }

  int bad = exchange(worker, ep, server);
  /* The server may already have seen the client's disconnect, which follows the last answer at once. */
  if (g_ep_status != UCS_OK && !(server && g_ep_status == UCS_ERR_CONNECTION_RESET)) {
    fprintf(stderr, "endpoint error: %s\n", ucs_status_string(g_ep_status));
    bad = 1;
  }
  /* The client flushes and closes first; the server then sees the disconnect, which is how it ends. */
  ucp_request_param_t cparam;
  memset(&cparam, 0, sizeof(cparam));
  if (client) {
    st = wait_request(worker, ucp_ep_close_nbx(ep, &cparam));
    if (st != UCS_OK) {
      fprintf(stderr, "client close: %s\n", ucs_status_string(st));
      bad = 1;
    }
  } else {
    while (g_ep_status == UCS_OK) ucp_worker_progress(worker);
    cparam.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    cparam.flags = UCP_EP_CLOSE_FLAG_FORCE;
    wait_request(worker, ucp_ep_close_nbx(ep, &cparam));
    if (g_ep_status != UCS_ERR_CONNECTION_RESET) {
      fprintf(stderr, "server: the client's disconnect came as %s\n", ucs_status_string(g_ep_status));
      bad = 1;
    }
    ucp_listener_destroy(listener);
  }
  ucp_worker_destroy(worker);
  ucp_cleanup(context);
  return bad;
}
