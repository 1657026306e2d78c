#include "client/flags/flags.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "client/flags/flag_parsing.h"
#include "client/flags/nccl_names.h"
#include "client/flags/quant_flags.h"
#include "client/flags/size_flags.h"
#include "client/flags/suggest.h"
#include "common/defaults.h"
#include "common/fault_spec.h"
#include "common/names.h"
#include "common/parse.h"
#include "common/status_macros.h"

namespace colltest::client {
namespace {

constexpr absl::string_view kVariantsExpected =
    "a comma-separated list of one_stage, two_kernel, lamport, lamport_tb, lamport_two_shot, nccl, "
    "auto, plugin:NAME, or all";
constexpr absl::string_view kPluginPrefix = "plugin:";
constexpr size_t kMaxPluginName = 32;

// A kernel plugin's name, as its struct must spell it (worker/plugins/plugin_fields.h).
bool IsPluginName(absl::string_view name) {
  return !name.empty() && name.size() <= kMaxPluginName &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
         });
}
constexpr absl::string_view kModesExpected = "a comma-separated list of eager, graph, or all";

// The names `health --level` takes, as in `dcgmi diag -r 1|2|3` but spelled out.
std::optional<v1::HealthLevel> ParseHealthLevelName(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (lower == "quick") return v1::HEALTH_LEVEL_QUICK;
  if (lower == "standard") return v1::HEALTH_LEVEL_STANDARD;
  if (lower == "long") return v1::HEALTH_LEVEL_LONG;
  return std::nullopt;
}

absl::StatusOr<v1::DType> ParseDTypeFlag(absl::string_view flag, absl::string_view text) {
  return ParseEnumFlag<v1::DType>(flag, text, ParseDTypeOrNcclName,
                                  "bf16, fp16 or fp32 (nccl-tests: bfloat16, half or float)",
                                  DTypeAndNcclNames());
}

bool AnyByteSizeFlag(const SweepFlags& flags) {
  return flags.bytes.has_value() || flags.bytes_begin.has_value() || flags.bytes_end.has_value() ||
         flags.bytes_factor.has_value();
}

// --hidden and --dtype, then the rows: --m, or the byte-size flags converted with that n and dtype
// (skipped when either failed: their error is the one to fix), or the default.
void ApplyShapeFlags(const SweepFlags& flags, v1::SweepSpec& spec, FlagErrors& errors) {
  const absl::Status n =
      ApplyFlag(flags.n, "--hidden", ParseUint32ListFlag,
                [&](const std::vector<uint32_t>& v) { spec.mutable_n()->Add(v.begin(), v.end()); });
  if (!flags.n.has_value()) spec.add_n(kDefaultN);
  const absl::Status dtype =
      ApplyFlag(flags.dtype, "--dtype", ParseDTypeFlag, [&](v1::DType v) { spec.set_dtype(v); });
  if (!flags.dtype.has_value()) spec.set_dtype(v1::DTYPE_BF16);
  // Reported in the order of --help: the rows, then n and dtype.
  errors.Add(ApplyFlag(flags.m, "--m", ParseUint32ListFlag, [&](const std::vector<uint32_t>& v) {
    spec.mutable_m()->Add(v.begin(), v.end());
  }));
  if (AnyByteSizeFlag(flags) && n.ok() && dtype.ok()) {
    absl::StatusOr<std::vector<uint32_t>> rows =
        ResolveRows(flags, std::vector<uint32_t>(spec.n().begin(), spec.n().end()), spec.dtype());
    if (!rows.ok()) {
      errors.Add(rows.status());
    } else if (!rows->empty()) {
      spec.clear_m();
      spec.mutable_m()->Add(rows->begin(), rows->end());
    }
  }
  if (!flags.m.has_value() && spec.m_size() == 0) {
    for (uint32_t m : kDefaultRows) spec.add_m(m);
  }
  errors.Add(n);
  errors.Add(dtype);
}

