// The JSON contract of DESIGN section 10. Scripts and CI parse it: fields may be added, never
// renamed or removed.
#include "client/format_json.h"

#include <cstdint>
#include <string>
#include <vector>

#include "client/format.h"
#include "client/format_groups.h"
#include "client/names.h"
#include "client/result_view.h"
#include "nlohmann/json.hpp"

namespace colltest::client {
namespace {

// The per-case identity fields are repeated on each rank so that a rank object stands alone when a
// script flattens the ranks of many cases.
void AddIdentity(const v1::CaseResult& c, Json& out) {
  out["variant"] = std::string(VariantName(c.variant()));
  out["resolved_variant"] = std::string(VariantName(EffectiveVariant(c)));
  out["mode"] = std::string(ModeName(c.mode()));
  out["world"] = c.world_size();
  out["m"] = c.m();
  out["n"] = c.n();
  out["dtype"] = std::string(DTypeName(c.dtype()));
  out["pattern"] = std::string(PatternName(c.pattern()));
  out["residual"] = c.residual();
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
  out["status"] = std::string(CaseStatusName(r.status()));
  out["message"] = r.message();
  AddTiming(r.timing(), out);
  out["busbw_gbps"] = RankBusBandwidth(c, r);
  AddDiff(r.diff(), out);
  out["suspect_peer"] = r.suspect_peer();
  out["phase"] = r.phase();
  out["calls"] = r.calls();
  out["grid_blocks"] = r.grid_blocks();
  return out;
}

Json CaseJson(const v1::CaseResult& c) {
  Json out = Json::object();
  out["index"] = c.index();
  AddIdentity(c, out);
  out["status"] = std::string(CaseStatusName(c.status()));
  out["message"] = c.message();
  AddTiming(c.timing(), out);
  out["algbw_gbps"] = c.algbw_gbps();
  out["busbw_gbps"] = c.busbw_gbps();
  AddDiff(c.diff(), out);
  out["stress_calls"] = c.stress_calls();
  out["wall_ms"] = c.wall_ms();
  Json ranks = Json::array();
  for (const v1::RankResult& r : c.ranks()) ranks.push_back(RankJson(c, r));
  out["ranks"] = std::move(ranks);
  return out;
}

Json TargetJson(const v1::HealthTarget& t) {
  Json out = Json::object();
  out["devices"] = std::vector<uint32_t>(t.devices().begin(), t.devices().end());
  out["status"] = std::string(CaseStatusName(t.status()));
  out["message"] = t.message();
  out["latency_us"] = t.latency_us();
  out["median_ratio"] = t.median_ratio();
  out["slow"] = t.slow();
  out["suspect_peer"] = SuspectDevice(t);
  out["phase"] = t.phase();
  out["cases"] = t.cases();
  return out;
}

Json TargetsJson(const google::protobuf::RepeatedPtrField<v1::HealthTarget>& targets) {
  Json out = Json::array();
  for (const v1::HealthTarget& t : targets) out.push_back(TargetJson(t));
  return out;
}

}  // namespace

std::string DumpJson(const Json& json) {
  return json.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

Json RunJson(const v1::RunResult& run) {
  Json out = Json::object();
  out["run_id"] = run.run_id();
  out["backend"] = run.backend();
  out["state"] = std::string(RunStateName(run.state()));
  out["message"] = run.message();
  out["label"] = run.spec().label();
  out["created_unix_ms"] = run.created_unix_ms();
  out["finished_unix_ms"] = run.finished_unix_ms();
  Json cases = Json::array();
  for (const v1::CaseResult& c : run.cases()) cases.push_back(CaseJson(c));
  out["cases"] = std::move(cases);
  return out;
}

std::string FormatRunJson(const v1::RunResult& run) { return DumpJson(RunJson(run)); }

std::string FormatHealthJson(const v1::HealthResponse& health) {
  Json out = Json::object();
  out["status"] = std::string(CaseStatusName(health.status()));
  out["message"] = health.message();
  out["wall_ms"] = health.wall_ms();
  out["ranks"] = TargetsJson(health.ranks());
  out["pairs"] = TargetsJson(health.pairs());
  out["groups"] = GroupsJson(health.groups());
  Json cases = Json::array();
  for (const v1::CaseResult& c : health.cases()) cases.push_back(CaseJson(c));
  out["cases"] = std::move(cases);
  out["run_ids"] = std::vector<std::string>(health.run_ids().begin(), health.run_ids().end());
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
  Json devices = Json::array();
  for (const v1::Device& d : m.devices()) {
    devices.push_back(Json{{"index", d.index()},
                           {"name", d.name()},
                           {"uuid", d.uuid()},
                           {"pci_bus_id", d.pci_bus_id()}});
  }
  out["devices"] = std::move(devices);
  Json links = Json::array();
  for (const v1::Link& l : m.links()) {
    links.push_back(Json{{"a", l.a()},
                         {"b", l.b()},
                         {"kind", l.kind()},
                         {"p2p", l.p2p()},
                         {"performance_rank", l.performance_rank()},
                         {"native_atomics", l.native_atomics()}});
  }
  out["links"] = std::move(links);
  return out;
}

}  // namespace colltest::client
