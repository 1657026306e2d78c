#include "server/devices/concurrency_check.h"

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "nlohmann/json.hpp"

namespace colltest::server {
namespace {

// How ranks that share a GPU get concurrent kernels, and the other ways out: the end of every
// refusal, so that whoever reads the log needs nothing else to fix it.
constexpr absl::string_view kRemedy =
    "Ranks that share a GPU spin-wait on each other's flags, so their processes' kernels must run "
    "concurrently. On NVIDIA GPUs that takes MPS: start its control daemon as root with "
    "CUDA_MPS_PIPE_DIRECTORY and CUDA_MPS_LOG_DIRECTORY set "
    "(`CUDA_MPS_PIPE_DIRECTORY=/run/nvidia-mps "
    "CUDA_MPS_LOG_DIRECTORY=/var/log/nvidia-mps nvidia-cuda-mps-control -d`), start colltestd with "
    "the same CUDA_MPS_PIPE_DIRECTORY in its environment, and stop MPS with `echo quit | "
    "nvidia-cuda-mps-control`. Or pass --allow-time-slicing to start anyway (every wait then costs "
    "a time slice and case timeouts grow to match), or use --ranks-per-gpu 1. See "
    "docs/shared-gpu.md.";

// "GPU 0 (NVIDIA H200)".
std::string GpuName(const BackendInfo& info) {
  const colltest::v1::Device& d = info.devices.front();
  return d.name().empty() ? absl::StrCat("GPU ", d.physical_index())
                          : absl::StrCat("GPU ", d.physical_index(), " (", d.name(), ")");
}

// What the probe measured, as a clause: "a flag round trip between them took 4482.1 us (median
// of 22)", or why none was measured.
std::string Measured(const ConcurrencyProbeResult& r) {
  if (r.round_trips == 0) {
    return absl::StrCat("no flag round trip between them completed",
                        r.note.empty() ? "" : absl::StrCat(" (", r.note, ")"));
  }
  return absl::StrFormat("a flag round trip between them took %.2f us (median of %u)",
                         r.round_trip_us, r.round_trips);
}

// The verdict for a probe that failed (`error`) or found time slicing (`result`).
absl::StatusOr<ConcurrencyVerdict> NotConcurrent(const BackendInfo& info, bool allow_time_slicing,
                                                 const std::string& error,
                                                 const ConcurrencyProbeResult& result) {
  const std::string flag = absl::StrCat("--ranks-per-gpu ", info.ranks_per_gpu);
  const std::string what =
      error.empty() ? absl::StrCat("the kernels of two processes on ", GpuName(info),
                                   " are time-sliced, not concurrent: ", Measured(result))
                    : absl::StrCat("cannot tell whether the kernels of two processes on ",
                                   GpuName(info), " run concurrently: the probe failed: ", error);
  if (!allow_time_slicing) {
    return absl::FailedPreconditionError(absl::StrCat(flag, ": ", what, ". ", kRemedy));
  }
  ConcurrencyVerdict verdict;
  verdict.checked = true;
  verdict.time_sliced = true;
  verdict.round_trip_us = error.empty() ? result.round_trip_us : 0;
  verdict.device = info.devices.front().physical_index();
  verdict.summary = absl::StrCat(
      flag, " --allow-time-slicing: ", what, error.empty() ? "" : " (taken as time-sliced)",
      ". Ranks sharing a GPU then wait a time slice for each other's flags; MPS on NVIDIA makes "
      "their kernels concurrent (docs/shared-gpu.md)");
  return verdict;
}

}  // namespace

absl::StatusOr<ConcurrencyProbeResult> ParseConcurrencyProbe(absl::string_view output) {
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line.front() != '{') continue;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) continue;
    auto concurrent = j.find("concurrent");
    if (concurrent == j.end() || !concurrent->is_boolean()) continue;
    ConcurrencyProbeResult r;
    r.concurrent = concurrent->get<bool>();
    if (auto it = j.find("round_trip_us"); it != j.end() && it->is_number()) {
      r.round_trip_us = it->get<double>();
    }
    if (auto it = j.find("round_trips"); it != j.end() && it->is_number_unsigned()) {
      r.round_trips = it->get<uint32_t>();
    }
    if (auto it = j.find("note"); it != j.end() && it->is_string()) r.note = it->get<std::string>();
    if (auto it = j.find("error"); it != j.end() && it->is_string()) {
      r.error = it->get<std::string>();
    }
    return r;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("the concurrency probe printed no JSON line with \"concurrent\": ",
                   absl::StripAsciiWhitespace(output).substr(0, 200)));
}

absl::StatusOr<std::string> RunConcurrencyProbe(const std::string& worker,
                                                const std::string& backend, uint32_t device) {
  return RunWorkerCommand(
      worker, {"--concurrency-probe", "--backend", backend, "--device", absl::StrCat(device)},
      kConcurrencyProbeTimeout);
}

absl::StatusOr<ConcurrencyVerdict> CheckConcurrentKernels(const BackendInfo& info,
                                                          bool allow_time_slicing,
                                                          const std::string& worker,
                                                          const ConcurrencyProbeFn& probe) {
  if (info.ranks_per_gpu <= 1 || info.devices.empty()) return ConcurrencyVerdict{};
  const uint32_t device = info.devices.front().physical_index();
  absl::StatusOr<std::string> output = probe(worker, info.backend, device);
  absl::StatusOr<ConcurrencyProbeResult> result =
      output.ok() ? ParseConcurrencyProbe(*output) : output.status();
  if (!result.ok()) {
    return NotConcurrent(info, allow_time_slicing, std::string(result.status().message()), {});
  }
  if (!result->error.empty()) {
    return NotConcurrent(info, allow_time_slicing, result->error, *result);
  }
  if (!result->concurrent) return NotConcurrent(info, allow_time_slicing, "", *result);
  ConcurrencyVerdict verdict;
  verdict.checked = true;
  verdict.round_trip_us = result->round_trip_us;
  verdict.device = device;
  verdict.summary = absl::StrFormat(
      "--ranks-per-gpu %u: the kernels of two processes on %s run concurrently (a flag round trip "
      "between them took %.2f us, median of %u)",
      info.ranks_per_gpu, GpuName(info), result->round_trip_us, result->round_trips);
  return verdict;
}

}  // namespace colltest::server