// --variants and --modes: unset (or `all` variants) become the defaults.
void ApplyCaseFlags(const SweepFlags& flags, v1::SweepSpec& spec, FlagErrors& errors) {
  // Parsed even when the server's list will be used, so that "all,lampor" is still a typo.
  const bool from_server = VariantsFromServer(flags);
  errors.Add(ApplyFlag(flags.variants, "--variants", ParseKernelsFlag, [&](const KernelChoice& k) {
    for (const std::string& plugin : k.plugins) spec.add_plugins(plugin);
    if (from_server) return;
    for (v1::Variant variant : k.variants) spec.add_variants(variant);
  }));
  errors.Add(ApplyFlag(flags.modes, "--modes", ParseModesFlag, [&](const std::vector<v1::Mode>& v) {
    for (v1::Mode mode : v) spec.add_modes(mode);
  }));
  if (!flags.modes.has_value()) {
    spec.add_modes(v1::MODE_EAGER);
    spec.add_modes(v1::MODE_GRAPH);
  }
  auto pattern = [](absl::string_view flag, absl::string_view text) {
    return ParseEnumFlag<v1::Pattern>(flag, text, common::ParsePatternName,
                                      OneOf(common::PatternNames()), common::PatternNames());
  };
  auto tolerance = [](absl::string_view flag, absl::string_view text) {
    return ParseEnumFlag<v1::Tolerance>(flag, text, common::ParseToleranceName,
                                        "strict, aiter or trtllm", common::ToleranceNames());
  };
  errors.Add(
      ApplyFlag(flags.pattern, "--pattern", pattern, [&](v1::Pattern v) { spec.set_pattern(v); }));
  errors.Add(ApplyFlag(flags.tolerance, "--tolerance", tolerance,
                       [&](v1::Tolerance v) { spec.set_tolerance(v); }));
  ApplyQuantFlags(flags, spec, errors);
}

// --world and --devices: unset, every device the server selects.
void ApplyGroupFlags(const SweepFlags& flags, v1::SweepSpec& spec, FlagErrors& errors) {
  errors.Add(ApplyFlag(flags.world, "--world", ParseUint32Flag,
                       [&](uint32_t v) { spec.set_world_size(v); }));
  errors.Add(ApplyFlag(
      flags.devices, "--devices", ParseUint32ListFlag,
      [&](const std::vector<uint32_t>& v) { spec.mutable_devices()->Add(v.begin(), v.end()); }));
}

// Counts, the timeout, eps, the fault, the label and the kernel knobs: unset stays 0 (or empty),
// which the server reads as its default.
void ApplyRunFlags(const SweepFlags& flags, v1::SweepSpec& spec, FlagErrors& errors) {
  v1::Knobs& knobs = *spec.mutable_knobs();
  const auto u32 = ParseUint32Flag;
  auto text = [](absl::string_view, absl::string_view value) -> absl::StatusOr<std::string> {
    return std::string(value);
  };
  errors.Add(ApplyFlag(flags.warmup, "--warmup", u32, [&](uint32_t v) { spec.set_warmup(v); }));
  errors.Add(ApplyFlag(flags.iters, "--iters", u32, [&](uint32_t v) { spec.set_iters(v); }));
  if (flags.check.has_value()) errors.Add(ParseCheckFlag("--check", *flags.check));
  errors.Add(
      ApplyFlag(flags.stress, "--stress", u32, [&](uint32_t v) { spec.set_stress_calls(v); }));
  errors.Add(
      ApplyFlag(flags.seed, "--seed", ParseUint64Flag, [&](uint64_t v) { spec.set_seed(v); }));
  errors.Add(ApplyFlag(flags.timeout, "--timeout", ParseTimeoutMsFlag,
                       [&](uint32_t v) { spec.set_timeout_ms(v); }));
  errors.Add(ApplyFlag(flags.eps, "--eps", ParseFloatFlag, [&](float v) { spec.set_eps(v); }));
  errors.Add(ApplyFlag(flags.fault, "--fault", ParseFaultFlag,
                       [&](std::string v) { spec.set_fault(std::move(v)); }));
  errors.Add(ApplyFlag(flags.grid_blocks, "--grid-blocks", u32,
                       [&](uint32_t v) { knobs.set_grid_blocks(v); }));
  errors.Add(ApplyFlag(flags.threads_per_block, "--threads-per-block", u32,
                       [&](uint32_t v) { knobs.set_threads_per_block(v); }));
  errors.Add(ApplyFlag(flags.lamport_min_bytes, "--lamport-min-bytes", ParseByteSizeFlag,
                       [&](uint64_t v) { knobs.set_lamport_min_bytes(v); }));
  errors.Add(ApplyFlag(flags.arm_repeat, "--arm-repeat", u32,
                       [&](uint32_t v) { knobs.set_arm_repeat(v); }));
  errors.Add(ApplyFlag(flags.label, "--label", text,
                       [&](std::string v) { spec.set_label(std::move(v)); }));
  // An all-default Knobs message is the same as none on the wire, but leaving it unset keeps the
  // request (and the run history's copy of it) free of an empty sub-message.
  if (knobs.ByteSizeLong() == 0) spec.clear_knobs();
}

