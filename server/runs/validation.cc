#include "server/runs/validation.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "common/element_size.h"
#include "common/fault_spec.h"
#include "common/names.h"
#include "common/status_macros.h"
#include "common/text.h"
#include "server/runs/sweep_plan.h"

namespace colltest::server {
namespace {

namespace v1 = ::colltest::v1;

absl::Status Invalid(std::string message) { return absl::InvalidArgumentError(message); }

// "unknown variant (one_stage, two_kernel, ...)": the names a user may give instead, read off the
// one table (common/names.h) so that a new value is offered as soon as it is named.
std::string Unknown(absl::string_view what, const std::vector<std::string>& names) {
  return absl::StrCat(": unknown ", what, " (", absl::StrJoin(names, ", "), ")");
}

// The independent problems of one spec, so that a request hears about all of them at once: their
// messages joined by "; " (one line, as the message is logged and kept with the run), with the
// first problem's code.
class Problems {
 public:
  // Returns whether `status` is OK, for a check that later ones depend on.
  bool Add(const absl::Status& status) {
    if (status.ok()) return true;
    if (first_.ok()) first_ = status;
    messages_.emplace_back(status.message());
    return false;
  }
  absl::Status status() const {
    if (first_.ok()) return first_;
    return absl::Status(first_.code(), absl::StrJoin(messages_, "; "));
  }

