#include "server/workers/shm_segments.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/string_view.h"
#include "common/shm_names.h"

namespace colltest::server {
namespace {

bool IsShmName(absl::string_view name) {
  return name.size() > 1 && name.size() < 256 && name[0] == '/' &&
         name.find('/', 1) == absl::string_view::npos && name.find('\0') == absl::string_view::npos;
}

}  // namespace

void UnlinkShmNames(absl::Span<const std::string> names) {
  for (const std::string& name : names) {
    // ENOENT is the normal case for a worker that exited cleanly.
    if (IsShmName(name)) shm_unlink(name.c_str());
  }
}

void UnlinkShmOfWorkers(absl::Span<const int> worker_pids) {
  if (worker_pids.empty()) return;
  const int self = getpid();
  common::ForEachColltestShm([&](const common::ShmEntry& entry) {
    if (entry.controller_pid == self &&
        std::find(worker_pids.begin(), worker_pids.end(), entry.worker_pid) != worker_pids.end()) {
      common::UnlinkShmEntry(entry);
    }
  });
}

void UnlinkStaleShm() {
  common::ForEachColltestShm([](const common::ShmEntry& entry) {
    if (kill(entry.controller_pid, 0) != 0 && errno == ESRCH) common::UnlinkShmEntry(entry);
  });
}

}  // namespace colltest::server
