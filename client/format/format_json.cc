// The JSON contract of docs/design.md section 10. Scripts and CI parse it: fields may be added,
// never renamed or removed.
#include "client/format/format_json.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/format/format.h"
#include "client/format/format_groups.h"
#include "client/format/result_view.h"
#include "common/names.h"
#include "nlohmann/json.hpp"

namespace colltest::client {
namespace {}  // namespace

Json PluginJson(const v1::PluginIdentity& plugin) {
  Json out = Json::object();
  out["name"] = plugin.name();
  out["version"] = plugin.version();
  out["sha256"] = plugin.sha256();
  return out;
}

namespace {

// The per-case identity fields are repeated on each rank so that a rank object stands alone when a
// script flattens the ranks of many cases.
void AddIdentity(const v1::CaseResult& c, Json& out) {
  out["variant"] = common::KernelName(c);
  // "plugin:NAME" for a plugin asked for by name or picked by `auto`.
  out["resolved_variant"] = common::KernelName(EffectiveVariant(c), c.plugin().name());
  out["mode"] = std::string(common::ModeName(c.mode()));
  out["world"] = c.world_size();
  out["m"] = c.m();
  out["n"] = c.n();
  out["dtype"] = std::string(common::DTypeName(c.dtype()));
  out["bytes"] = CaseBytes(c);
  out["pattern"] = std::string(common::PatternName(c.pattern()));
  out["residual"] = c.residual();
  out["epilogue"] = std::string(common::EpilogueName(c.epilogue()));
  out["keep_normed"] = c.keep_normed();
  // Which build of a kernel plugin ran (docs/plugins.md): what a comparison of two builds shows.
  if (EffectiveVariant(c) == v1::VARIANT_PLUGIN) out["plugin"] = PluginJson(c.plugin());
}

// The FP8 format an fp8 epilogue wrote; "" where none was (the proto's UNSPECIFIED).
std::string Fp8FormatText(v1::Fp8Format format) {
  if (format == v1::FP8_FORMAT_UNSPECIFIED) return "";
  return std::string(common::Fp8FormatName(format));
}

// All zeros (rule "none") for a case without a quantising epilogue, as the proto sends it.
Json QuantJson(const v1::QuantDiffStats& q) {
  Json out = Json::object();
  out["checked_codes"] = q.checked_codes();
  out["code_mismatches"] = q.code_mismatches();
  out["tolerated"] = q.tolerated();
  out["max_code_distance"] = q.max_code_distance();
  out["nan_codes"] = q.nan_codes();
  out["checked_scales"] = q.checked_scales();
  out["scale_mismatches"] = q.scale_mismatches();
  out["max_scale_rel_err"] = q.max_scale_rel_err();
  out["max_dequant_err"] = q.max_dequant_err();
  out["expected_dequant_err"] = q.expected_dequant_err();
  out["rule"] = std::string(common::QuantRuleName(q.rule()));
  out["first_bad"] = q.first_bad();
  out["first_bad_call"] = q.first_bad_call();
  return out;
}

void AddTiming(const v1::TimingStats& t, Json& out) {
  out["median_us"] = t.median_us();
  out["p10_us"] = t.p10_us();
  out["p90_us"] = t.p90_us();
  out["min_us"] = t.min_us();
  out["max_us"] = t.max_us();
  out["samples"] = t.samples();
}

void AddDiff(const v1::DiffStats& d, Json& out) {
  out["mismatches"] = d.mismatches();
  out["checked"] = d.checked();
  out["max_abs_err"] = d.max_abs_err();
  out["max_rel_err"] = d.max_rel_err();
  out["max_ulp"] = d.max_ulp();
  out["nan_inf"] = d.nan_inf();
  out["first_bad"] = d.first_bad();
  out["first_bad_call"] = d.first_bad_call();
}

Json RankJson(const v1::CaseResult& c, const v1::RankResult& r) {
  Json out = Json::object();
  out["rank"] = r.rank();
  out["device"] = r.device();
  AddIdentity(c, out);
  out["status"] = std::string(common::CaseStatusName(r.status()));
  out["message"] = r.message();
  AddTiming(r.timing(), out);
  out["busbw_gbps"] = RankBusBandwidth(c, r);
  AddDiff(r.diff(), out);
  out["suspect_peer"] = r.suspect_peer();
  out["phase"] = r.phase();
  out["calls"] = r.calls();
  out["grid_blocks"] = r.grid_blocks();
  out["fp8_format"] = Fp8FormatText(r.fp8_format());
  out["quant"] = QuantJson(r.quant());
  return out;
}

Json CaseJson(const v1::CaseResult& c) {
  Json out = Json::object();
  out["index"] = c.index();
  AddIdentity(c, out);
  out["status"] = std::string(common::CaseStatusName(c.status()));
  out["message"] = c.message();
  AddTiming(c.timing(), out);
  out["algbw_gbps"] = c.algbw_gbps();
  out["busbw_gbps"] = c.busbw_gbps();
  AddDiff(c.diff(), out);
  out["stress_calls"] = c.stress_calls();
  out["wall_ms"] = c.wall_ms();
  out["fp8_format"] = Fp8FormatText(c.fp8_format());
  out["quant"] = QuantJson(c.quant());
  Json ranks = Json::array();
  for (const v1::RankResult& r : c.ranks()) ranks.push_back(RankJson(c, r));
  out["ranks"] = std::move(ranks);
  return out;
}

// Each device by its UUID as well as its index: the index is only the server's numbering, the UUID
// is the board to pull ("" where the server sent no machine).
Json TargetJson(const v1::HealthTarget& t, const v1::MachineIdentity& machine) {
  Json out = Json::object();
  out["devices"] = std::vector<uint32_t>(t.devices().begin(), t.devices().end());
  Json uuids = Json::array();
  for (uint32_t index : t.devices()) {
    const v1::Device* device = FindDevice(machine, index);
    uuids.push_back(device != nullptr ? device->uuid() : std::string());
  }
  out["uuids"] = std::move(uuids);
  out["status"] = std::string(common::CaseStatusName(t.status()));
  out["message"] = t.message();
  out["latency_us"] = t.latency_us();
  out["median_ratio"] = t.median_ratio();
  out["slow"] = t.slow();
  out["busbw_gbps"] = t.busbw_gbps();
  out["expected_busbw_gbps"] = t.expected_busbw_gbps();
  out["below_expected"] = t.below_expected();
  out["suspect_peer"] = SuspectDevice(t);
  out["phase"] = t.phase();
  out["cases"] = t.cases();
  return out;
}

Json TargetsJson(const google::protobuf::RepeatedPtrField<v1::HealthTarget>& targets,
                 const v1::MachineIdentity& machine) {
  Json out = Json::array();
  for (const v1::HealthTarget& t : targets) out.push_back(TargetJson(t, machine));
  return out;
}

Json SelfTestJson(const v1::HealthSelfTest& self_test) {
  return Json{{"ran", self_test.ran()},
              {"passed", self_test.passed()},
              {"fault", self_test.fault()},
              {"message", self_test.message()}};
}

// The verdict's age only means something for an answer that did not make a verdict of its own.
Json VerdictAgeJson(const v1::HealthResponse& health, absl::Time now) {
  if (!health.cached() && !health.busy()) return nullptr;
  if (health.verdict_unix_ms() <= 0) return nullptr;
  return absl::ToInt64Milliseconds(HealthVerdictAge(health, now));
}

}  // namespace

Json DocumentJson(absl::string_view kind) {
  Json out = Json::object();
  out["schema_version"] = kSchemaVersion;
  out["kind"] = std::string(kind);
  return out;
}

std::string DumpJson(const Json& json) {
  return json.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

Json RunJson(const v1::RunResult& run) {
  Json out = DocumentJson("colltest.run");
  out["run_id"] = run.run_id();
  out["backend"] = run.backend();
  out["state"] = std::string(common::RunStateName(run.state()));
  out["message"] = run.message();
  out["label"] = run.spec().label();
  out["created_unix_ms"] = run.created_unix_ms();
  out["finished_unix_ms"] = run.finished_unix_ms();
  // Above 1 (or time-sliced) the ranks shared a GPU: the times are kernel overhead, not a link's.
  out["ranks_per_gpu"] = RanksPerGpu(run);
  out["time_sliced"] = run.time_sliced();
  // Where it ran: the host and each device's UUID, bus id and serial, so that a result read later
  // (or in CI, far from the node) still names the boards it was measured on.
  out["machine"] = MachineJson(run.machine());
  Json cases = Json::array();
  for (const v1::CaseResult& c : run.cases()) cases.push_back(CaseJson(c));
  out["cases"] = std::move(cases);
  return out;
}

std::string FormatRunJson(const v1::RunResult& run) { return DumpJson(RunJson(run)); }

std::string FormatHealthJson(const v1::HealthResponse& health) {
  return FormatHealthJsonAt(health, absl::Now());
}

std::string FormatHealthJsonAt(const v1::HealthResponse& health, absl::Time now) {
  Json out = DocumentJson("colltest.health");
  out["status"] = std::string(common::CaseStatusName(health.status()));
  out["message"] = health.message();
  out["wall_ms"] = health.wall_ms();
  out["level"] = std::string(HealthLevelName(health.level()));
  out["verdict_unix_ms"] = health.verdict_unix_ms();
  out["verdict_age_ms"] = VerdictAgeJson(health, now);
  out["cached"] = health.cached();
  out["busy"] = health.busy();
  out["busy_reason"] = health.busy_reason();
  out["self_test"] = SelfTestJson(health.self_test());
  out["ranks"] = TargetsJson(health.ranks(), health.machine());
  out["pairs"] = TargetsJson(health.pairs(), health.machine());
  out["groups"] = GroupsJson(health.groups());
  Json cases = Json::array();
  for (const v1::CaseResult& c : health.cases()) cases.push_back(CaseJson(c));
  out["cases"] = std::move(cases);
  out["run_ids"] = std::vector<std::string>(health.run_ids().begin(), health.run_ids().end());
  out["machine"] = MachineJson(health.machine());
  return DumpJson(out);
}

Json MachineJson(const v1::MachineIdentity& m) {
  Json out = Json::object();
  out["key"] = m.key();
  out["hostname"] = m.hostname();
  out["backend"] = m.backend();
  out["driver_version"] = m.driver_version();
  out["runtime_version"] = m.runtime_version();
  out["colltest_version"] = m.colltest_version();
  out["build_commit"] = m.build_commit();
  out["ranks_per_gpu"] = MachineRanksPerGpu(m);
  Json devices = Json::array();
  for (const v1::Device& d : m.devices()) {
    devices.push_back(Json{{"index", d.index()},
                           {"name", d.name()},
                           {"uuid", d.uuid()},
                           {"pci_bus_id", d.pci_bus_id()},
                           {"serial", d.serial()},
                           {"physical_index", PhysicalIndex(d)},
                           {"slot", d.slot()}});
  }
  out["devices"] = std::move(devices);
  Json links = Json::array();
  for (const v1::Link& l : m.links()) {
    links.push_back(Json{{"a", l.a()},
                         {"b", l.b()},
                         {"kind", l.kind()},
                         {"hops", l.hops()},
                         {"lanes", l.lanes()},
                         {"p2p", l.p2p()},
                         {"performance_rank", l.performance_rank()},
                         {"native_atomics", l.native_atomics()}});
  }
  out["links"] = std::move(links);
  return out;
}

}  // namespace colltest::client
