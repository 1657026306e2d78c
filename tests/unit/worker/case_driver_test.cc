// The case driver (worker/case_driver.h) over a fake runtime that logs every operation: the order
// of warm-up, timed calls, checks and the stress interleaving, and the rule that arming is never
// captured (docs/design.md section 4).
#include "worker/case_driver.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/defaults.h"
#include "gtest/gtest.h"
#include "worker/case_config.h"
#include "worker/protocol/limits.h"

namespace colltest::worker {
namespace {

using colltest::v1::Variant;

std::string V(Variant v) {
  switch (v) {
    case colltest::v1::VARIANT_ONE_STAGE:
      return "one_stage";
    case colltest::v1::VARIANT_TWO_KERNEL:
      return "two_kernel";
    case colltest::v1::VARIANT_LAMPORT:
      return "lamport";
    default:
      return "other";
  }
}

class FakeTimer final : public CaseTimer {
 public:
  explicit FakeTimer(std::vector<std::string>* log) : log_(log) {}
  absl::Status Start() override {
    log_->push_back("timer start");
    return absl::OkStatus();
  }
  absl::Status Stop() override {
    log_->push_back("timer stop");
    ++pairs_;
    return absl::OkStatus();
  }
  std::vector<double> Samples(double divide) const override {
    return std::vector<double>(pairs_, 10.0 / divide);
  }

 private:
  std::vector<std::string>* log_;
  int pairs_ = 0;
};

// Logs every operation; inside a capture, Launch and Check are logged with "cap " in front.
class FakeRuntime final : public CaseRuntime {
 public:
  std::vector<std::string> log;
  bool armed_while_capturing = false;
  int hang_at_drain = -1;  // the drain (0-based) that reports a hang
  int64_t bad_read = -1;   // the ReadChecks (0-based) that reports a mismatch ...
  uint32_t bad_index = 0;  // ... in this accumulator
  HangFacts hang{1, "lamport phase B", 3, std::nullopt};
  bool first_replay_warms = true;