// `tune`'s --epilogue, one (a table stands for one epilogue), and the flags the epilogues take,
// through `run`'s parsers.
absl::Status ApplyTuneEpilogueFlags(const TuneFlags& flags, v1::SweepSpec& spec) {
  auto one_epilogue = [](absl::string_view flag,
                         absl::string_view text) -> absl::StatusOr<v1::Epilogue> {
    COLLTEST_ASSIGN_OR_RETURN(const std::vector<v1::Epilogue> epilogues,
                              ParseEpiloguesFlag(flag, text));
    if (epilogues.size() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          flag, ": '", text,
          "' names more than one epilogue: a tune table is for one epilogue, tune each apart"));
    }
    return epilogues.front();
  };
  FlagErrors errors;
  errors.Add(ApplyFlag(flags.epilogue, "--epilogue", one_epilogue,
                       [&](v1::Epilogue e) { spec.add_epilogues(e); }));
  SweepFlags quant;
  quant.keep_normed = flags.keep_normed;
  quant.fp8_format = flags.fp8_format;
  quant.fp8_scale = flags.fp8_scale;
  quant.nvfp4_global_scale = flags.nvfp4_global_scale;
  ApplyQuantFlags(quant, spec, errors);
  return errors.status();
}

}  // namespace

absl::StatusOr<uint64_t> ParseUint64Flag(absl::string_view flag, absl::string_view text) {
  return common::ParseCount(flag, text);
}

absl::StatusOr<uint32_t> ParseUint32Flag(absl::string_view flag, absl::string_view text) {
  COLLTEST_ASSIGN_OR_RETURN(const uint64_t value,
                            common::ParseCount(flag, text, std::numeric_limits<uint32_t>::max()));
  return static_cast<uint32_t>(value);
}

absl::StatusOr<uint64_t> ParseByteSizeFlag(absl::string_view flag, absl::string_view text) {
  return common::ParseByteSize(flag, text);
}

absl::StatusOr<float> ParseFloatFlag(absl::string_view flag, absl::string_view text) {
  float value = 0;
  if (!absl::SimpleAtof(absl::StripAsciiWhitespace(text), &value) || !std::isfinite(value)) {
    return FlagError(flag, text, "a finite number");
  }
  return value;
}

absl::StatusOr<std::vector<uint32_t>> ParseUint32ListFlag(absl::string_view flag,
                                                          absl::string_view text) {
  COLLTEST_ASSIGN_OR_RETURN(const std::vector<uint64_t> wide,
                            common::ParseList(flag, text, std::numeric_limits<uint32_t>::max()));
  return std::vector<uint32_t>(wide.begin(), wide.end());
}

absl::StatusOr<std::vector<v1::Variant>> ParseVariantsFlag(absl::string_view flag,
                                                           absl::string_view text) {
  std::vector<v1::Variant> all;
  for (int v = v1::VARIANT_ONE_STAGE; v <= v1::Variant_MAX; ++v) {
    // A kernel plugin is named (plugin:NAME), never one of `all`.
    if (v != v1::VARIANT_PLUGIN) all.push_back(static_cast<v1::Variant>(v));
  }
  return ParseNameList<v1::Variant>(flag, text, "variant", common::ParseVariantName, all,
                                    common::VariantNames(), kVariantsExpected);
}

