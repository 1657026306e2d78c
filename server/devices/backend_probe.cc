#include "server/devices/backend_probe.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <set>

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/names.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

extern char** environ;

namespace colltest::server {

namespace v1 = ::colltest::v1;

namespace {

constexpr size_t kMaxProbeOutput = 1 << 20;

absl::Status ErrnoError(const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

// The probe's optional fields: absent or of another type reads as empty, so that an older worker's
// line (without them) still parses.
std::string StringField(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}
bool BoolField(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}
uint32_t UintField(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_unsigned()) return 0;
  const uint64_t v = it->get<uint64_t>();
  return v <= UINT32_MAX ? static_cast<uint32_t>(v) : 0;
}

// The probe's links. They only describe the machine, so an entry without both device indices is
// dropped rather than failing the probe (which would leave colltestd without its devices).
std::vector<v1::Link> ParseLinks(const nlohmann::json& j) {
  std::vector<v1::Link> links;
  auto it = j.find("links");
  if (it == j.end() || !it->is_array()) return links;
  for (const nlohmann::json& jl : *it) {
    if (!jl.is_object() || !jl.contains("a") || !jl["a"].is_number_unsigned() ||
        !jl.contains("b") || !jl["b"].is_number_unsigned()) {
      continue;
    }
    v1::Link& l = links.emplace_back();
    l.set_a(jl["a"].get<uint32_t>());
    l.set_b(jl["b"].get<uint32_t>());
    l.set_p2p(BoolField(jl, "p2p"));
    if (jl.contains("performance_rank") && jl["performance_rank"].is_number_integer()) {
      l.set_performance_rank(jl["performance_rank"].get<int32_t>());
    }
    l.set_native_atomics(BoolField(jl, "native_atomics"));
    // An older worker names no kind: what its p2p flag says is all that is known.
    l.set_kind(StringField(jl, "kind"));
    if (l.kind().empty()) l.set_kind(l.p2p() ? "p2p" : "none");
    l.set_hops(UintField(jl, "hops"));
    l.set_lanes(UintField(jl, "lanes"));
  }
  return links;
}

// The probe's capabilities. Required: without them the controller cannot tell what the backend
// runs. A variant name this build does not know is left out: the controller could not ask for it.
absl::StatusOr<colltest::worker::v1::Capabilities> ParseCapabilities(const nlohmann::json& j,
                                                                     absl::string_view line) {
  auto it = j.find("capabilities");
  if (it == j.end() || !it->is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "probe output has no capabilities (a colltest-worker older than colltestd?): ", line));
  }
  colltest::worker::v1::Capabilities caps;
  auto variants = it->find("variants");
  if (variants != it->end() && variants->is_array()) {
    for (const nlohmann::json& name : *variants) {
      if (!name.is_string()) continue;
      std::optional<v1::Variant> v = common::ParseVariantName(name.get<std::string>());
      if (v.has_value()) caps.add_variants(*v);
    }
  }
  caps.set_uses_shared_memory_segments(BoolField(*it, "uses_shared_memory_segments"));
  caps.set_graph_mode(BoolField(*it, "graph_mode"));
  caps.set_reports_devices(BoolField(*it, "reports_devices"));
  return caps;
}

}  // namespace

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == 0) return "unknown";
  return name;
}

BackendInfo WithVirtualDevices(BackendInfo probed, uint32_t ranks) {
  BackendInfo info = std::move(probed);
  info.devices.clear();
  info.links.clear();
  const std::string host = HostName();
  for (uint32_t i = 0; i < ranks; ++i) {
    v1::Device& d = info.devices.emplace_back();
    d.set_index(i);
    d.set_physical_index(i);
    d.set_name(absl::StrCat(info.backend, " rank ", i));
    d.set_backend(info.backend);
    d.set_uuid(absl::StrCat(info.backend, "-", host, "-", i));
  }
  for (uint32_t a = 0; a < ranks; ++a) {
    for (uint32_t b = a + 1; b < ranks; ++b) {
      v1::Link& l = info.links.emplace_back();
      l.set_a(a);
      l.set_b(b);
      l.set_p2p(true);
      l.set_kind("shm");
    }
  }
  return info;
}