 private:
  absl::Status first_;
  std::vector<std::string> messages_;
};

bool IsCpu(const ServerLimits& limits) { return limits.backend == "cpu"; }

// "this cpu backend has 4 ranks (colltestd --cpu-ranks)": on the cpu backend the number of ranks is
// a server flag, so the message says which one; on GPUs it is the hardware.
std::string Capacity(const ServerLimits& limits) {
  const size_t count = limits.devices.size();
  if (IsCpu(limits)) {
    return absl::StrCat("this cpu backend has ", count, count == 1 ? " rank" : " ranks",
                        " (colltestd --cpu-ranks)");
  }
  return absl::StrCat("this ", limits.backend, " backend has ", count,
                      count == 1 ? " device" : " devices");
}

absl::Status ResolveGroup(const v1::SweepSpec& spec, const ServerLimits& limits,
                          v1::SweepSpec& out) {
  const size_t available = limits.devices.size();
  uint32_t world = spec.world_size();
  if (world == 0) {
    world = spec.devices_size() > 0 ? static_cast<uint32_t>(spec.devices_size())
                                    : static_cast<uint32_t>(available);
  }
  if (spec.devices_size() > 0 && static_cast<uint32_t>(spec.devices_size()) != world) {
    return Invalid(absl::StrCat("devices: ", spec.devices_size(), " listed but world_size = ",
                                world, " (give as many devices as ranks, or leave one out)"));
  }
  if (world < 2) {
    return Invalid(absl::StrCat("world_size = ", world,
                                ": must be >= 2 (a collective needs two ranks; ", Capacity(limits),
                                ")"));
  }
  if (world > available) {
    return Invalid(absl::StrCat("world_size = ", world, ": ", Capacity(limits)));
  }

  const std::set<uint32_t> known(limits.devices.begin(), limits.devices.end());
  std::set<uint32_t> seen;
  for (int i = 0; i < spec.devices_size(); ++i) {
    const uint32_t d = spec.devices(i);
    if (!known.contains(d)) {
      return Invalid(absl::StrCat("devices[", i, "] = ", d, ": no such device (",
                                  IsCpu(limits) ? "ranks" : "devices",
                                  " available: ", absl::StrJoin(limits.devices, ", "), ")"));
    }
    if (!seen.insert(d).second) {
      return Invalid(absl::StrCat("devices[", i, "] = ", d,
                                  ": listed twice (each rank needs its own device)"));
    }
  }

  out.set_world_size(world);
  if (spec.devices_size() == 0) {
    out.clear_devices();
    for (uint32_t r = 0; r < world; ++r) out.add_devices(limits.devices[r]);
  }
  return absl::OkStatus();
}

template <typename List>
absl::Status CheckUnique(absl::string_view field, const List& values) {
  std::set<int64_t> seen;
  for (int i = 0; i < values.size(); ++i) {
    if (!seen.insert(static_cast<int64_t>(values.Get(i))).second) {
      return Invalid(absl::StrCat(field, "[", i, "] = ", values.Get(i), ": listed twice"));
    }
  }
  return absl::OkStatus();
}

// m and n are checked apart, so that a spec without either hears about both.
absl::Status CheckRows(const v1::SweepSpec& spec) {
  if (spec.m_size() == 0) return Invalid("m: empty (give at least one row count)");
  for (uint32_t m : spec.m()) {
    if (m < 1) return Invalid(absl::StrCat("m = ", m, ": must be >= 1"));
    if (m > kMaxRows) return Invalid(absl::StrCat("m = ", m, ": must be <= ", kMaxRows));
  }
  return CheckUnique("m", spec.m());
}

// Against the resolved dtype: its size sets the pack.
absl::Status CheckHidden(const v1::SweepSpec& spec) {
  if (spec.n_size() == 0) return Invalid("n: empty (give at least one hidden size)");
  const v1::DType dtype = spec.dtype();
  const uint32_t pack = common::PackElems(dtype);
  const std::string pack_text =
      absl::StrCat("the pack size ", pack, " (16 bytes of ", common::DTypeName(dtype), ")");
  for (uint32_t n : spec.n()) {
    // A multiple first: for n = 7 that is the rule the user needs to know about.
    if (n % pack != 0) {
      return Invalid(absl::StrCat("n = ", n, ": must be a multiple of ", pack_text));
    }
    if (n < pack) return Invalid(absl::StrCat("n = ", n, ": must be >= ", pack_text));
    if (n > kMaxHidden) return Invalid(absl::StrCat("n = ", n, ": must be <= ", kMaxHidden));
  }
  return CheckUnique("n", spec.n());
}

// Every case of the sweep must fit; the largest m with the largest n is the one that may not.
// Only for valid m and n.
absl::Status CheckCaseBytes(const v1::SweepSpec& spec, const ServerLimits& limits) {
  const v1::DType dtype = spec.dtype();
  const uint64_t m = *std::max_element(spec.m().begin(), spec.m().end());
  const uint64_t n = *std::max_element(spec.n().begin(), spec.n().end());
  const uint64_t bytes = m * n * common::ElementBytes(dtype);
  if (bytes > limits.max_case_bytes) {
    return Invalid(absl::StrCat("m = ", m, ", n = ", n, ": ", bytes, " bytes of ",
                                common::DTypeName(dtype), " per rank exceed the per-case limit of ",
                                limits.max_case_bytes, " bytes (colltestd --max-case-bytes)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidatePlugins(const google::protobuf::RepeatedPtrField<std::string>& plugins,
                             const ServerLimits& limits) {
  if (plugins.size() > static_cast<int>(kMaxPlugins)) {
    return Invalid(absl::StrCat("plugins: ", plugins.size(), " given, at most ", kMaxPlugins));
  }
  std::vector<std::string> loaded;
  for (const v1::KernelPlugin& p : limits.kernel_plugins) loaded.push_back(p.name());
  std::set<std::string> seen;
  for (int i = 0; i < plugins.size(); ++i) {
    const std::string& name = plugins.Get(i);
    if (std::find(loaded.begin(), loaded.end(), name) == loaded.end()) {
      return Invalid(absl::StrCat(
          "plugins[", i, "] = \"", common::EscapeForTerminal(absl::string_view(name).substr(0, 40)),
          "\": no kernel plugin of that name is loaded (",
          loaded.empty() ? "none is: colltestd --kernel-plugin"
                         : absl::StrCat("loaded: ", absl::StrJoin(loaded, ", ")),
          ")"));
    }
    if (!seen.insert(name).second) {
      return Invalid(absl::StrCat("plugins[", i, "] = \"", name, "\": listed twice"));
    }
  }
  return absl::OkStatus();
}

namespace {

absl::Status CheckVariants(const v1::SweepSpec& spec, const ServerLimits& limits) {
  if (spec.variants_size() == 0 && spec.plugins_size() == 0) {
    return Invalid(
        "variants: empty (give at least one, e.g. one_stage or lamport, or a kernel plugin)");
  }
  for (int i = 0; i < spec.variants_size(); ++i) {
    const int v = spec.variants(i);
    if (v == v1::VARIANT_PLUGIN) {
      return Invalid(absl::StrCat("variants[", i,
                                  "] = plugin: a kernel plugin is named in plugins (the CLI's "
                                  "plugin:NAME), not asked for as a variant"));
    }
    if (v == v1::VARIANT_UNSPECIFIED || !v1::Variant_IsValid(v)) {
      return Invalid(
          absl::StrCat("variants[", i, "] = ", v, Unknown("variant", common::VariantNames())));
    }
  }
  COLLTEST_RETURN_IF_ERROR(CheckUnique("variants", spec.variants()));
  return ValidatePlugins(spec.plugins(), limits);
}

absl::Status CheckModes(const v1::SweepSpec& spec, v1::SweepSpec& out) {
  out.clear_modes();
  for (int i = 0; i < spec.modes_size(); ++i) {
    const int m = spec.modes(i);
    if (!v1::Mode_IsValid(m)) {
      return Invalid(absl::StrCat("modes[", i, "] = ", m, Unknown("mode", common::ModeNames())));
    }
    out.add_modes(m == v1::MODE_UNSPECIFIED ? v1::MODE_EAGER : static_cast<v1::Mode>(m));
  }
  if (out.modes_size() == 0) out.add_modes(v1::MODE_EAGER);
  return CheckUnique("modes", out.modes());
}

// Distinct and named: an UNSPECIFIED in a list would run `none` twice under two spellings.
absl::Status CheckEpilogues(const v1::SweepSpec& spec, v1::SweepSpec& out) {
  for (int i = 0; i < spec.epilogues_size(); ++i) {
    const int e = spec.epilogues(i);
    if (e == v1::EPILOGUE_UNSPECIFIED || !v1::Epilogue_IsValid(e)) {
      return Invalid(
          absl::StrCat("epilogues[", i, "] = ", e, Unknown("epilogue", common::EpilogueNames())));
    }
  }
  COLLTEST_RETURN_IF_ERROR(CheckUnique("epilogues", spec.epilogues()));
  if (out.epilogues_size() == 0) out.add_epilogues(v1::EPILOGUE_NONE);
  return absl::OkStatus();
}

// The shortest text that reads back as `value`: a scale just past 2^64 must not print as 2^64.
std::string ExactFloat(float value) {
  char text[32];
  const std::to_chars_result end = std::to_chars(text, text + sizeof(text), value);
  return std::string(text, end.ptr);
}

// A static scale of the quantising epilogues: 0 for `fallback`, else positive, finite and at most
// 2^64 (far past any useful scale: the bound catches a typo, not a choice). Written this way round
// so that NaN fails too.
absl::Status CheckScale(absl::string_view field, float value, float fallback,
                        absl::string_view fallback_text, float& out) {
  constexpr float kMaxScale = 0x1p64f;
  if (value == 0.0f) {
    out = fallback;
    return absl::OkStatus();
  }
  if (!(value > 0.0f && value <= kMaxScale)) {
    return Invalid(absl::StrCat(field, " = ", ExactFloat(value),
                                ": must be > 0, finite and <= 2^64 (or 0 for ", fallback_text,
                                ")"));
  }
  return absl::OkStatus();
}

// The settings of the quantising epilogues: checked whatever the epilogues, so that a spec is
// valid or not on its own, and stored resolved, so that a stored run says which scales it used.
absl::Status CheckQuantSettings(const v1::SweepSpec& spec, v1::SweepSpec& out) {
  Problems problems;
  if (!v1::Fp8Format_IsValid(spec.fp8_format())) {
    problems.Add(Invalid(absl::StrCat("fp8_format = ", spec.fp8_format(),
                                      Unknown("fp8 format", common::Fp8FormatNames()))));
  }
  if (!v1::QuantTolerance_IsValid(spec.quant_tolerance())) {
    problems.Add(Invalid(absl::StrCat("quant_tolerance = ", spec.quant_tolerance(),
                                      Unknown("quant tolerance", common::QuantToleranceNames()))));
  } else if (spec.quant_tolerance() == v1::QUANT_TOLERANCE_UNSPECIFIED) {
    out.set_quant_tolerance(v1::QUANT_TOLERANCE_STRICT);
  }
  float fp8_scale = spec.fp8_scale();
  float global_scale = spec.nvfp4_global_scale();
  problems.Add(CheckScale("fp8_scale", spec.fp8_scale(), kDefaultFp8Scale, "1/32", fp8_scale));
  problems.Add(CheckScale("nvfp4_global_scale", spec.nvfp4_global_scale(), kDefaultNvfp4GlobalScale,
                          "256", global_scale));
  out.set_fp8_scale(fp8_scale);
  out.set_nvfp4_global_scale(global_scale);
  return problems.status();
}

absl::Status CheckDType(const v1::SweepSpec& spec, v1::SweepSpec& out) {
  if (!v1::DType_IsValid(spec.dtype())) {
    return Invalid(absl::StrCat("dtype = ", spec.dtype(), Unknown("dtype", common::DTypeNames())));
  }
  if (spec.dtype() == v1::DTYPE_UNSPECIFIED) out.set_dtype(v1::DTYPE_BF16);
  return absl::OkStatus();
}

absl::Status CheckPatternAndTolerance(const v1::SweepSpec& spec, v1::SweepSpec& out) {
  Problems problems;
  if (!v1::Pattern_IsValid(spec.pattern())) {
    problems.Add(Invalid(
        absl::StrCat("pattern = ", spec.pattern(), Unknown("pattern", common::PatternNames()))));
  } else if (spec.pattern() == v1::PATTERN_UNSPECIFIED) {
    out.set_pattern(v1::PATTERN_NORMAL);
  }
  if (!v1::Tolerance_IsValid(spec.tolerance())) {
    problems.Add(Invalid(absl::StrCat("tolerance = ", spec.tolerance(),
                                      Unknown("tolerance profile", common::ToleranceNames()))));
  } else if (spec.tolerance() == v1::TOLERANCE_UNSPECIFIED) {
    out.set_tolerance(v1::TOLERANCE_STRICT);
  }
  return problems.status();
}

absl::Status CheckMax(absl::string_view field, uint64_t value, uint64_t max) {
  if (value > max) return Invalid(absl::StrCat(field, " = ", value, ": must be <= ", max));
  return absl::OkStatus();
}

absl::Status CheckCounts(const v1::SweepSpec& spec, v1::SweepSpec& out) {
  Problems problems;
  for (auto [field, value, max] :
       {std::tuple<absl::string_view, uint64_t, uint64_t>{"warmup", spec.warmup(), kMaxWarmup},
        {"iters", spec.iters(), kMaxIters},
        {"stress_calls", spec.stress_calls(), kMaxStressCalls},
        {"timeout_ms", spec.timeout_ms(), kMaxTimeoutMs},
        {"knobs.grid_blocks", spec.knobs().grid_blocks(), kMaxGridBlocks},
        {"knobs.arm_repeat", spec.knobs().arm_repeat(), kMaxArmRepeat},
        {"knobs.lamport_min_bytes", spec.knobs().lamport_min_bytes(), kMaxLamportMinBytes}}) {
    problems.Add(CheckMax(field, value, max));
  }
  const uint32_t tpb = spec.knobs().threads_per_block();
  if (tpb != 0 && tpb != 256 && tpb != 512) {
    problems.Add(Invalid(absl::StrCat("knobs.threads_per_block = ", tpb,
                                      ": must be 0 (the variant's default), 256 or 512")));
  }

  // Written this way round so that NaN fails too.
  const float eps = spec.eps();
  if (eps != 0.0f && !(eps > 0.0f && eps < 1.0f)) {
    problems.Add(Invalid(absl::StrCat("eps = ", eps, ": must be > 0 and < 1 (or 0 for 1e-6)")));
  }
  COLLTEST_RETURN_IF_ERROR(problems.status());

  if (spec.warmup() == 0) out.set_warmup(kDefaultWarmup);
  if (spec.iters() == 0) out.set_iters(kDefaultIters);
  if (spec.timeout_ms() == 0) out.set_timeout_ms(kDefaultCaseTimeoutMs);
  if (eps == 0.0f) out.set_eps(kDefaultEps);
  return absl::OkStatus();
}

absl::Status CheckCaseCount(const v1::SweepSpec& out) {
  const uint64_t cases = SweepCaseCount(out);
  if (cases > kMaxCases) {
    return Invalid(absl::StrCat("cases = ", cases, " (", out.m_size(), " m x ", out.n_size(),
                                " n x ", out.variants_size() + out.plugins_size(), " variants x ",
                                out.modes_size(), " modes x ", out.epilogues_size(),
                                " epilogues): must be <= ", kMaxCases, " (split the sweep)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<v1::SweepSpec> ValidateSpec(const v1::SweepSpec& spec, const ServerLimits& limits) {
  v1::SweepSpec out = spec;
  Problems problems;
  const bool group = problems.Add(ResolveGroup(spec, limits, out));
  const bool dtype = problems.Add(CheckDType(spec, out));
  problems.Add(CheckPatternAndTolerance(spec, out));
  const bool rows = problems.Add(CheckRows(out));
  // The pack and the byte budget come from the resolved dtype.
  const bool hidden = dtype && problems.Add(CheckHidden(out));
  const bool shapes = rows && hidden && problems.Add(CheckCaseBytes(out, limits));
  const bool variants = problems.Add(CheckVariants(spec, limits));
  const bool modes = problems.Add(CheckModes(spec, out));
  const bool epilogues = problems.Add(CheckEpilogues(spec, out));
  problems.Add(CheckQuantSettings(spec, out));
  problems.Add(CheckCounts(spec, out));
  // The count needs every list it multiplies to be right.
  if (shapes && variants && modes && epilogues) problems.Add(CheckCaseCount(out));
  // One line of printable text: it is logged and shown to every client that lists the runs.
  problems.Add(common::CheckLabel("spec.label", spec.label()));
  // Fault ranks are checked against the resolved world.
  if (group) problems.Add(ValidateFault("spec.fault", spec.fault(), out.world_size(), limits));
  COLLTEST_RETURN_IF_ERROR(problems.status());
  return out;
}

absl::Status ValidateFault(absl::string_view field, absl::string_view fault, uint32_t world,
                           const ServerLimits& limits) {
  if (fault.empty()) return absl::OkStatus();
  // First: an operator's "no" is the answer whatever the fault says.
  if (!limits.allow_fault_injection) {
    return absl::FailedPreconditionError(
        "fault injection is disabled (start colltestd with --allow-fault-injection)");
  }
  // Checked here rather than left to the workers: there a bad fault fails the case as ERROR and
  // resets the whole group; here it is refused before anything runs.
  return common::ParseFaultSpec(field, fault, world).status();
}

absl::Status ValidateRunId(absl::string_view run_id, absl::string_view field) {
  if (run_id.empty()) return Invalid(absl::StrCat(field, ": empty"));
  if (run_id.size() > kMaxRunIdBytes) {
    return Invalid(
        absl::StrCat(field, ": ", run_id.size(), " bytes, the limit is ", kMaxRunIdBytes));
  }
  for (size_t i = 0; i < run_id.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(run_id[i]);
    if (c < 0x21 || c > 0x7E) {
      return Invalid(absl::StrCat(field, ": byte ", i, " is ",
                                  common::EscapeForTerminal(run_id.substr(i, 1)),
                                  ": a run id is printable ASCII without spaces"));
    }
  }
  return absl::OkStatus();
}

}  // namespace colltest::server
