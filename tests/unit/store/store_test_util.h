// Shared by the store tests: a scratch directory, runs and cases as colltestd records them.
#pragma once

#include <stdlib.h>
#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <string>

#include "colltest/v1/colltest.pb.h"
#include "gtest/gtest.h"

namespace colltest::store::testing {

namespace v1 = ::colltest::v1;

// A fresh directory, removed with everything in it (modes restored first) at the end.
class ScratchDir {
 public:
  ScratchDir() {
    std::string templ = ::testing::TempDir() + "store_test.XXXXXX";
    EXPECT_NE(mkdtemp(templ.data()), nullptr);
    path_ = templ;
  }
  ~ScratchDir() {
    std::error_code ignored;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(path_, ignored)) {
      chmod(entry.path().c_str(), 0700);
    }
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

inline v1::MachineIdentity Machine(const std::string& key, const std::string& hostname) {
  v1::MachineIdentity machine;
  machine.set_key(key);
  machine.set_hostname(hostname);
  machine.set_backend("cpu");
  machine.set_driver_version("cpu");
  machine.set_colltest_version("0.1.0");
  for (uint32_t i = 0; i < 2; ++i) {
    v1::Device* device = machine.add_devices();
    device->set_index(i);
    device->set_name("cpu");
    device->set_uuid(hostname + "-cpu-" + std::to_string(i));
  }
  return machine;
}

// A run as RunHistory creates it: no cases yet.
inline v1::RunResult NewRun(const std::string& id, const std::string& label,
                            std::initializer_list<v1::Variant> variants,
                            v1::RunState state = v1::RUN_STATE_RUNNING, int64_t created_ms = 1000,
                            const v1::MachineIdentity& machine = Machine("key-a", "node-a")) {
  v1::RunResult run;
  run.set_run_id(id);
  run.set_state(state);
  run.set_backend("cpu");
  run.set_owner("alice");
  run.set_created_unix_ms(created_ms);
  run.mutable_spec()->set_label(label);
  run.mutable_spec()->set_world_size(4);
  run.mutable_spec()->add_m(128);
  run.mutable_spec()->add_n(4096);
  for (const v1::Variant variant : variants) run.mutable_spec()->add_variants(variant);
  *run.mutable_machine() = machine;
  return run;
}

// A finished case with `ranks` per-rank results.
inline v1::CaseResult NewCase(uint32_t index, v1::CaseStatus status, uint32_t ranks = 4) {
  v1::CaseResult result;
  result.set_index(index);
  result.set_variant(v1::VARIANT_LAMPORT);
  result.set_mode(v1::MODE_EAGER);
  result.set_world_size(ranks);
  result.set_m(128 + index);
  result.set_n(4096);
  result.set_dtype(v1::DTYPE_BF16);
  result.set_status(status);
  result.set_message(status == v1::CASE_STATUS_OK ? "" : "rank 1: residual_out[3,17] differs");
  result.mutable_timing()->set_median_us(10.5 + index);
  result.mutable_timing()->set_p90_us(12.25 + index);
  result.set_busbw_gbps(41.5);
  result.mutable_diff()->set_checked(128 * 4096);
  for (uint32_t r = 0; r < ranks; ++r) {
    v1::RankResult* rank = result.add_ranks();
    rank->set_rank(r);
    rank->set_device(r);
    rank->set_status(status);
    rank->mutable_timing()->set_median_us(10.0 + r);
    rank->mutable_diff()->set_max_ulp(r);
    rank->set_calls(20);
    rank->set_grid_blocks(64);
  }
  return result;
}

}  // namespace colltest::store::testing
