#include "server/workers/runtime_dir.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace colltest::server {
namespace {

constexpr char kLockFile[] = "controller.lock";
constexpr char kDirPrefix[] = "colltest-";

// True when `dir` has a lock file that nobody holds. Taking the lock to find out is harmless: the
// directory is removed right after, lock file included.
bool OwnerIsGone(const std::filesystem::path& dir) {
  const int fd = open((dir / kLockFile).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;
  const bool free = flock(fd, LOCK_EX | LOCK_NB) == 0;
  close(fd);
  return free;
}

}  // namespace

std::string RuntimeDirParent(absl::string_view parent) {
  if (!parent.empty()) return std::string(parent);
  const char* xdg = getenv("XDG_RUNTIME_DIR");
  return (xdg != nullptr && xdg[0] != '\0') ? xdg : "/tmp";
}

int RemoveStaleRuntimeDirs(const std::string& parent) {
  std::error_code error;
  int removed = 0;
  std::vector<std::filesystem::path> stale;
  for (const auto& entry : std::filesystem::directory_iterator(parent, error)) {
    const std::string name = entry.path().filename().string();
    if (!absl::StartsWith(name, kDirPrefix) || name.size() != sizeof(kDirPrefix) - 1 + 6) continue;
    if (!entry.is_directory(error) || entry.is_symlink(error)) continue;
    if (OwnerIsGone(entry.path())) stale.push_back(entry.path());
  }
  for (const auto& dir : stale) {
    if (std::filesystem::remove_all(dir, error) > 0 && !error) ++removed;
  }
  return removed;
}

absl::StatusOr<std::unique_ptr<RuntimeDir>> RuntimeDir::Create(absl::string_view parent) {
  const std::string base = RuntimeDirParent(parent);
  const int stale = RemoveStaleRuntimeDirs(base);
  std::string templ = absl::StrCat(base, "/", kDirPrefix, "XXXXXX");
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  // mkdtemp creates the directory 0700 atomically; no chmod window to race with.
  if (mkdtemp(buf.data()) == nullptr) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot create runtime directory in ", base));
  }
  const std::string path = buf.data();
  // O_CLOEXEC: a worker must not inherit the lock and keep a dead controller's directory "alive".
  const int fd = open(absl::StrCat(path, "/", kLockFile).c_str(),
                      O_CREAT | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const absl::Status status =
        absl::ErrnoToStatus(errno, absl::StrCat("cannot lock ", path, "/", kLockFile));
    if (fd >= 0) close(fd);
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
    return status;
  }
  return std::unique_ptr<RuntimeDir>(new RuntimeDir(path, fd, stale));
}

RuntimeDir::~RuntimeDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
  close(lock_fd_);
}

}  // namespace colltest::server
