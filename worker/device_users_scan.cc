#include "worker/device_users_scan.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace colltest::worker {
namespace {

struct DirCloser {
  void operator()(DIR* d) const { closedir(d); }
};
using DirPtr = std::unique_ptr<DIR, DirCloser>;

bool SameFile(const struct stat& a, const struct stat& b) {
  const bool a_node = S_ISCHR(a.st_mode) || S_ISBLK(a.st_mode);
  if (a_node) return (a.st_mode & S_IFMT) == (b.st_mode & S_IFMT) && a.st_rdev == b.st_rdev;
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// Whether any descriptor in `fd_dir` (a /proc/<pid>/fd) refers to `target`. stat through the
// link reaches the open file itself, whatever name it was opened by.
bool HoldsOpen(const std::string& fd_dir, const struct stat& target) {
  DirPtr dir(opendir(fd_dir.c_str()));
  if (dir == nullptr) return false;  // gone, or not ours to read
  const int dfd = dirfd(dir.get());
  while (const dirent* e = readdir(dir.get())) {
    if (e->d_name[0] == '.') continue;
    struct stat st;
    if (fstatat(dfd, e->d_name, &st, 0) == 0 && SameFile(target, st)) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<std::vector<int64_t>> PidsWithFileOpen(const std::string& path,
                                                      const std::string& proc) {
  struct stat target;
  if (stat(path.c_str(), &target) != 0) {
    return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(errno)));
  }
  DirPtr dir(opendir(proc.c_str()));
  if (dir == nullptr) {
    return absl::UnavailableError(absl::StrCat(proc, ": ", std::strerror(errno)));
  }
  std::vector<int64_t> pids;
  while (const dirent* e = readdir(dir.get())) {
    int64_t pid = 0;
    if (!absl::SimpleAtoi(e->d_name, &pid) || pid <= 0) continue;
    if (HoldsOpen(absl::StrCat(proc, "/", pid, "/fd"), target)) pids.push_back(pid);
  }
  std::sort(pids.begin(), pids.end());
  return pids;
}

std::string ProcessName(int64_t pid, const std::string& proc) {
  std::ifstream comm(absl::StrCat(proc, "/", pid, "/comm"));
  std::string name;
  if (!comm || !std::getline(comm, name)) return "";
  return name;
}

std::string DeviceUsersJson(absl::string_view backend, absl::string_view source,
                            const std::vector<DeviceUser>& users, absl::string_view error) {
  nlohmann::json j = nlohmann::json::object();
  j["backend"] = std::string(backend);
  j["source"] = std::string(source);
  nlohmann::json list = nlohmann::json::array();
  for (const DeviceUser& u : users) {
    list.push_back(
        {{"device", u.device}, {"pid", u.pid}, {"name", u.name}, {"memory_bytes", u.memory_bytes}});
  }
  j["users"] = std::move(list);
  if (!error.empty()) j["error"] = std::string(error);
  // A command name is whatever bytes a process chose: invalid UTF-8 is replaced, not thrown on.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace colltest::worker
