// The names of the POSIX shared-memory segments that cpu-backend workers export as buffer handles:
// "/colltest.<controller pid>.<worker pid>.<n>". The two pids are what lets a controller find the
// segments of its workers, and of dead controllers, and a worker find its own.
#pragma once

#include <functional>
#include <string>

#include "absl/strings/string_view.h"

namespace colltest::common {

// "/colltest.<controller pid>.<worker pid>.": the controller computes it for each worker it
// spawns and passes it in InitRequest.shm_prefix (server/workers/rendezvous.cc); the worker appends
// its segment's index (ShmSegmentName).
std::string ShmSegmentPrefix(int controller_pid, int worker_pid);
std::string ShmSegmentName(absl::string_view prefix, unsigned index);
// ShmSegmentName(ShmSegmentPrefix(controller_pid, worker_pid), index).
std::string ShmSegmentName(int controller_pid, int worker_pid, unsigned index);

struct ShmEntry {
  absl::string_view name;  // as listed in /dev/shm, without the leading slash
  int controller_pid;
  int worker_pid;
};

// Calls `fn` for every /dev/shm entry that follows the naming scheme above.
void ForEachColltestShm(const std::function<void(const ShmEntry&)>& fn);

// shm_unlink of an entry listed by ForEachColltestShm; one already gone is not an error.
void UnlinkShmEntry(const ShmEntry& entry);

}  // namespace colltest::common
