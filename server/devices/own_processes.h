// The processes that are colltestd's own: itself and every child it has not reaped yet (its
// workers, those of a group still starting or recovering, and a dying one the GPU driver still
// lists as holding memory). The device-users check (server/devices/device_users.h) must not count
// them as another job's.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace colltest::server {

// `parent` and the pids whose parent is `parent`, read from `proc_root` (/proc; another root in
// tests). A process that exits while being read is left out; an unreadable /proc gives `parent`
// alone.
std::vector<int> OwnProcesses(pid_t parent, const std::string& proc_root = "/proc");

}  // namespace colltest::server