  absl::StatusOr<bool> Arm() override {
    if (capturing_) armed_while_capturing = true;
    log.push_back("arm");
    return false;
  }
  absl::Status Generate(uint32_t slot, uint64_t call, uint32_t m) override {
    log.push_back(absl::StrCat("gen ", slot, " ", call, " ", m));
    return absl::OkStatus();
  }
  absl::Status Launch(Variant variant, uint32_t m, uint32_t slot) override {
    ++calls_;
    log.push_back(absl::StrCat(capturing_ ? "cap " : "", "launch ", V(variant), " ", m, " ", slot));
    return absl::OkStatus();
  }
  absl::StatusOr<bool> Drain() override {
    log.push_back("drain");
    return drains_++ == hang_at_drain;
  }
  absl::Status Settle(const char* what) override {
    log.push_back(absl::StrCat("settle ", what));
    return absl::OkStatus();
  }
  std::unique_ptr<CaseTimer> NewTimer() override { return std::make_unique<FakeTimer>(&log); }
  absl::Status BeginCapture() override {
    capturing_ = true;
    log.push_back("begin");
    return absl::OkStatus();
  }
  absl::Status EndCapture(bool keep) override {
    capturing_ = false;
    log.push_back(keep ? "end" : "end discard");
    return absl::OkStatus();
  }
  absl::Status Replay() override {
    log.push_back("replay");
    return absl::OkStatus();
  }
  bool FirstReplayWarms() const override { return first_replay_warms; }
  absl::Status ClearChecks(uint32_t count) override {
    log.push_back(absl::StrCat("clear ", count));
    return absl::OkStatus();
  }
  absl::Status Check(uint64_t call, uint32_t m, uint32_t index) override {
    log.push_back(absl::StrCat(capturing_ ? "cap " : "", "check ", call, " ", m, " ", index));
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<uint64_t>> ReadChecks(uint32_t count) override {
    log.push_back(absl::StrCat("read ", count));
    std::vector<uint64_t> mismatches(count, 0);
    if (reads_++ == bad_read) mismatches[bad_index] = 1;
    return mismatches;
  }
  absl::Status FoldCheck(uint32_t index, int64_t call, bool values,
                         const std::string& note) override {
    log.push_back(absl::StrCat("fold ", index, " ", call, values ? " values" : "", note));
    return absl::OkStatus();
  }
  uint32_t Grid(Variant, uint32_t) const override { return 4; }
  HangFacts Hang() const override { return hang; }

 private:
  bool capturing_ = false;
  int drains_ = 0;
  int64_t reads_ = 0;
};

class FakeRules final : public CaseRules {
 public:
  size_t capacity() const override { return size_t{1} << 20; }
  size_t tb_capacity() const override { return 256; }
  uint32_t max_slots() const override { return 8; }
  absl::StatusOr<std::string> RefuseVariant(
      const colltest::worker::v1::CaseRequest&) const override {
    return std::string();
  }
  absl::StatusOr<std::string> RefuseShape(const CasePlan&) const override { return std::string(); }
};

colltest::worker::v1::CaseRequest Request(Variant v, colltest::v1::Mode mode) {
  colltest::worker::v1::CaseRequest req;
  req.set_variant(v);
  req.set_mode(mode);
  req.set_m(4);
  req.set_n(64);
  req.set_dtype(colltest::v1::DTYPE_BF16);
  req.set_pattern(colltest::v1::PATTERN_INTEGERS);
  req.set_tolerance(colltest::v1::TOLERANCE_STRICT);
  req.set_seed(7);
  req.set_warmup(2);
  req.set_iters(3);
  return req;
}

// Plans `req` on rank 0 of 2 and drives it over `rt`.
colltest::v1::RankResult Drive(const colltest::worker::v1::CaseRequest& req, FakeRuntime& rt) {
  absl::StatusOr<PlannedCase> planned = PlanCase(req, 0, 2, 0, FakeRules());
  EXPECT_TRUE(planned.ok()) << planned.status();
  EXPECT_TRUE(planned->plan.has_value());
  absl::StatusOr<colltest::v1::RankResult> result =
      DriveCase(*planned->plan, rt, std::move(planned->result));
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? *result : colltest::v1::RankResult();
}

// Every log line that starts with `prefix`, in order.
std::vector<std::string> Lines(const std::vector<std::string>& log, const std::string& prefix) {
  std::vector<std::string> out;
  for (const std::string& line : log) {
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  }
  return out;
}

TEST(CaseDriver, ArmingIsNeverCaptured) {
  struct Mode {
    colltest::v1::Mode mode;
    uint32_t stress_calls;
  };
  for (const Mode m : {Mode{colltest::v1::MODE_EAGER, 0}, Mode{colltest::v1::MODE_GRAPH, 0},
                       Mode{colltest::v1::MODE_EAGER, 7}, Mode{colltest::v1::MODE_GRAPH, 7}}) {
    SCOPED_TRACE(absl::StrCat("mode ", m.mode, " stress ", m.stress_calls));
    colltest::worker::v1::CaseRequest req = Request(colltest::v1::VARIANT_LAMPORT, m.mode);
    req.set_stress_calls(m.stress_calls);
    FakeRuntime rt;
    Drive(req, rt);
    EXPECT_FALSE(rt.armed_while_capturing);
    // Arming comes once, first: before any input, call or capture.
    ASSERT_FALSE(rt.log.empty());
    EXPECT_EQ(rt.log.front(), "arm");
    EXPECT_EQ(Lines(rt.log, "arm").size(), 1u);
  }
}

TEST(CaseDriver, EagerWarmsUpTimesThenChecksTheLastCall) {
  FakeRuntime rt;
  const colltest::v1::RankResult r =
      Drive(Request(colltest::v1::VARIANT_ONE_STAGE, colltest::v1::MODE_EAGER), rt);
  const std::vector<std::string> want = {"arm",
                                         "gen 0 0 4",
                                         "launch one_stage 4 0",
                                         "gen 1 1 4",
                                         "launch one_stage 4 1",
                                         "gen 2 2 4",
                                         "timer start",
                                         "launch one_stage 4 2",
                                         "timer stop",
                                         "gen 3 3 4",
                                         "timer start",
                                         "launch one_stage 4 3",
                                         "timer stop",
                                         "gen 4 4 4",
                                         "timer start",
                                         "launch one_stage 4 4",
                                         "timer stop",
                                         "drain",
                                         "clear 1",
                                         "check 4 4 0",
                                         "read 1",
                                         "fold 0 4 values",
                                         "settle finish case"};
  EXPECT_EQ(rt.log, want);
  EXPECT_EQ(r.calls(), 5u);
  EXPECT_EQ(r.timing().samples(), 3u);
  EXPECT_EQ(r.status(), colltest::v1::CASE_STATUS_OK);
}

TEST(CaseDriver, GraphReplaysAboutTheIterationsAskedFor) {
  // The fewest replays of at most kGraphCalls calls, the iterations shared evenly among them.
  EXPECT_EQ(GraphCallsPerReplay(0), 1u);
  EXPECT_EQ(GraphCallsPerReplay(1), 1u);
  EXPECT_EQ(GraphCallsPerReplay(16), 16u);
  EXPECT_EQ(GraphCallsPerReplay(17), 9u);
  EXPECT_EQ(GraphCallsPerReplay(20), 10u);
  EXPECT_EQ(GraphCallsPerReplay(200), 16u);
  for (uint32_t iters = 1; iters <= 300; ++iters) {
    const uint32_t k = GraphCallsPerReplay(iters);
    const uint32_t replays = (iters + k - 1) / k;
    EXPECT_LE(k, kGraphCalls) << iters;
    EXPECT_EQ(replays, (iters + kGraphCalls - 1) / kGraphCalls) << iters;  // no extra replay
    EXPECT_LT(replays * k - iters, replays) << iters;  // less than one call per replay over
  }
}

TEST(CaseDriver, GraphTimesEveryReplayAfterAnUntimedOneOnlyWhereItWarms) {
  for (const bool warms : {true, false}) {
    SCOPED_TRACE(warms ? "first replay warms" : "first replay is like the others");
    colltest::worker::v1::CaseRequest req =
        Request(colltest::v1::VARIANT_ONE_STAGE, colltest::v1::MODE_GRAPH);
    req.set_iters(20);
    FakeRuntime rt;
    rt.first_replay_warms = warms;
    const colltest::v1::RankResult r = Drive(req, rt);
    EXPECT_EQ(Lines(rt.log, "cap launch").size(), 10u);
    EXPECT_EQ(Lines(rt.log, "replay").size(), warms ? 3u : 2u);
    EXPECT_EQ(Lines(rt.log, "timer start").size(), 2u);
    EXPECT_EQ(r.timing().samples(), 2u);
  }
}

TEST(CaseDriver, EagerStressInterleavesOtherVariantsIntoLamport) {
  colltest::worker::v1::CaseRequest req =
      Request(colltest::v1::VARIANT_LAMPORT, colltest::v1::MODE_EAGER);
  req.set_stress_calls(6);
  FakeRuntime rt;
  Drive(req, rt);
  // two_kernel at i % 3 == 2 (inputs of call 2^40 + i), one_stage at i % 5 == 4 (2^41 + i), each
  // before the Lamport call of the same i; every Lamport call is drained and checked alone.
  std::vector<std::string> launches;
  for (const std::string& line : rt.log) {
    if (line.rfind("launch", 0) == 0) launches.push_back(line.substr(0, line.find(' ', 7)));
  }
  const std::vector<std::string> want = {"launch lamport", "launch lamport",    "launch two_kernel",
                                         "launch lamport", "launch lamport",    "launch one_stage",
                                         "launch lamport", "launch two_kernel", "launch lamport"};
  EXPECT_EQ(launches, want);
  const std::vector<std::string> gens = Lines(rt.log, "gen 2 ");
  ASSERT_EQ(gens.size(), 2u);
  EXPECT_EQ(gens[0].rfind(absl::StrCat("gen 2 ", (uint64_t{1} << 40) + 2, " "), 0), 0u);
  EXPECT_EQ(Lines(rt.log, "gen 4 ")[0].rfind(absl::StrCat("gen 4 ", (uint64_t{2} << 40) + 4), 0),
            0u);
  EXPECT_EQ(Lines(rt.log, "drain").size(), 6u);
  EXPECT_EQ(Lines(rt.log, "check").size(), 6u);
  // Each check follows its call's drain.
  for (size_t i = 1; i < rt.log.size(); ++i) {
    if (rt.log[i] == "clear 1") {
      EXPECT_EQ(rt.log[i - 1], "drain");
    }
  }
}

TEST(CaseDriver, EagerStressOfOneStageHasNoInterleaving) {
  colltest::worker::v1::CaseRequest req =
      Request(colltest::v1::VARIANT_ONE_STAGE, colltest::v1::MODE_EAGER);
  req.set_stress_calls(6);
  FakeRuntime rt;
  Drive(req, rt);
  EXPECT_EQ(Lines(rt.log, "launch one_stage").size(), 6u);
  EXPECT_EQ(Lines(rt.log, "launch").size(), 6u);
}

TEST(CaseDriver, GraphWarmsUpCapturesThenReplaysTimed) {
  colltest::worker::v1::CaseRequest req =
      Request(colltest::v1::VARIANT_ONE_STAGE, colltest::v1::MODE_GRAPH);
  req.set_warmup(1);
  req.set_iters(20);  // 2 timed replays of 10 captured calls
  FakeRuntime rt;
  const colltest::v1::RankResult r = Drive(req, rt);
  std::vector<std::string> want = {"arm"};
  for (int s = 0; s < 8; ++s) want.push_back(absl::StrCat("gen ", s, " ", s, " 4"));
  want.push_back("launch one_stage 4 0");
  want.push_back("drain");
  want.push_back("begin");
  for (int c = 0; c < 10; ++c) want.push_back(absl::StrCat("cap launch one_stage 4 ", c % 8));
  want.insert(want.end(), {"end", "replay", "timer start", "replay", "timer stop", "timer start",
                           "replay", "timer stop", "drain", "clear 1", "check 1 4 0", "read 1",
                           "fold 0 1 values", "settle finish case"});
  EXPECT_EQ(rt.log, want);
  EXPECT_EQ(r.calls(), 1u + 10u * 3u);  // warm-up, the untimed replay and two timed ones
  EXPECT_EQ(r.timing().samples(), 2u);
}

TEST(CaseDriver, GraphStressChecksEveryCapturedCallAndFoldsTheFailingOneFirst) {
  colltest::worker::v1::CaseRequest req =
      Request(colltest::v1::VARIANT_LAMPORT, colltest::v1::MODE_GRAPH);
  req.set_stress_calls(200);  // 64 captured calls
  FakeRuntime rt;
  rt.bad_read = 1;  // the second replay's call 5 fails
  rt.bad_index = 5;
  Drive(req, rt);
  const std::vector<std::string> captured = Lines(rt.log, "cap ");
  // Per captured call: the other variants (own slots 6 and 7), the Lamport call, its check.
  ASSERT_GE(captured.size(), 10u);
  auto starts = [](const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; };
  auto ends = [](const std::string& s, const std::string& e) {
    return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
  };
  EXPECT_TRUE(starts(captured[0], "cap launch lamport ") && ends(captured[0], " 0")) << captured[0];
  EXPECT_TRUE(starts(captured[1], "cap check 0 ") && ends(captured[1], " 0")) << captured[1];
  EXPECT_TRUE(starts(captured[4], "cap launch two_kernel ") && ends(captured[4], " 6"))
      << captured[4];
  EXPECT_TRUE(starts(captured[5], "cap launch lamport ") && ends(captured[5], " 2")) << captured[5];
  EXPECT_TRUE(starts(captured[6], "cap check 2 ") && ends(captured[6], " 2")) << captured[6];
  EXPECT_EQ(Lines(rt.log, "cap check").size(), 64u);
  EXPECT_EQ(Lines(rt.log, "cap launch two_kernel").size(), 21u);
  EXPECT_EQ(Lines(rt.log, "cap launch one_stage").size(), 12u);
  // Generated before the capture, cleared and settled; the capture never generates.
  EXPECT_EQ(Lines(rt.log, "gen").size(), 8u);
  EXPECT_EQ(Lines(rt.log, "gen 6 ")[0], absl::StrCat("gen 6 ", (uint64_t{1} << 40) + 6, " 4"));
  const size_t begin = std::find(rt.log.begin(), rt.log.end(), "begin") - rt.log.begin();
  ASSERT_GE(begin, 2u);
  EXPECT_EQ(rt.log[begin - 2], "clear 64");
  EXPECT_EQ(rt.log[begin - 1], "settle prepare graph stress");
  EXPECT_EQ(Lines(rt.log, "replay").size(), 2u);  // stopped at the failing replay
  const std::vector<std::string> folds = Lines(rt.log, "fold");
  ASSERT_EQ(folds.size(), 64u);
  EXPECT_EQ(folds[0], "fold 5 69, graph replay 1 of 64 captured calls");
  EXPECT_EQ(folds[58], "fold 63 127 values, graph replay 1 of 64 captured calls");
  EXPECT_EQ(folds[59], "fold 0 64, graph replay 1 of 64 captured calls");
}

TEST(CaseDriver, HangEndsTheLoopAndNamesThePeer) {
  colltest::worker::v1::CaseRequest req =
      Request(colltest::v1::VARIANT_LAMPORT, colltest::v1::MODE_EAGER);
  req.set_stress_calls(6);
  FakeRuntime rt;
  rt.hang_at_drain = 2;
  const colltest::v1::RankResult r = Drive(req, rt);
  EXPECT_EQ(r.status(), colltest::v1::CASE_STATUS_HANG);
  EXPECT_EQ(r.suspect_peer(), 1);
  EXPECT_EQ(r.phase(), "lamport phase B");
  EXPECT_EQ(r.message(),
            absl::StrCat("rank 0 waited for rank 1 in lamport phase B (block 3) past the ",
                         kDefaultCaseTimeoutMs, " ms timeout"));
  EXPECT_EQ(Lines(rt.log, "check").size(), 2u);
  EXPECT_EQ(rt.log.back(), "settle finish case");
}

TEST(CaseDriver, HangMessageCarriesThePackWhereKnown) {
  EXPECT_EQ(HangMessage(2, HangFacts{0, "lamport_tb consume", 1, 9}, 300),
            "rank 2 waited for rank 0 in lamport_tb consume (block 1, pack 9) past the 300 ms "
            "timeout");
  EXPECT_EQ(HangMessage(2, HangFacts{-1, "fault: hang_end_sync", 0, std::nullopt}, 300),
            "rank 2: fault: hang_end_sync");
}

TEST(CaseDriver, PlanRefusesAndEndsCasesBeforeTheyStart) {
  colltest::worker::v1::CaseRequest req =
      Request(colltest::v1::VARIANT_LAMPORT_TB, colltest::v1::MODE_EAGER);
  absl::StatusOr<PlannedCase> p = PlanCase(req, 0, 2, 0, FakeRules());
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->plan.has_value());  // 4 x 64 bf16 = 512 bytes, over lamport_tb's 256
  EXPECT_EQ(p->result.status(), colltest::v1::CASE_STATUS_UNSUPPORTED);
  req.set_variant(colltest::v1::VARIANT_LAMPORT);
  req.set_fault("missing_rank:0");
  p = PlanCase(req, 0, 2, 0, FakeRules());
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->plan.has_value());
  EXPECT_EQ(p->result.status(), colltest::v1::CASE_STATUS_HANG);
  req.set_fault("no_such_fault");
  p = PlanCase(req, 0, 2, 0, FakeRules());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->result.status(), colltest::v1::CASE_STATUS_ERROR);
  req.set_fault("");
  p = PlanCase(req, 0, 2, 0, FakeRules());
  ASSERT_TRUE(p.ok() && p->plan.has_value());
  EXPECT_EQ(p->plan->timeout_ms, kDefaultCaseTimeoutMs);
  EXPECT_EQ(p->plan->slots, 8u);
  req.set_variant(colltest::v1::VARIANT_UNSPECIFIED);
  EXPECT_FALSE(PlanCase(req, 0, 2, 0, FakeRules()).ok());
}

}  // namespace
}  // namespace colltest::worker

namespace colltest::worker {
namespace {

// Init of a rank placed on a shared device (colltestd --ranks-per-gpu): the group's ranks on the
// device are some of its slots, and both are bounded; a bad value names the field and the limit.
TEST(InitRequestCheck, RanksOnADeviceAreSomeOfItsSlots) {
  colltest::worker::v1::InitRequest request;
  request.set_world_size(4);
  request.set_ranks_on_device(4);
  request.set_device_slots(8);
  EXPECT_TRUE(CheckInitRequest(request).ok());
  request.set_device_slots(2);
  EXPECT_EQ(CheckInitRequest(request).message(),
            "ranks_on_device = 4: must be <= world_size and <= device_slots (2)");
  request.set_device_slots(0);  // a controller without slots
  request.set_ranks_on_device(1);
  EXPECT_TRUE(CheckInitRequest(request).ok());
  request.set_device_slots(65);
  EXPECT_EQ(CheckInitRequest(request).message(),
            absl::StrCat("device_slots = 65: must be in 0..", protocol::kMaxRanks));
}

}  // namespace
}  // namespace colltest::worker
