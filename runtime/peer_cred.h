// Who may use a control socket (the per-engine socket of `uroce stats`/`uroce capture`, uroced's): the
// process's own user and root, checked with SO_PEERCRED on every accepted connection. The 0700 runtime
// directory is the first lock; this one holds whatever the socket's permissions became.
#pragma once

#include <string>

namespace uroce::runtime {

// True when the peer of the connected Unix socket `fd` is this process's uid or root. Otherwise false, with
// *refusal set to the one line to answer: why (naming the peer's uid) and whose `owner` (e.g. "this
// process").
bool peer_allowed(int fd, const std::string& owner, std::string* refusal);

}  // namespace uroce::runtime
