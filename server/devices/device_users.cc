#include "server/devices/device_users.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "server/devices/backend_probe.h"
#include "spdlog/spdlog.h"

namespace colltest::server {
namespace {

constexpr absl::string_view kBusyPrefix = "BUSY: ";

absl::Status FieldError(const std::string& field, absl::string_view want) {
  return absl::InvalidArgumentError(absl::StrCat("device users: ", field, ": expected ", want));
}

absl::StatusOr<DeviceUser> ParseUser(const nlohmann::json& j, size_t i) {
  const std::string at = absl::StrCat("users[", i, "]");
  if (!j.is_object()) return FieldError(at, "an object");
  DeviceUser u;
  auto device = j.find("device");
  if (device == j.end() || !device->is_number_unsigned() || device->get<uint64_t>() > UINT32_MAX) {
    return FieldError(at + ".device", "a device index");
  }
  u.device = device->get<uint32_t>();
  auto pid = j.find("pid");
  if (pid == j.end() || !pid->is_number_integer() || pid->get<int64_t>() <= 0) {
    return FieldError(at + ".pid", "a positive integer");
  }
  u.pid = pid->get<int64_t>();
  // name and memory_bytes are what the worker could learn: absent means unknown.
  if (auto name = j.find("name"); name != j.end()) {
    if (!name->is_string()) return FieldError(at + ".name", "a string");
    u.name = name->get<std::string>();
  }
  if (auto memory = j.find("memory_bytes"); memory != j.end()) {
    if (!memory->is_number_unsigned()) return FieldError(at + ".memory_bytes", "a byte count");
    u.memory_bytes = memory->get<uint64_t>();
  }
  return u;
}

// "pid 4242 (python3, 20.0 GiB)"; what is unknown is left out.
std::string DescribeUser(const DeviceUser& u) {
  std::vector<std::string> about;
  if (!u.name.empty()) about.push_back(u.name);
  if (u.memory_bytes > 0) {
    about.push_back(
        absl::StrFormat("%.1f GiB", static_cast<double>(u.memory_bytes) / (1ull << 30)));
  }
  std::string text = absl::StrCat("pid ", u.pid);
  if (!about.empty()) absl::StrAppend(&text, " (", absl::StrJoin(about, ", "), ")");
  return text;
}

// Each reason to refuse nothing is logged the first time only: a daemon asks before every run.
void LogOnce(std::atomic<bool>& logged, const std::string& message) {
  if (!logged.exchange(true)) {
    spdlog::warn("device users: {}; runs are not refused as BUSY", message);
  }
}

class WorkerUsersProbe final : public DeviceUsersProbe {
 public:
  WorkerUsersProbe(std::string worker, std::string backend, absl::Duration timeout)
      : worker_(std::move(worker)), backend_(std::move(backend)), timeout_(timeout) {}

  absl::StatusOr<DeviceUsers> Users(absl::Span<const uint32_t> devices) override {
    std::vector<std::string> args = {"--users", "--backend", backend_};
    // Without --devices the worker reports every device.
    if (!devices.empty()) {
      args.push_back("--devices");
      args.push_back(absl::StrJoin(devices, ","));
    }
    COLLTEST_ASSIGN_OR_RETURN(const std::string output, RunWorkerCommand(worker_, args, timeout_));
    return ParseDeviceUsers(output);
  }

 private:
  std::string worker_;
  std::string backend_;
  absl::Duration timeout_;
};

class PhysicalDevicesProbe final : public DeviceUsersProbe {
 public:
  PhysicalDevicesProbe(std::unique_ptr<DeviceUsersProbe> inner, DevicePlacement placement)
      : inner_(std::move(inner)), placement_(std::move(placement)) {}

  absl::StatusOr<DeviceUsers> Users(absl::Span<const uint32_t> devices) override {
    std::map<uint32_t, std::vector<uint32_t>> slots;  // GPU -> the asked indices on it
    for (uint32_t d : devices) slots[placement_.Physical(d)].push_back(d);
    std::vector<uint32_t> gpus;
    for (const auto& [gpu, unused] : slots) gpus.push_back(gpu);
    absl::StatusOr<DeviceUsers> found = inner_->Users(gpus);
    if (!found.ok()) return found;
    DeviceUsers out{found->source, {}};
    for (const DeviceUser& u : found->users) {
      auto it = slots.find(u.device);
      if (it == slots.end()) continue;
      for (uint32_t d : it->second) {
        out.users.push_back(u);
        out.users.back().device = d;
      }
    }
    return out;
  }

