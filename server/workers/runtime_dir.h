// The controller's private directory for worker sockets.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace colltest::server {

// A fresh 0700 directory named colltest-XXXXXX, so that no other user can connect to a worker's
// socket or plant one in its place. Removed with everything in it on destruction.
//
// The directory holds `controller.lock`, locked (flock) for as long as the controller lives. The
// kernel drops the lock when the process dies however it dies, so a later Create() knows that a
// directory whose lock it can take belongs to a dead controller (SIGKILL, a crash) and removes it.
class RuntimeDir {
 public:
  // `parent` empty means $XDG_RUNTIME_DIR, or /tmp where that is unset.
  static absl::StatusOr<std::unique_ptr<RuntimeDir>> Create(absl::string_view parent);
  ~RuntimeDir();

  RuntimeDir(const RuntimeDir&) = delete;
  RuntimeDir& operator=(const RuntimeDir&) = delete;

  const std::string& path() const { return path_; }
  // Directories of dead controllers that Create() removed (for the log and tests).
  int stale_removed() const { return stale_removed_; }

 private:
  RuntimeDir(std::string path, int lock_fd, int stale_removed)
      : path_(std::move(path)), lock_fd_(lock_fd), stale_removed_(stale_removed) {}

  std::string path_;
  int lock_fd_;
  int stale_removed_;
};

// The parent Create() uses for `parent`.
std::string RuntimeDirParent(absl::string_view parent);

// Removes every colltest-XXXXXX directory in `parent` whose controller.lock is not held; returns
// how many. Directories without a lock file are left alone (another program's, or one being made).
int RemoveStaleRuntimeDirs(const std::string& parent);

}  // namespace colltest::server