absl::StatusOr<BackendInfo> ParseProbeOutput(absl::string_view output) {
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line.front() != '{') continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) continue;

    BackendInfo info;
    if (!j.contains("backend") || !j["backend"].is_string()) {
      return absl::InvalidArgumentError(absl::StrCat("probe output has no backend: ", line));
    }
    info.backend = j["backend"].get<std::string>();
    if (info.backend != "cpu" && info.backend != "cuda" && info.backend != "hip") {
      return absl::InvalidArgumentError(absl::StrCat("probe reported backend ", info.backend));
    }
    if (j.contains("devices") && j["devices"].is_array()) {
      for (const nlohmann::json& jd : j["devices"]) {
        if (!jd.is_object() || !jd.contains("index") || !jd["index"].is_number_unsigned()) {
          return absl::InvalidArgumentError(absl::StrCat("probe device without index: ", line));
        }
        v1::Device& d = info.devices.emplace_back();
        d.set_index(jd["index"].get<uint32_t>());
        d.set_physical_index(d.index());
        d.set_name(StringField(jd, "name"));
        if (jd.contains("memory_bytes") && jd["memory_bytes"].is_number_unsigned()) {
          d.set_memory_bytes(jd["memory_bytes"].get<uint64_t>());
        }
        d.set_backend(info.backend);
        d.set_uuid(StringField(jd, "uuid"));
        d.set_pci_bus_id(StringField(jd, "pci_bus_id"));
        d.set_serial(StringField(jd, "serial"));
      }
    }
    info.driver_version = StringField(j, "driver_version");
    info.runtime_version = StringField(j, "runtime_version");
    info.links = ParseLinks(j);
    COLLTEST_ASSIGN_OR_RETURN(info.capabilities, ParseCapabilities(j, line));
    return info;
  }
  return absl::InvalidArgumentError("probe printed no JSON line");
}

namespace {

// Starts `argv` with its stdout on a new pipe, whose read end goes to `read_fd`.
absl::StatusOr<pid_t> SpawnWithStdoutPipe(const std::vector<std::string>& args, int* read_fd) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return ErrnoError("pipe");
  absl::Cleanup close_write = [&] { close(fds[1]); };
  absl::Cleanup close_read = [&] { close(fds[0]); };

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  absl::Cleanup destroy_actions = [&] { posix_spawn_file_actions_destroy(&actions); };
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);

  // colltestd blocks SIGINT/SIGTERM for its sigwait thread and ignores SIGPIPE; a child would
  // inherit both, so they are reset for it.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  absl::Cleanup destroy_attr = [&] { posix_spawnattr_destroy(&attr); };
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<std::string> owned = args;
  std::vector<char*> argv;
  for (std::string& a : owned) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), environ);
  if (rc != 0) {
    return absl::NotFoundError(absl::StrCat("cannot start ", args[0], ": ", std::strerror(rc)));
  }
  std::move(close_read).Cancel();
  *read_fd = fds[0];
  return pid;
}

// Reads `fd` to its end or to `deadline`; false when the deadline came first.
bool ReadUntil(int fd, absl::Time deadline, std::string* output) {
  while (true) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return false;
    pollfd p{fd, POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
    if (ready <= 0) continue;  // EINTR, or the deadline (checked above)
    char buf[4096];
    const ssize_t got = read(fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return true;
    if (output->size() < kMaxProbeOutput) output->append(buf, static_cast<size_t>(got));
  }
}

}  // namespace

absl::StatusOr<CommandOutcome> RunWorkerCommandOutcome(const std::string& worker,
                                                       const std::vector<std::string>& args,
                                                       absl::Duration timeout) {
  std::vector<std::string> argv = {worker};
  argv.insert(argv.end(), args.begin(), args.end());
  int read_fd = -1;
  absl::StatusOr<pid_t> pid = SpawnWithStdoutPipe(argv, &read_fd);
  if (!pid.ok()) return pid.status();
  absl::Cleanup close_read = [&] { close(read_fd); };

  CommandOutcome outcome;
  outcome.command = absl::StrJoin(argv, " ");
  outcome.timed_out = !ReadUntil(read_fd, absl::Now() + timeout, &outcome.output);
  if (outcome.timed_out) kill(*pid, SIGKILL);
  int status = 0;
  while (waitpid(*pid, &status, 0) < 0 && errno == EINTR) {
  }
  outcome.exited = WIFEXITED(status);
  outcome.exit_code = outcome.exited ? WEXITSTATUS(status) : 0;
  outcome.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return outcome;
}

std::string DescribeEnd(const CommandOutcome& outcome) {
  return outcome.exited ? absl::StrCat("exit status ", outcome.exit_code)
                        : absl::StrCat("signal ", outcome.signal);
}

absl::StatusOr<std::string> RunWorkerCommand(const std::string& worker,
                                             const std::vector<std::string>& args,
                                             absl::Duration timeout) {
  COLLTEST_ASSIGN_OR_RETURN(CommandOutcome outcome, RunWorkerCommandOutcome(worker, args, timeout));
  if (outcome.timed_out) {
    return absl::DeadlineExceededError(
        absl::StrCat(outcome.command, " did not answer within ", absl::FormatDuration(timeout)));
  }
  if (!outcome.exited || outcome.exit_code != 0) {
    return absl::UnavailableError(
        absl::StrCat(outcome.command, " failed (", DescribeEnd(outcome), ")"));
  }
  return std::move(outcome.output);
}