absl::StatusOr<KernelChoice> ParseKernelsFlag(absl::string_view flag, absl::string_view text) {
  KernelChoice choice;
  std::vector<std::string> named;
  FlagErrors errors;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    const absl::string_view trimmed = absl::StripAsciiWhitespace(item);
    const std::string lower = absl::AsciiStrToLower(trimmed);
    if (lower == "plugin") {
      errors.Add(absl::InvalidArgumentError(
          absl::StrCat(flag, ": 'plugin' needs the plugin's name: plugin:NAME")));
    } else if (absl::StartsWith(lower, kPluginPrefix)) {
      const absl::string_view name = trimmed.substr(kPluginPrefix.size());
      if (!IsPluginName(name)) {
        errors.Add(absl::InvalidArgumentError(absl::StrCat(flag, ": '", trimmed,
                                                           "': a plugin's name is 1 to ",
                                                           kMaxPluginName, " of a-z, 0-9 and _")));
      } else if (std::find(choice.plugins.begin(), choice.plugins.end(), name) ==
                 choice.plugins.end()) {
        choice.plugins.emplace_back(name);
      }
    } else {
      named.emplace_back(trimmed);
    }
  }
  COLLTEST_RETURN_IF_ERROR(errors.status());
  if (named.empty() && !choice.plugins.empty()) return choice;
  COLLTEST_ASSIGN_OR_RETURN(choice.variants, ParseVariantsFlag(flag, absl::StrJoin(named, ",")));
  return choice;
}

absl::StatusOr<std::vector<v1::Mode>> ParseModesFlag(absl::string_view flag,
                                                     absl::string_view text) {
  return ParseNameList<v1::Mode>(flag, text, "mode", common::ParseModeName,
                                 {v1::MODE_EAGER, v1::MODE_GRAPH}, common::ModeNames(),
                                 kModesExpected);
}

bool VariantsFromServer(const SweepFlags& flags) {
  if (!flags.variants.has_value()) return true;
  for (absl::string_view item : absl::StrSplit(*flags.variants, ',')) {
    if (absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(item), "all")) return true;
  }
  return false;
}

void UseServerVariants(const v1::ListDevicesResponse& devices, v1::SweepSpec& spec) {
  spec.clear_variants();
  for (int v : devices.variants()) spec.add_variants(static_cast<v1::Variant>(v));
}

absl::StatusOr<uint32_t> ParseTimeoutMsFlag(absl::string_view flag, absl::string_view text) {
  COLLTEST_ASSIGN_OR_RETURN(absl::Duration duration, common::ParseDuration(flag, text));
  // Rounded up: "100us" truncated to 0 would mean "the server's default" (5 s), not "very short".
  const absl::Duration ms = absl::Milliseconds(1);
  int64_t whole_ms = absl::IDivDuration(duration, ms, &duration);
  if (duration > absl::ZeroDuration()) ++whole_ms;
  if (whole_ms > std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": '", absl::StripAsciiWhitespace(text),
                                                   "' is ", whole_ms, " ms, the limit is ",
                                                   std::numeric_limits<uint32_t>::max()));
  }
  return static_cast<uint32_t>(whole_ms);
}

absl::StatusOr<std::string> ParseFaultFlag(absl::string_view flag, absl::string_view text) {
  const absl::string_view trimmed = absl::StripAsciiWhitespace(text);
  // World 0: the ranks are checked by the server, which knows the world of the request.
  COLLTEST_RETURN_IF_ERROR(common::ParseFaultSpec(flag, trimmed, 0).status());
  return std::string(trimmed);
}

absl::StatusOr<double> ParseWarnRatioFlag(absl::string_view flag, absl::string_view text) {
  constexpr absl::string_view kExpected = "a number above 1 (a multiple of the median latency)";
  double value = 0;
  if (!absl::SimpleAtod(absl::StripAsciiWhitespace(text), &value) || !std::isfinite(value)) {
    return FlagError(flag, text, kExpected);
  }
  if (value <= 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": '", text, "' is not above 1: expected ", kExpected));
  }
  return value;
}

absl::StatusOr<v1::SweepSpec> BuildSweepSpec(const SweepFlags& flags) {
  v1::SweepSpec spec;
  FlagErrors errors;
  ApplyGroupFlags(flags, spec, errors);
  ApplyShapeFlags(flags, spec, errors);
  ApplyCaseFlags(flags, spec, errors);
  ApplyRunFlags(flags, spec, errors);
  COLLTEST_RETURN_IF_ERROR(errors.status());
  spec.set_no_residual(flags.no_residual);
  spec.set_stop_on_failure(flags.stop_on_failure);
  spec.set_force(flags.force);
  return spec;
}

