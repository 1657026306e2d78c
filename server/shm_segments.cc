#include "server/shm_segments.h"

#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <functional>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace colltest::server {
namespace {

constexpr char kShmDir[] = "/dev/shm";
constexpr absl::string_view kPrefix = "colltest.";

struct ShmEntry {
  absl::string_view name;  // as listed in /dev/shm, without the leading slash
  int controller_pid;
  int worker_pid;
};

// Calls `fn` for every /dev/shm entry that follows the colltest naming scheme.
void ForEachColltestShm(const std::function<void(const ShmEntry&)>& fn) {
  DIR* dir = opendir(kShmDir);
  if (dir == nullptr) return;
  while (const dirent* entry = readdir(dir)) {
    absl::string_view name = entry->d_name;
    if (!absl::StartsWith(name, kPrefix)) continue;
    std::vector<absl::string_view> parts = absl::StrSplit(name.substr(kPrefix.size()), '.');
    ShmEntry parsed{name, 0, 0};
    if (parts.size() < 3 || !absl::SimpleAtoi(parts[0], &parsed.controller_pid) ||
        !absl::SimpleAtoi(parts[1], &parsed.worker_pid) || parsed.controller_pid <= 0) {
      continue;
    }
    fn(parsed);
  }
  closedir(dir);
}

void Unlink(const std::string& shm_name) {
  // ENOENT is the normal case for a worker that exited cleanly; nothing else is actionable here.
  shm_unlink(shm_name.c_str());
}

bool IsShmName(absl::string_view name) {
  return name.size() > 1 && name.size() < 256 && name[0] == '/' &&
         name.find('/', 1) == absl::string_view::npos && name.find('\0') == absl::string_view::npos;
}

}  // namespace

void UnlinkShmNames(absl::Span<const std::string> names) {
  for (const std::string& name : names) {
    if (IsShmName(name)) Unlink(name);
  }
}

void UnlinkShmOfWorkers(absl::Span<const int> worker_pids) {
  if (worker_pids.empty()) return;
  const int self = getpid();
  ForEachColltestShm([&](const ShmEntry& entry) {
    if (entry.controller_pid == self &&
        std::find(worker_pids.begin(), worker_pids.end(), entry.worker_pid) != worker_pids.end()) {
      Unlink(absl::StrCat("/", entry.name));
    }
  });
}

void UnlinkStaleShm() {
  ForEachColltestShm([](const ShmEntry& entry) {
    if (kill(entry.controller_pid, 0) != 0 && errno == ESRCH) {
      Unlink(absl::StrCat("/", entry.name));
    }
  });
}

}  // namespace colltest::server
