#include "server/net/fd_limit.h"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <fstream>

#include "absl/status/status.h"

namespace colltest::server {
namespace {

constexpr uint64_t kBaseReserve = 64;
constexpr uint64_t kReservePerDevice = 8;
constexpr uint64_t kMaxDefaultConnections = 1024;
constexpr uint64_t kMinDefaultConnections = 16;

// The kernel's ceiling for any RLIMIT_NOFILE (setrlimit above it fails with EPERM).
uint64_t NrOpen() {
  std::ifstream in("/proc/sys/fs/nr_open");
  uint64_t value = 0;
  if (in >> value && value > 0) return value;
  return 1 << 20;  // the kernel's default
}

}  // namespace

absl::StatusOr<FdLimits> RaiseFdLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return absl::ErrnoToStatus(errno, "getrlimit(RLIMIT_NOFILE)");
  }
  FdLimits result;
  result.soft_before = limit.rlim_cur;
  result.hard = limit.rlim_max;
  const rlim_t target = limit.rlim_max == RLIM_INFINITY ? NrOpen() : limit.rlim_max;
  if (limit.rlim_cur < target) {
    rlimit raised = limit;
    raised.rlim_cur = target;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  result.soft = limit.rlim_cur;
  return result;
}

uint64_t FdReserve(size_t devices) { return kBaseReserve + kReservePerDevice * devices; }

uint32_t DefaultMaxConnections(uint64_t soft_limit, size_t devices) {
  const uint64_t reserve = FdReserve(devices);
  const uint64_t spare = soft_limit > reserve ? (soft_limit - reserve) / 2 : 0;
  return static_cast<uint32_t>(std::clamp(spare, kMinDefaultConnections, kMaxDefaultConnections));
}

}  // namespace colltest::server
