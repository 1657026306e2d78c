// colltestd's state directory: where it is, that it exists with mode 0700, and that one colltestd
// at a time uses it (a flock'ed lock file). docs/history.md.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace colltest::store {

// The --state-dir flag when given, else $XDG_STATE_HOME/colltest, else $HOME/.local/state/colltest.
// INVALID_ARGUMENT when none can be formed (no flag, no XDG_STATE_HOME, no HOME).
absl::StatusOr<std::string> ResolveStateDir(const std::string& flag);

// The database file inside the state directory.
std::string HistoryDatabasePath(const std::string& state_dir);  // DIR/history.sqlite3

// An exclusive flock on DIR/colltestd.lock, released when this goes away. Moved, never copied.
class StateDirLock {
 public:
  StateDirLock() = default;
  explicit StateDirLock(int fd) : fd_(fd) {}
  ~StateDirLock();
  StateDirLock(StateDirLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  StateDirLock& operator=(StateDirLock&& other) noexcept;
  StateDirLock(const StateDirLock&) = delete;
  StateDirLock& operator=(const StateDirLock&) = delete;
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// Creates `dir` (and its parents) when missing, mode 0700, and takes an exclusive flock on
// DIR/colltestd.lock, held as long as the returned lock lives. Errors name the directory
// and what to do: not creatable, not writable, or in use by another colltestd (its pid, written in
// the lock file).
absl::StatusOr<StateDirLock> LockStateDir(const std::string& dir);

}  // namespace colltest::store