absl::StatusOr<std::string> RunProbe(const std::string& worker, const std::string& backend,
                                     absl::Duration timeout) {
  return RunWorkerCommand(worker, {"--probe", "--backend", backend}, timeout);
}

namespace {

absl::StatusOr<BackendInfo> ProbeBackend(const ProbeFn& probe, const std::string& worker,
                                         const std::string& backend) {
  COLLTEST_ASSIGN_OR_RETURN(std::string output, probe(worker, backend));
  return ParseProbeOutput(output);
}

// A backend with devices of its own (a GPU) that found at least one.
bool HasOwnDevices(const BackendInfo& info) {
  return info.capabilities.reports_devices() && !info.devices.empty();
}

// --backend auto: the GPU the probe found, else the cpu backend, whose own probe answer (the
// first one when it already was, else a second probe) brings its capabilities.
absl::StatusOr<BackendInfo> ResolveAuto(uint32_t cpu_ranks, const std::string& worker,
                                        const ProbeFn& probe) {
  absl::StatusOr<BackendInfo> found = ProbeBackend(probe, worker, "auto");
  if (found.ok() && HasOwnDevices(*found)) {
    found->note =
        absl::StrCat("auto: found ", found->devices.size(), " ", found->backend, " devices");
    return found;
  }
  absl::StatusOr<BackendInfo> cpu = found;
  if (!found.ok() || found->capabilities.reports_devices()) {
    cpu = ProbeBackend(probe, worker, "cpu");
  }
  if (!cpu.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("--backend auto: ", found.ok() ? "no GPU found" : found.status().message(),
                     ", and the cpu backend's probe failed: ", cpu.status().message()));
  }
  BackendInfo info = WithVirtualDevices(*std::move(cpu), cpu_ranks);
  info.note = found.ok() ? absl::StrCat("auto: no GPU found, using the ", info.backend, " backend")
                         : absl::StrCat("auto: the probe failed (", found.status().message(),
                                        "), using the ", info.backend, " backend");
  return info;
}

// --backend cpu|cuda|hip: the probe must answer for that backend, with devices when it has its
// own.
absl::StatusOr<BackendInfo> ResolveNamed(const std::string& requested, uint32_t cpu_ranks,
                                         const std::string& worker, const ProbeFn& probe) {
  absl::StatusOr<BackendInfo> found = ProbeBackend(probe, worker, requested);
  if (!found.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("--backend ", requested, ": ", found.status().message()));
  }
  if (found->backend != requested ||
      (found->capabilities.reports_devices() && found->devices.empty())) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--backend ", requested, ": no ", requested, " device found (the probe reported ",
        found->backend, " with ", found->devices.size(), " devices)"));
  }
  if (!found->capabilities.reports_devices()) {
    return WithVirtualDevices(*std::move(found), cpu_ranks);
  }
  return found;
}

}  // namespace

absl::StatusOr<BackendInfo> ResolveBackend(const std::string& requested, uint32_t cpu_ranks,
                                           const std::vector<uint32_t>& only,
                                           const std::string& worker, const ProbeFn& probe) {
  absl::StatusOr<BackendInfo> resolved = requested == "auto"
                                             ? ResolveAuto(cpu_ranks, worker, probe)
                                             : ResolveNamed(requested, cpu_ranks, worker, probe);
  COLLTEST_RETURN_IF_ERROR(resolved.status());
  BackendInfo info = *std::move(resolved);

  if (!only.empty()) {
    std::vector<v1::Device> kept;
    std::set<uint32_t> seen;
    for (uint32_t index : only) {
      auto it = std::find_if(info.devices.begin(), info.devices.end(),
                             [&](const v1::Device& d) { return d.index() == index; });
      if (it == info.devices.end()) {
        std::vector<uint32_t> have;
        for (const v1::Device& d : info.devices) have.push_back(d.index());
        return absl::InvalidArgumentError(absl::StrCat("--devices ", index, ": no such ",
                                                       info.backend, " device (have ",
                                                       absl::StrJoin(have, ", "), ")"));
      }
      if (seen.insert(index).second) kept.push_back(*it);
    }
    std::sort(kept.begin(), kept.end(),
              [](const v1::Device& a, const v1::Device& b) { return a.index() < b.index(); });
    info.devices = std::move(kept);
    // Links to devices left out describe hardware this daemon does not use.
    std::erase_if(info.links, [&](const v1::Link& l) {
      return seen.count(l.a()) == 0 || seen.count(l.b()) == 0;
    });
  }
  return info;
}

}  // namespace colltest::server
