// Runs a whole cpu-backend group inside one test process: one CpuBackend per rank, connected
// through real shared memory, each rank's RunCase on its own thread, as the controller would.
#pragma once

#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "worker/backends/cpu/cpu_backend.h"

namespace colltest::cpu::testing {

class CpuGroup {
 public:
  explicit CpuGroup(uint32_t world, ProtocolBreaks breaks = {}, uint32_t resident_blocks = 2,
                    uint64_t max_case_bytes = 8u << 20) {
    colltest::worker::v1::ConnectRequest table;
    for (uint32_t r = 0; r < world; ++r) {
      CpuBackendOptions opt;
      opt.device = r;
      opt.resident_blocks = resident_blocks;
      opt.breaks = breaks;
      ranks_.push_back(std::make_unique<CpuBackend>(opt));
      colltest::worker::v1::InitRequest init;
      init.set_rank(r);
      init.set_world_size(world);
      init.set_device(r);
      init.set_max_case_bytes(max_case_bytes);
      auto reply = ranks_.back()->Init(init);
      EXPECT_TRUE(reply.ok()) << reply.status();
      auto* peer = table.add_peers();
      peer->set_rank(r);
      *peer->mutable_handles() = reply->handles();
    }
    for (auto& rank : ranks_) EXPECT_TRUE(rank->Connect(table).ok());
  }

  // Runs the case on every rank except `absent` (a rank that never arrives).
  std::vector<colltest::v1::RankResult> Run(const colltest::worker::v1::CaseRequest& req,
                                            int absent = -1) {
    std::vector<colltest::v1::RankResult> results(ranks_.size());
    std::vector<std::thread> threads;
    for (size_t r = 0; r < ranks_.size(); ++r) {
      if (static_cast<int>(r) == absent) continue;
      threads.emplace_back([&, r] {
        auto res = ranks_[r]->RunCase(req);
        EXPECT_TRUE(res.ok()) << res.status();
        if (res.ok()) results[r] = *res;
      });
    }
    for (auto& t : threads) t.join();
    return results;
  }

  void Reset() {
    for (auto& rank : ranks_) EXPECT_TRUE(rank->Reset().ok());
  }

 private:
  std::vector<std::unique_ptr<CpuBackend>> ranks_;
};

inline colltest::worker::v1::CaseRequest MakeCase(
    colltest::v1::Variant v, uint32_t m, uint32_t n,
    colltest::v1::Pattern p = colltest::v1::PATTERN_INTEGERS) {
  colltest::worker::v1::CaseRequest req;
  req.set_variant(v);
  req.set_mode(colltest::v1::MODE_EAGER);
  req.set_m(m);
  req.set_n(n);
  req.set_dtype(colltest::v1::DTYPE_BF16);
  req.set_residual(true);
  req.set_eps(1e-6f);
  req.set_warmup(2);
  req.set_iters(5);
  req.set_pattern(p);
  req.set_seed(1234);
  req.set_tolerance(colltest::v1::TOLERANCE_STRICT);
  req.set_timeout_ms(3000);
  return req;
}

}  // namespace colltest::cpu::testing
