#include "store/state_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"

namespace colltest::store {
namespace {

constexpr char kLockFile[] = "colltestd.lock";
constexpr char kDatabaseFile[] = "history.sqlite3";

std::string Env(const char* name) {
  const char* value = getenv(name);
  return value != nullptr ? value : "";
}

// mkdir -p: missing parents 0755 (like mkdir -p), the directory itself 0700 (the history holds
// every request and who made it). An existing directory keeps its mode.
absl::Status MakeDirs(const std::string& dir) {
  for (size_t end = dir.find('/', 1);; end = dir.find('/', end + 1)) {
    const std::string prefix = dir.substr(0, end);
    const bool last = end == std::string::npos || end + 1 == dir.size();
    if (!prefix.empty() && mkdir(prefix.c_str(), last ? 0700 : 0755) != 0 && errno != EEXIST) {
      return absl::ErrnoToStatus(
          errno, absl::StrCat("cannot create state directory ", dir, " (", prefix, ": ",
                              strerror(errno), "): create it, or give --state-dir another one"));
    }
    if (last) break;
  }
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("state directory ", dir, " is not a directory: give --state-dir another one"));
  }
  return absl::OkStatus();
}

// The pid the holder wrote, or "unknown" (it may not have written it yet).
std::string HolderPid(int fd) {
  char buf[32] = {};
  const ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
  int pid = 0;
  if (n <= 0 || !absl::SimpleAtoi(absl::StripAsciiWhitespace(buf), &pid)) return "unknown";
  return absl::StrCat(pid);
}

absl::Status WritePid(int fd, const std::string& path) {
  const std::string pid = absl::StrCat(getpid(), "\n");
  if (ftruncate(fd, 0) != 0 ||
      pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot write ", path));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ResolveStateDir(const std::string& flag) {
  if (!flag.empty()) return flag;
  // The XDG base directory rule: a relative XDG_STATE_HOME is ignored.
  const std::string xdg = Env("XDG_STATE_HOME");
  if (!xdg.empty() && xdg[0] == '/') return absl::StrCat(xdg, "/colltest");
  const std::string home = Env("HOME");
  if (!home.empty()) return absl::StrCat(home, "/.local/state/colltest");
  return absl::InvalidArgumentError(
      "no state directory: give --state-dir, or set XDG_STATE_HOME or HOME");
}

std::string HistoryDatabasePath(const std::string& state_dir) {
  return absl::StrCat(state_dir, "/", kDatabaseFile);
}

StateDirLock::~StateDirLock() {
  // Closing the descriptor drops the flock; the file stays (removing it would race a new holder).
  if (fd_ >= 0) close(fd_);
}

StateDirLock& StateDirLock::operator=(StateDirLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

absl::StatusOr<StateDirLock> LockStateDir(const std::string& dir) {
  COLLTEST_RETURN_IF_ERROR(MakeDirs(dir));
  const std::string path = absl::StrCat(dir, "/", kLockFile);
  // O_CLOEXEC: a worker must not inherit the lock and keep it after colltestd died.
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    return absl::ErrnoToStatus(
        errno, absl::StrCat("state directory ", dir, " is not writable (cannot open ", kLockFile,
                            ": ", strerror(errno), "): check its owner and mode"));
  }
  StateDirLock lock(fd);  // closes it on every return below but the last
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) return absl::ErrnoToStatus(errno, absl::StrCat("cannot lock ", path));
    return absl::FailedPreconditionError(
        absl::StrCat("state directory ", dir, " is in use by another colltestd (pid ",
                     HolderPid(fd), "); give each colltestd its own --state-dir"));
  }
  COLLTEST_RETURN_IF_ERROR(WritePid(fd, path));
  return lock;
}

}  // namespace colltest::store