 private:
  std::unique_ptr<DeviceUsersProbe> inner_;
  DevicePlacement placement_;
};

}  // namespace

std::unique_ptr<DeviceUsersProbe> OnPhysicalDevices(std::unique_ptr<DeviceUsersProbe> inner,
                                                    DevicePlacement placement) {
  return std::make_unique<PhysicalDevicesProbe>(std::move(inner), std::move(placement));
}

absl::StatusOr<DeviceUsers> ParseDeviceUsers(absl::string_view line) {
  // The worker's stdout: the first line that is a JSON object (a runtime may log before it).
  nlohmann::json j;
  for (absl::string_view l : absl::StrSplit(line, '\n')) {
    l = absl::StripAsciiWhitespace(l);
    if (l.empty() || l.front() != '{') continue;
    j = nlohmann::json::parse(l, nullptr, /*allow_exceptions=*/false);
    if (!j.is_discarded()) break;
  }
  if (!j.is_object()) return absl::InvalidArgumentError("device users: no JSON object");
  DeviceUsers out;
  auto source = j.find("source");
  if (source == j.end() || !source->is_string() || source->get<std::string>().empty()) {
    return FieldError("source", R"("nvml", "proc" or "none")");
  }
  out.source = source->get<std::string>();
  auto users = j.find("users");
  if (users == j.end() || !users->is_array()) return FieldError("users", "an array");
  for (size_t i = 0; i < users->size(); ++i) {
    COLLTEST_ASSIGN_OR_RETURN(DeviceUser u, ParseUser((*users)[i], i));
    out.users.push_back(std::move(u));
  }
  return out;
}

std::unique_ptr<DeviceUsersProbe> CreateWorkerUsersProbe(std::string worker, std::string backend,
                                                         absl::Duration timeout) {
  return std::make_unique<WorkerUsersProbe>(std::move(worker), std::move(backend), timeout);
}

absl::Status CheckDevicesFree(DeviceUsersProbe& probe, absl::Span<const uint32_t> devices,
                              absl::Span<const int> own_pids) {
  static std::atomic<bool> logged_failure{false};
  static std::atomic<bool> logged_none{false};
  if (devices.empty()) return absl::OkStatus();
  absl::StatusOr<DeviceUsers> found = probe.Users(devices);
  if (!found.ok()) {
    LogOnce(logged_failure, absl::StrCat("the probe failed: ", found.status().message()));
    return absl::OkStatus();
  }
  if (found->source == "none") {
    LogOnce(logged_none, "the worker has no way to see other processes on these devices");
    return absl::OkStatus();
  }
  const std::set<uint32_t> asked(devices.begin(), devices.end());
  const std::set<int64_t> own(own_pids.begin(), own_pids.end());
  std::vector<DeviceUser> others;
  for (DeviceUser& u : found->users) {
    if (asked.count(u.device) != 0 && own.count(u.pid) == 0 &&
        !absl::StartsWith(u.name, kMpsProcessPrefix)) {
      others.push_back(std::move(u));
    }
  }
  if (others.empty()) return absl::OkStatus();
  std::sort(others.begin(), others.end(), [](const DeviceUser& a, const DeviceUser& b) {
    return std::tie(a.device, a.pid) < std::tie(b.device, b.pid);
  });
  // NVML lists a process that both computes and draws twice.
  others.erase(std::unique(others.begin(), others.end(),
                           [](const DeviceUser& a, const DeviceUser& b) {
                             return a.device == b.device && a.pid == b.pid;
                           }),
               others.end());
  std::vector<std::string> parts;
  for (const DeviceUser& u : others) {
    parts.push_back(absl::StrCat("device ", u.device, " is used by ", DescribeUser(u)));
  }
  return absl::FailedPreconditionError(
      absl::StrCat(kBusyPrefix, absl::StrJoin(parts, ", "), "; --force runs anyway"));
}

bool IsBusy(const absl::Status& status) {
  return status.code() == absl::StatusCode::kFailedPrecondition &&
         absl::StartsWith(status.message(), kBusyPrefix);
}

}  // namespace colltest::server
