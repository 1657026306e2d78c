// history_bench: fills a fresh history database with realistic runs (100 cases each, 2-8 ranks per
// case) and measures its size, the insert rate, and the latency of ListRuns and GetRun.
//
//   history_bench [--cases 10000] [--dir DIR] [--calls 200]
//
// Without --dir the database goes to a temporary directory, removed at the end. Prints a table and
// one JSON line. docs/history.md quotes its numbers.
#include <stdlib.h>
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "colltest/v1/colltest.pb.h"
#include "store/run_store.h"
#include "store/state_dir.h"

namespace colltest::store {
namespace {

namespace v1 = ::colltest::v1;

constexpr int kCasesPerRun = 100;
constexpr const char* kLabels[] = {"nightly", "pr-check", "tune-sweep", "canary", "adhoc"};
constexpr v1::Variant kVariants[] = {v1::VARIANT_ONE_STAGE, v1::VARIANT_TWO_KERNEL,
                                     v1::VARIANT_LAMPORT,   v1::VARIANT_LAMPORT_TB,
                                     v1::VARIANT_NCCL,      v1::VARIANT_AUTO};

struct Latency {
  std::string name;
  double median_us = 0;
  double p90_us = 0;
};

v1::MachineIdentity BenchMachine() {
  v1::MachineIdentity machine;
  machine.set_key("3f9a1c7e5b2d4a60");
  machine.set_hostname("gpu-node-17");
  machine.set_backend("cuda");
  machine.set_driver_version("13.0");
  machine.set_runtime_version("13.0");
  machine.set_colltest_version("0.1.0");
  for (uint32_t i = 0; i < 8; ++i) {
    v1::Device* device = machine.add_devices();
    device->set_index(i);
    device->set_name("NVIDIA H200");
    device->set_memory_bytes(150ull << 30);
    device->set_backend("cuda");
    device->set_uuid(absl::StrFormat("GPU-8d1f%04x-1b2c-4d5e-8f90-a1b2c3d4e5f6", i));
    device->set_pci_bus_id(absl::StrFormat("0000:%02x:00.0", 0x19 + i * 0x10));
  }
  return machine;
}

// The request of run `index`: one label of five, one to three variants, m x n sizes.
v1::RunResult BenchRun(int index, std::mt19937& random, const v1::MachineIdentity& machine) {
  v1::RunResult run;
  run.set_run_id(absl::StrFormat("r-%08x-%04d", random(), index));
  run.set_state(v1::RUN_STATE_RUNNING);
  run.set_backend("cuda");
  run.set_owner(index % 3 == 0 ? "ci-token" : "alice");
  run.set_created_unix_ms(1767225600000 + int64_t{index} * 60000);
  v1::SweepSpec* spec = run.mutable_spec();
  spec->set_label(kLabels[index % 5]);
  spec->set_world_size(2 + 2 * (index % 4));
  spec->set_dtype(v1::DTYPE_BF16);
  for (const uint32_t m : {1, 16, 128, 1024, 4096}) spec->add_m(m);
  for (const uint32_t n : {4096, 5120, 7168, 8192}) spec->add_n(n);
  const int count = 1 + static_cast<int>(random() % 3);
  for (int i = 0; i < count; ++i) spec->add_variants(kVariants[random() % 6]);
  spec->add_modes(v1::MODE_EAGER);
  spec->add_modes(v1::MODE_GRAPH);
  spec->set_seed(random());
  *run.mutable_machine() = machine;
  return run;
}

v1::CaseResult BenchCase(uint32_t index, const v1::RunResult& run, std::mt19937& random) {
  v1::CaseResult result;
  const v1::SweepSpec& spec = run.spec();
  const uint32_t ranks = 2 + random() % 7;
  const uint32_t roll = random() % 100;
  const v1::CaseStatus status = roll < 90   ? v1::CASE_STATUS_OK
                                : roll < 94 ? v1::CASE_STATUS_UNSUPPORTED
                                : roll < 98 ? v1::CASE_STATUS_WRONG
                                            : v1::CASE_STATUS_HANG;
  result.set_index(index);
  result.set_variant(static_cast<v1::Variant>(spec.variants(index % spec.variants_size())));
  result.set_mode(index % 2 ? v1::MODE_GRAPH : v1::MODE_EAGER);
  result.set_world_size(ranks);
  result.set_m(spec.m(index % spec.m_size()));
  result.set_n(spec.n(index % spec.n_size()));
  result.set_dtype(v1::DTYPE_BF16);
  result.set_residual(true);
  result.set_status(status);
  const double median = 5.0 + (random() % 10000) / 100.0;
  result.mutable_timing()->set_median_us(median);
  result.mutable_timing()->set_p10_us(median * 0.95);
  result.mutable_timing()->set_p90_us(median * 1.1);
  result.mutable_timing()->set_samples(20);
  result.set_algbw_gbps(120.5);
  result.set_busbw_gbps(210.25);
  result.mutable_diff()->set_checked(uint64_t{result.m()} * result.n());
  result.set_wall_ms(median * 25 / 1000);
  if (status == v1::CASE_STATUS_WRONG) {
    result.set_message("rank 3: 17 elements outside the tolerance");
    result.mutable_diff()->set_mismatches(17);
    result.mutable_diff()->set_first_bad("residual_out[3,17] got 1.5 want 1.25");
  }
  for (uint32_t r = 0; r < ranks; ++r) {
    v1::RankResult* rank = result.add_ranks();
    rank->set_rank(r);
    rank->set_device(r);
    rank->set_status(status);
    rank->mutable_timing()->set_median_us(median * (0.9 + 0.01 * r));
    rank->mutable_timing()->set_p90_us(median * 1.1);
    rank->mutable_timing()->set_min_us(median * 0.8);
    rank->mutable_timing()->set_max_us(median * 1.3);
    rank->mutable_timing()->set_samples(20);
    rank->mutable_diff()->set_checked(uint64_t{result.m()} * result.n());
    rank->mutable_diff()->set_max_ulp(r % 2);
    rank->mutable_diff()->set_first_bad_call(-1);
    rank->set_suspect_peer(-1);
    rank->set_calls(25);
    rank->set_grid_blocks(132);
    if (status == v1::CASE_STATUS_HANG) rank->set_phase("lamport phase B");
  }
  return result;
}

// Every run with its cases and final state; returns the seconds it took, or -1 on an error.
double Fill(RunStore& store, int runs, std::vector<std::string>* ids) {
  std::mt19937 random(20261130);
  const v1::MachineIdentity machine = BenchMachine();
  const absl::Time start = absl::Now();
  for (int i = 0; i < runs; ++i) {
    const v1::RunResult run = BenchRun(i, random, machine);
    absl::Status status = store.InsertRun(run);
    for (uint32_t c = 0; status.ok() && c < kCasesPerRun; ++c) {
      status = store.AddCase(run.run_id(), BenchCase(c, run, random));
    }
    const v1::RunState end = i % 20 == 7    ? v1::RUN_STATE_FAILED
                             : i % 20 == 13 ? v1::RUN_STATE_CANCELLED
                                            : v1::RUN_STATE_DONE;
    if (status.ok()) status = store.SetState(run.run_id(), end, "", run.created_unix_ms() + 30000);
    if (!status.ok()) {
      fprintf(stderr, "history_bench: %s\n", std::string(status.message()).c_str());
      return -1;
    }
    ids->push_back(run.run_id());
  }
  return absl::ToDoubleSeconds(absl::Now() - start);
}

// Median and p90 of `calls` calls of `call`, in microseconds; false when a call failed.
bool Measure(const std::string& name, int calls, const std::function<bool()>& call,
             std::vector<Latency>* out) {
  std::vector<double> us;
  for (int i = 0; i < calls; ++i) {
    const absl::Time start = absl::Now();
    if (!call()) {
      fprintf(stderr, "history_bench: %s failed\n", name.c_str());
      return false;
    }
    us.push_back(absl::ToDoubleMicroseconds(absl::Now() - start));
  }
  std::sort(us.begin(), us.end());
  out->push_back({name, us[us.size() / 2], us[us.size() * 9 / 10]});
  return true;
}

bool MeasureQueries(RunStore& store, const std::string& get_id, int calls,
                    std::vector<Latency>* out) {
  auto list = [&store](v1::ListRunsRequest request) {
    request.set_limit(50);
    return [&store, request] {
      absl::StatusOr<v1::ListRunsResponse> listed = store.ListRuns(request);
      return listed.ok() && listed->runs_size() > 0;
    };
  };
  v1::ListRunsRequest label, variant, state;
  label.set_label("canary");
  variant.set_variant(v1::VARIANT_NCCL);
  state.set_state(v1::RUN_STATE_FAILED);
  auto get = [&store, &get_id] {
    absl::StatusOr<v1::RunResult> run = store.GetRun(get_id);
    return run.ok() && run->cases_size() == kCasesPerRun;
  };
  return Measure("ListRuns limit 50", calls, list({}), out) &&
         Measure("ListRuns label=canary", calls, list(label), out) &&
         Measure("ListRuns variant=NCCL", calls, list(variant), out) &&
         Measure("ListRuns state=FAILED", calls, list(state), out) &&
         Measure("GetRun (100 cases)", calls, get, out);
}

uint64_t FileSize(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

void Report(int cases, double insert_s, uint64_t db_bytes, uint64_t wal_bytes, double open_ms,
            const std::vector<Latency>& latencies) {
  printf("history_bench: %d runs x %d cases = %d cases\n", cases / kCasesPerRun, kCasesPerRun,
         cases);
  printf("  %-28s %12s\n", "history.sqlite3 bytes", absl::StrCat(db_bytes).c_str());
  printf("  %-28s %12s\n", "history.sqlite3-wal bytes", absl::StrCat(wal_bytes).c_str());
  printf("  %-28s %12.2f  (%.0f cases/s)\n", "insert s", insert_s, cases / insert_s);
  printf("  %-28s %12.1f\n", "reopen ms (quick_check)", open_ms);
  printf("  %-28s %12s %12s\n", "query", "median us", "p90 us");
  std::string json = absl::StrFormat(
      R"({"cases":%d,"db_bytes":%d,"wal_bytes":%d,"insert_s":%.3f,"reopen_ms":%.1f)", cases,
      db_bytes, wal_bytes, insert_s, open_ms);
  for (const Latency& latency : latencies) {
    printf("  %-28s %12.1f %12.1f\n", latency.name.c_str(), latency.median_us, latency.p90_us);
    absl::StrAppendFormat(&json, R"(,"%s":{"median_us":%.1f,"p90_us":%.1f})", latency.name,
                          latency.median_us, latency.p90_us);
  }
  printf("%s}\n", json.c_str());
}

int Fail(const absl::Status& status) {
  fprintf(stderr, "history_bench: %s\n", std::string(status.message()).c_str());
  return 1;
}

// Fill, measure the files, reopen (the integrity check of the whole file), measure the queries.
int Bench(const std::string& path, int cases, int calls) {
  absl::StatusOr<std::unique_ptr<RunStore>> store = RunStore::Open(path);
  if (!store.ok()) return Fail(store.status());
  std::vector<std::string> ids;
  const double insert_s = Fill(**store, cases / kCasesPerRun, &ids);
  if (insert_s < 0) return 1;
  const uint64_t db_bytes = FileSize(path), wal_bytes = FileSize(path + "-wal");
  store->reset();
  const absl::Time open_start = absl::Now();
  store = RunStore::Open(path);
  const double open_ms = absl::ToDoubleMilliseconds(absl::Now() - open_start);
  if (!store.ok()) return Fail(store.status());
  std::vector<Latency> latencies;
  if (!MeasureQueries(**store, ids[ids.size() / 2], calls, &latencies)) return 1;
  Report(cases, insert_s, db_bytes, wal_bytes, open_ms, latencies);
  return 0;
}

int Main(int argc, char** argv) {
  CLI::App app{"Fills a history database and measures it (docs/history.md)."};
  int cases = 10000;
  int calls = 200;
  std::string dir;
  app.add_option("--cases", cases, "cases in all, 100 per run")->check(CLI::Range(100, 10000000));
  app.add_option("--calls", calls, "calls per measured query")->check(CLI::Range(1, 100000));
  app.add_option("--dir", dir, "directory for a fresh history.sqlite3 (default: a temporary one)");
  CLI11_PARSE(app, argc, argv);
  const bool temporary = dir.empty();
  if (temporary) {
    std::string templ = std::filesystem::temp_directory_path().string() + "/history_bench.XXXXXX";
    if (mkdtemp(templ.data()) == nullptr) return perror("mkdtemp"), 1;
    dir = templ;
  }
  const std::string path = HistoryDatabasePath(dir);
  if (std::filesystem::exists(path)) {
    fprintf(stderr, "history_bench: %s exists; give an empty --dir\n", path.c_str());
    return 2;
  }
  const int rc = Bench(path, cases, calls);
  if (temporary) std::filesystem::remove_all(dir);
  return rc;
}

}  // namespace
}  // namespace colltest::store

int main(int argc, char** argv) { return colltest::store::Main(argc, argv); }
