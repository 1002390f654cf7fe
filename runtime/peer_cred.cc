#include "runtime/peer_cred.h"

#include <sys/socket.h>
#include <unistd.h>

namespace uroce::runtime {

bool peer_allowed(int fd, const std::string& owner, std::string* refusal) {
  ucred cred{};
  socklen_t len = sizeof cred;
  const bool known = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0;
  if (known && (cred.uid == getuid() || cred.uid == 0)) return true;
  const std::string who = known ? "uid " + std::to_string(cred.uid) : "an unidentified peer";
  *refusal = "refused: " + who + " is neither uid " + std::to_string(getuid()) + " (the owner of " + owner +
             ") nor root";
  return false;
}

}  // namespace uroce::runtime