absl::StatusOr<v1::HealthRequest> BuildHealthRequest(const HealthFlags& flags) {
  v1::HealthRequest request;
  auto level = [](absl::string_view flag, absl::string_view text) {
    return ParseEnumFlag<v1::HealthLevel>(flag, text, ParseHealthLevelName,
                                          "quick, standard or long", {"quick", "standard", "long"});
  };
  FlagErrors status;
  status.Add(ApplyFlag(flags.timeout, "--timeout", ParseTimeoutMsFlag,
                       [&](uint32_t v) { request.set_timeout_ms(v); }));
  status.Add(ApplyFlag(
      flags.devices, "--devices", ParseUint32ListFlag,
      [&](const std::vector<uint32_t>& v) { request.mutable_devices()->Add(v.begin(), v.end()); }));
  status.Add(ApplyFlag(flags.fault, "--fault", ParseFaultFlag,
                       [&](std::string v) { request.set_fault(std::move(v)); }));
  status.Add(ApplyFlag(flags.warn_ratio, "--warn-ratio", ParseWarnRatioFlag,
                       [&](double v) { request.set_warn_ratio(v); }));
  status.Add(
      ApplyFlag(flags.level, "--level", level, [&](v1::HealthLevel v) { request.set_level(v); }));
  // A check runs its level's own variants; kernel plugins are what it may add.
  auto plugins_only = [](absl::string_view flag,
                         absl::string_view text) -> absl::StatusOr<std::vector<std::string>> {
    COLLTEST_ASSIGN_OR_RETURN(KernelChoice k, ParseKernelsFlag(flag, text));
    if (!k.variants.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag,
                       ": a health check runs its level's variants; it takes kernel plugins only "
                       "(plugin:NAME)"));
    }
    return k.plugins;
  };
  status.Add(
      ApplyFlag(flags.variants, "--variants", plugins_only, [&](const std::vector<std::string>& v) {
        for (const std::string& p : v) request.add_plugins(p);
      }));
  // Milliseconds rounded up like --timeout: "500us" must not become 0, which disables the cache.
  status.Add(ApplyFlag(flags.max_verdict_age, "--max-verdict-age", ParseTimeoutMsFlag,
                       [&](uint32_t v) { request.set_max_verdict_age_ms(v); }));
  COLLTEST_RETURN_IF_ERROR(status.status());
  request.set_pairs(flags.pairs);
  request.set_force(flags.force);
  return request;
}

