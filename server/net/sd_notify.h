// The systemd readiness protocol (sd_notify(3)) without libsystemd: one datagram of
// "KEY=VALUE\n" lines to the unix socket named by $NOTIFY_SOCKET. A unit of Type=notify
// (deploy/systemd/colltestd.service) counts as started only once READY=1 arrives, so that
// `systemctl start` and units ordered after colltestd wait until clients can connect.
//
// Every function is a no-op returning OK when $NOTIFY_SOCKET is unset (not started by systemd);
// none throws. An error means a notification was lost: the caller logs it and carries on.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace colltest::server {

// READY=1, with STATUS=`status` when not empty: the service accepts connections.
absl::Status NotifyReady(absl::string_view status = "");
// STOPPING=1: shutdown has begun (systemctl shows "deactivating" instead of a stale "active").
absl::Status NotifyStopping();
// STATUS=`text`, shown by `systemctl status`. Line breaks become spaces: each line of the
// datagram is an assignment of its own, so a newline would forge another key.
absl::Status NotifyStatus(absl::string_view text);

// Sends `state` to `socket` as $NOTIFY_SOCKET spells it: a filesystem path, or '@' and the name of
// an abstract socket. Errors: INVALID_ARGUMENT for an address that is neither (or too long),
// UNAVAILABLE when the datagram cannot be sent. Exposed for tests.
absl::Status SendNotification(const std::string& socket, absl::string_view state);

}  // namespace colltest::server
