// One request to the host's uroced over its control socket (<runtime dir>/uroced.sock), one reply: the
// line protocol of runtime/uroced_client.h. Shared by the tools and the provider (whose connection manager
// asks uroced for the host's CM ports). No daemon is started here.
#pragma once

#include <string>

namespace uroce::runtime {

// The control socket's path in the runtime directory `base`.
std::string uroced_socket_path(const std::string& base);

// Sends `line` and reads the reply until the daemon closes (trailing newlines removed). False with *err
// when no daemon answers, the socket path is unusable, or the daemon closed without a reply. Waits at most
// 10 s for the reply.
bool uroced_request(const std::string& line, std::string* reply, std::string* err);

}  // namespace uroce::runtime
