#include "common/shm_names.h"

#include <dirent.h>
#include <sys/mman.h>

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace colltest::common {
namespace {

constexpr char kShmDir[] = "/dev/shm";
constexpr absl::string_view kPrefix = "colltest.";

}  // namespace

std::string ShmSegmentPrefix(int controller_pid, int worker_pid) {
  return absl::StrCat("/", kPrefix, controller_pid, ".", worker_pid, ".");
}

std::string ShmSegmentName(absl::string_view prefix, unsigned index) {
  return absl::StrCat(prefix, index);
}

std::string ShmSegmentName(int controller_pid, int worker_pid, unsigned index) {
  return ShmSegmentName(ShmSegmentPrefix(controller_pid, worker_pid), index);
}

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

void UnlinkShmEntry(const ShmEntry& entry) {
  // ENOENT is the normal case for a worker that exited cleanly; nothing else is actionable here.
  shm_unlink(absl::StrCat("/", entry.name).c_str());
}

}  // namespace colltest::common
