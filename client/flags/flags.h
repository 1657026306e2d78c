// Translation of the `run` / `sweep` command-line flags into a SweepSpec, of the `health` flags
// into a HealthRequest, and of the `tune` flags into the SweepSpec of its one sweep.
//
// Only syntax is checked here: a value that does not parse (or cannot be represented in the proto
// field) is rejected with a message naming the flag, and an unknown name gets a "did you mean"
// hint (client/flags/suggest.h). Every bad flag of a command line is reported at once, one line
// each, in one INVALID_ARGUMENT. Ranges and combinations are left to the server, which is the
// authority and answers INVALID_ARGUMENT naming the field. The exceptions are --warn-ratio (see
// ParseWarnRatioFlag), the epilogues' scales (ParseQuantScaleFlag, quant_flags.h) and the `tune`
// rules (see BuildTuneSpec).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "client/flags/sweep_flags.h"
#include "colltest/v1/colltest.pb.h"

namespace colltest::client {

// The defaults of `run` and `sweep` that the client fills in (BuildSweepSpec): one hidden size, and
// m = 1:1024:x4 from a single token to a large batch.
inline constexpr uint32_t kDefaultN = 7168;
inline constexpr uint32_t kDefaultRows[] = {1, 4, 16, 64, 256, 1024};

// Defaults: n 7168, bf16, m 1,4,16,64,256,1024 (unless --m or the byte-size flags give the rows:
// ResolveRows of client/flags/size_flags.h), modes eager and graph. World and devices stay 0 and
// empty
// ("every device the server selects"), and variants stay empty when VariantsFromServer: the
// caller asks the server (UseServerVariants) before it sends the spec.
absl::StatusOr<v1::SweepSpec> BuildSweepSpec(const SweepFlags& flags);

// True when the sweep's variants are the ones the server's backend offers: --variants not given,
// or `all` among its items. Every variant by name would include some that the backend cannot run
// (nccl and auto on cpu), each an UNSUPPORTED row.
bool VariantsFromServer(const SweepFlags& flags);

// Replaces the spec's variants with those of a ListDevices answer, in its order.
void UseServerVariants(const v1::ListDevicesResponse& devices, v1::SweepSpec& spec);

struct HealthFlags {
  bool pairs = false;
  std::optional<std::string> timeout;
  std::optional<std::string> devices;
  std::optional<std::string> fault;
  std::optional<std::string> warn_ratio;
  std::optional<std::string> level;            // quick|standard|long
  std::optional<std::string> variants;         // kernel plugins only: plugin:NAME,...
  bool force = false;                          // HealthRequest.force
  std::optional<std::string> max_verdict_age;  // DURATION: HealthRequest.max_verdict_age_ms
  // node-problem-detector mode: CollectiveHang or CollectiveWrong. Prints one line and exits
  // 0 (condition false), 1 (condition true) or 2 (unknown) as NPD's custom plugins do.
  std::optional<std::string> npd;
  // Fleet mode (client/fleet/fleet.h): the nodes to ask instead of --server.
  std::optional<std::string> targets;       // host:port,host:port or a DNS name:port
  std::optional<std::string> targets_file;  // one host:port per line, # comments
  std::optional<std::string> parallel;      // nodes asked at once (default 32)
  std::optional<std::string> node_timeout;  // DURATION per node and attempt
  std::optional<std::string> retries;       // extra attempts for an unreachable node (default 2)
};

absl::StatusOr<v1::HealthRequest> BuildHealthRequest(const HealthFlags& flags);

// `tune` has its own defaults (below), so unset flags do not fall back to the server's.
struct TuneFlags {
  std::optional<std::string> world;
  std::optional<std::string> n;
  std::optional<std::string> dtype;
  std::optional<std::string> m;
  std::optional<std::string> modes;
  std::optional<std::string> variants;
  // --tune-plugins: the kernel plugins --variants names (plugin:NAME) are timed too, and the
  // table may pick them for `auto`; without it a plugin in --variants is refused.
  bool tune_plugins = false;
  std::optional<std::string> warmup;
  std::optional<std::string> iters;
  std::optional<std::string> timeout;
  // The epilogue the table is measured with and stands for (one), and the flags it takes, as
  // `run`'s (client/flags/quant_flags.h).
  std::optional<std::string> epilogue;
  bool keep_normed = false;
  std::optional<std::string> fp8_format;
  std::optional<std::string> fp8_scale;
  std::optional<std::string> nvfp4_global_scale;
};

// Defaults: n 7168, bf16, m 1,8,16,32,64,128,256,512,1024, graph, variants one_stage, two_kernel,
// lamport, lamport_tb, 20 warm-up and 200 timed calls, 5 s timeout; always pattern normal, strict
// tolerance, residual on, label "tune". A table stands for one (world, dtype, mode, n), so these
// are refused rather than passed on: --world missing or 0 (the proto's 0 means "every device", a
// world the table could not name), more than one n, mode or epilogue, and `auto` among the
// variants (it would be timed through the very table being built). No --epilogue leaves the spec's
// epilogues empty (none). Repeated m and variants are dropped and m
// sorted, so that each table row is one m, in order. Kernel plugins (plugin:NAME in --variants)
// go to SweepSpec.plugins, after colltest's own variants, only with --tune-plugins: `auto` picks
// a plugin only when asked (docs/plugins.md); --tune-plugins without a plugin is refused too.
absl::StatusOr<v1::SweepSpec> BuildTuneSpec(const TuneFlags& flags);

// The parsers below take the flag name only to put it in the error message.

// Counts and sizes use the grammar shared with colltestd (common/parse.h): a decimal with an
// optional K, M, G or T suffix, powers of 1024 ("8k" = 8192), so a value means the same and a bad
// one gets the same message on both sides.
absl::StatusOr<uint32_t> ParseUint32Flag(absl::string_view flag, absl::string_view text);
absl::StatusOr<uint64_t> ParseUint64Flag(absl::string_view flag, absl::string_view text);
// Bytes: also "32MiB", "1MB", "512B".
absl::StatusOr<uint64_t> ParseByteSizeFlag(absl::string_view flag, absl::string_view text);
absl::StatusOr<float> ParseFloatFlag(absl::string_view flag, absl::string_view text);
// "1,8,64", or ranges: "8..128" (doubling), "8..128:x4", "1..8:+1" (common::ParseList).
absl::StatusOr<std::vector<uint32_t>> ParseUint32ListFlag(absl::string_view flag,
                                                          absl::string_view text);
// "lamport,nccl" or "all" (every variant, `auto` included; BuildSweepSpec reads `all` as the
// server's variants instead). Every unknown item is reported, one line each.
absl::StatusOr<std::vector<v1::Variant>> ParseVariantsFlag(absl::string_view flag,
                                                           absl::string_view text);
// What --variants names: variants (as ParseVariantsFlag) and kernel plugins ("plugin:NAME",
// NAME of [a-z0-9_]{1,32}, docs/plugins.md), each once, in the order given.
struct KernelChoice {
  std::vector<v1::Variant> variants;
  std::vector<std::string> plugins;
};
absl::StatusOr<KernelChoice> ParseKernelsFlag(absl::string_view flag, absl::string_view text);
// "eager,graph" or "all".
absl::StatusOr<std::vector<v1::Mode>> ParseModesFlag(absl::string_view flag,
                                                     absl::string_view text);
// A duration of the shared grammar ("5s", "500ms", "1m30s", or a bare number of milliseconds,
// "500"; common::ParseDuration), in whole milliseconds rounded up.
absl::StatusOr<uint32_t> ParseTimeoutMsFlag(absl::string_view flag, absl::string_view text);
// The fault grammar of common/fault_spec.h, syntax and argument counts only (the server checks
// the ranks against the request's world); returned as typed, without surrounding blanks.
absl::StatusOr<std::string> ParseFaultFlag(absl::string_view flag, absl::string_view text);
// A finite number above 1. Checked here rather than left to the server because the proto reads 0
// as "the default 1.5": `--warn-ratio 0` would silently mean 1.5, and a ratio <= 1 would flag
// half of the targets as slow.
absl::StatusOr<double> ParseWarnRatioFlag(absl::string_view flag, absl::string_view text);

}  // namespace colltest::client