absl::StatusOr<v1::SweepSpec> BuildTuneSpec(const TuneFlags& flags) {
  v1::SweepSpec spec;
  spec.add_n(7168);
  spec.set_dtype(v1::DTYPE_BF16);
  for (uint32_t m : {1, 8, 16, 32, 64, 128, 256, 512, 1024}) spec.add_m(m);
  spec.add_modes(v1::MODE_GRAPH);
  for (v1::Variant v : {v1::VARIANT_ONE_STAGE, v1::VARIANT_TWO_KERNEL, v1::VARIANT_LAMPORT,
                        v1::VARIANT_LAMPORT_TB}) {
    spec.add_variants(v);
  }
  spec.set_pattern(v1::PATTERN_NORMAL);
  spec.set_tolerance(v1::TOLERANCE_STRICT);
  spec.set_warmup(20);
  spec.set_iters(200);
  spec.set_timeout_ms(kDefaultCaseTimeoutMs);
  spec.set_label("tune");

  auto u32 = [](absl::string_view flag, absl::string_view text) {
    return ParseUint32Flag(flag, text);
  };
  const auto dtype = ParseDTypeFlag;
  auto world = [](absl::string_view flag, absl::string_view text) -> absl::StatusOr<uint32_t> {
    absl::StatusOr<uint32_t> value = ParseUint32Flag(flag, text);
    if (value.ok() && *value == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": '", text, "' is not a rank count: expected 1 or more"));
    }
    return value;
  };
  auto one_n = [](absl::string_view flag, absl::string_view text) -> absl::StatusOr<uint32_t> {
    if (absl::StrContains(text, ',')) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": '", text,
                       "' is a list: a tune table is for one hidden size, tune each n apart"));
    }
    return ParseUint32Flag(flag, text);
  };

  absl::Status status;
  if (!flags.world.has_value()) {
    status.Update(
        absl::InvalidArgumentError("--world: required: the number of ranks the table is for"));
  }
  status.Update(ApplyFlag(flags.world, "--world", world, [&](uint32_t v) {
    spec.set_world_size(v);
    // Two trips that halve nothing at 2 ranks (each moves the whole input once, as lamport_tb):
    // tuned where it moves fewer bytes than one-shot (docs/protocol.md).
    if (v >= 4) spec.add_variants(v1::VARIANT_LAMPORT_TWO_SHOT);
  }));
  status.Update(ApplyFlag(flags.n, "--hidden", one_n, [&](uint32_t v) { spec.set_n(0, v); }));
  status.Update(ApplyFlag(flags.dtype, "--dtype", dtype, [&](v1::DType v) { spec.set_dtype(v); }));
  status.Update(ApplyFlag(flags.m, "--m", ParseUint32ListFlag, [&](std::vector<uint32_t> v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    spec.clear_m();
    spec.mutable_m()->Add(v.begin(), v.end());
  }));
  status.Update(ApplyFlag(
      flags.modes, "--modes",
      [](absl::string_view flag, absl::string_view text) -> absl::StatusOr<v1::Mode> {
        absl::StatusOr<std::vector<v1::Mode>> modes = ParseModesFlag(flag, text);
        if (!modes.ok()) return modes.status();
        if (std::any_of(modes->begin(), modes->end(),
                        [&](v1::Mode m) { return m != modes->front(); })) {
          return absl::InvalidArgumentError(absl::StrCat(
              flag, ": '", text,
              "' names more than one mode: a tune table is for one mode, tune each apart"));
        }
        return modes->front();
      },
      [&](v1::Mode v) { spec.set_modes(0, v); }));
  status.Update(ApplyFlag(
      flags.variants, "--variants",
      [&](absl::string_view flag, absl::string_view text) -> absl::StatusOr<KernelChoice> {
        absl::StatusOr<KernelChoice> parsed = ParseKernelsFlag(flag, text);
        if (!parsed.ok()) return parsed.status();
        if (std::find(parsed->variants.begin(), parsed->variants.end(), v1::VARIANT_AUTO) !=
            parsed->variants.end()) {
          return absl::InvalidArgumentError(absl::StrCat(
              flag, ": '", text,
              "' includes auto, which dispatches through the table being built: list the "
              "variants it may pick"));
        }
        // A table that may pick a plugin makes `auto` run code colltest did not write: only when
        // asked for.
        if (!parsed->plugins.empty() && !flags.tune_plugins) {
          return absl::InvalidArgumentError(
              absl::StrCat(flag, ": '", kPluginPrefix, parsed->plugins.front(),
                           "': auto picks a kernel plugin only when asked: add --tune-plugins"));
        }
        return parsed;
      },
      [&](const KernelChoice& k) {
        spec.clear_variants();
        for (v1::Variant variant : k.variants) {
          if (std::find(spec.variants().begin(), spec.variants().end(), variant) ==
              spec.variants().end()) {
            spec.add_variants(variant);
          }
        }
        // ParseKernelsFlag names each plugin once; the sweep lists them after the variants.
        for (const std::string& plugin : k.plugins) spec.add_plugins(plugin);
      }));
  if (flags.tune_plugins && spec.plugins().empty()) {
    status.Update(absl::InvalidArgumentError(
        "--tune-plugins: --variants names no kernel plugin (plugin:NAME) to tune"));
  }
  status.Update(ApplyFlag(flags.warmup, "--warmup", u32, [&](uint32_t v) { spec.set_warmup(v); }));
  status.Update(ApplyFlag(flags.iters, "--iters", u32, [&](uint32_t v) { spec.set_iters(v); }));
  status.Update(ApplyFlag(flags.timeout, "--timeout", ParseTimeoutMsFlag,
                          [&](uint32_t v) { spec.set_timeout_ms(v); }));
  status.Update(ApplyTuneEpilogueFlags(flags, spec));
  if (!status.ok()) return status;
  return spec;
}

}  // namespace colltest::client
