#include "server/net/sd_notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/unique_fd.h"

namespace colltest::server {
namespace {

// The address of `socket` and its length; an abstract name keeps its leading NUL and has no
// terminating one, so its length counts exactly the name's bytes.
absl::Status FillAddress(const std::string& socket, sockaddr_un& address, socklen_t& length) {
  address = {};
  address.sun_family = AF_UNIX;
  const bool abstract = socket[0] == '@';
  if (!abstract && socket[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("NOTIFY_SOCKET=", socket, ": neither an absolute path nor '@' and a name"));
  }
  // A path needs room for its terminating NUL; an abstract name does not.
  if (socket.size() + (abstract ? 0 : 1) > sizeof(address.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("NOTIFY_SOCKET=", socket, ": too long"));
  }
  memcpy(address.sun_path, socket.data(), socket.size());
  if (abstract) address.sun_path[0] = '\0';
  length =
      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + socket.size() + (abstract ? 0 : 1));
  return absl::OkStatus();
}

absl::Status Notify(absl::string_view state) {
  const char* socket = getenv("NOTIFY_SOCKET");
  if (socket == nullptr || socket[0] == '\0') return absl::OkStatus();
  return SendNotification(socket, state);
}

}  // namespace

absl::Status SendNotification(const std::string& socket, absl::string_view state) {
  if (socket.empty()) return absl::InvalidArgumentError("NOTIFY_SOCKET is empty");
  sockaddr_un address;
  socklen_t length = 0;
  if (absl::Status filled = FillAddress(socket, address, length); !filled.ok()) return filled;
  UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    return absl::UnavailableError(absl::StrCat("notify socket: ", strerror(errno)));
  }
  // MSG_NOSIGNAL: a manager that went away must not end this process with SIGPIPE.
  const ssize_t sent = sendto(fd.get(), state.data(), state.size(), MSG_NOSIGNAL,
                              reinterpret_cast<const sockaddr*>(&address), length);
  if (sent < 0) {
    return absl::UnavailableError(absl::StrCat("notify ", socket, ": ", strerror(errno)));
  }
  if (static_cast<size_t>(sent) != state.size()) {
    return absl::UnavailableError(absl::StrCat("notify ", socket, ": datagram truncated"));
  }
  return absl::OkStatus();
}

absl::Status NotifyReady(absl::string_view status) {
  if (status.empty()) return Notify("READY=1");
  return Notify(absl::StrCat("READY=1\nSTATUS=", absl::StrReplaceAll(status, {{"\n", " "}})));
}

absl::Status NotifyStopping() { return Notify("STOPPING=1"); }

absl::Status NotifyStatus(absl::string_view text) {
  return Notify(absl::StrCat("STATUS=", absl::StrReplaceAll(text, {{"\n", " "}})));
}

}  // namespace colltest::server
