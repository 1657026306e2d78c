#include "server/workers/case_merge.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::server {
namespace {

namespace v1 = ::colltest::v1;
namespace wv1 = ::colltest::worker::v1;
using ::testing::HasSubstr;
using ::testing::Not;

const std::vector<uint32_t> kDevices = {0, 1, 2, 3};
// QuantDiffStats.max_code_distance when a NaN code was got or wanted.
constexpr uint32_t kNanDistance = 4294967295u;

wv1::CaseRequest Request(uint32_t m = 64, uint32_t n = 7168) {
  wv1::CaseRequest r;
  r.set_variant(v1::VARIANT_LAMPORT);
  r.set_mode(v1::MODE_GRAPH);
  r.set_m(m);
  r.set_n(n);
  r.set_dtype(v1::DTYPE_BF16);
  r.set_pattern(v1::PATTERN_NEG_ZERO);
  r.set_residual(true);
  return r;
}

std::vector<v1::RankResult> Ok(size_t world = 4) {
  std::vector<v1::RankResult> ranks(world);
  for (uint32_t r = 0; r < world; ++r) {
    ranks[r].set_rank(r);
    ranks[r].set_device(kDevices[r]);
    ranks[r].set_status(v1::CASE_STATUS_OK);
    ranks[r].set_suspect_peer(-1);
    ranks[r].mutable_diff()->set_first_bad_call(-1);
  }
  return ranks;
}

v1::RankResult Hang(uint32_t rank, int32_t suspect, const std::string& phase) {
  v1::RankResult r;
  r.set_rank(rank);
  r.set_status(v1::CASE_STATUS_HANG);
  r.set_suspect_peer(suspect);
  r.set_phase(phase);
  return r;
}

TEST(CaseMergeTest, TheRankThatDiedIsNamedNotTheRanksAbortedBecauseOfIt) {
  std::vector<v1::RankResult> ranks = Ok();
  for (auto& r : ranks) {
    r.set_status(v1::CASE_STATUS_ERROR);
    r.set_message("aborted: group torn down after rank 2 failed");
  }
  ranks[2].set_message("rank 2 (pid 77) died: killed by signal 9");
  const v1::CaseResult c = MergeCase(0, kDevices, Request(), ranks);
  EXPECT_EQ(c.status(), v1::CASE_STATUS_ERROR);
  EXPECT_THAT(c.message(), HasSubstr("rank 2 (pid 77) died: killed by signal 9"));
  EXPECT_THAT(c.message(), HasSubstr("also ranks 0, 1, 3"));
}

// A host deadline (or the first late rank) stops the group: the ranks that were waiting say for
// whom, the slow rank says nothing, and a rank torn down while it waited for nobody is a
// consequence. The case is a HANG naming the rank waited for, never an ERROR.
TEST(CaseMergeTest, RanksStoppedWhileWaitingNameTheCulpritAndAbortedRanksDoNotDrownIt) {
  std::vector<v1::RankResult> ranks = {
      Hang(0, 2, "a wait ended by the host deadline (8s)"),
      Hang(1, -1, "aborted"),
      Hang(2, -1, "host deadline"),
      Hang(3, 2, "a wait ended by the host deadline (8s)"),
  };
  ranks[1].set_message("aborted: group torn down after rank 2 failed");
  ranks[2].set_message("rank 2 did not answer within 8s");
  const v1::CaseResult c = MergeCase(0, kDevices, Request(), ranks);
  EXPECT_EQ(c.status(), v1::CASE_STATUS_HANG);
  EXPECT_EQ(HangCulprit(ranks), std::optional<uint32_t>(2));
  EXPECT_THAT(c.message(), HasSubstr("rank 2 never arrived: ranks 0, 3 waited for it"));
  EXPECT_THAT(c.message(), Not(HasSubstr("aborted")));
}

TEST(CaseMergeTest, AbortedRanksSpeakWhenNobodyElseDoes) {
  std::vector<v1::RankResult> ranks = {Hang(0, -1, "aborted"), Hang(1, -1, "aborted")};
  for (auto& r : ranks) r.set_message("aborted: group torn down");
  EXPECT_THAT(HangVerdict(ranks), HasSubstr("aborted: group torn down"));
}

TEST(CaseMergeTest, HangsOfRanksWaitingForARankThatStoppedAtAWrongCallAreWrong) {
  std::vector<v1::RankResult> ranks = Ok();
  ranks[0].set_status(v1::CASE_STATUS_WRONG);
  ranks[0].set_message("lamport: 12 of 4096 elements outside tolerance");
  ranks[2] = Hang(2, 0, "lamport start_sync");
  v1::CaseResult c = MergeCase(0, kDevices, Request(), ranks);
  EXPECT_EQ(c.status(), v1::CASE_STATUS_WRONG);
  EXPECT_THAT(c.message(), HasSubstr("outside tolerance"));
  EXPECT_THAT(c.message(), HasSubstr("then rank 0 never arrived: rank 2 waited for it"));
  // A hang that waited for a rank that did not report WRONG stays a hang.
  ranks[3] = Hang(3, 1, "lamport start_sync");
  c = MergeCase(0, kDevices, Request(), ranks);
  EXPECT_EQ(c.status(), v1::CASE_STATUS_HANG);
}

TEST(CaseMergeTest, HeaderComesFromTheRequest) {
  const v1::CaseResult c = MergeCase(7, kDevices, Request(), Ok());
  EXPECT_EQ(c.index(), 7u);
  EXPECT_EQ(c.variant(), v1::VARIANT_LAMPORT);
  EXPECT_EQ(c.resolved_variant(), v1::VARIANT_LAMPORT);
  EXPECT_EQ(c.mode(), v1::MODE_GRAPH);
  EXPECT_EQ(c.world_size(), 4u);
  EXPECT_EQ(c.m(), 64u);
  EXPECT_EQ(c.n(), 7168u);
  EXPECT_EQ(c.pattern(), v1::PATTERN_NEG_ZERO);
  EXPECT_TRUE(c.residual());
  EXPECT_EQ(c.status(), v1::CASE_STATUS_OK);
  EXPECT_EQ(c.message(), "");
  ASSERT_EQ(c.ranks_size(), 4);
  EXPECT_EQ(c.diff().first_bad_call(), -1);
}

TEST(CaseMergeTest, SeverityOrder) {
  EXPECT_LT(StatusSeverity(v1::CASE_STATUS_OK), StatusSeverity(v1::CASE_STATUS_UNSUPPORTED));
  EXPECT_LT(StatusSeverity(v1::CASE_STATUS_UNSUPPORTED), StatusSeverity(v1::CASE_STATUS_WRONG));
  EXPECT_LT(StatusSeverity(v1::CASE_STATUS_WRONG), StatusSeverity(v1::CASE_STATUS_HANG));
  EXPECT_LT(StatusSeverity(v1::CASE_STATUS_HANG), StatusSeverity(v1::CASE_STATUS_ERROR));
}

TEST(CaseMergeTest, WorstRankDecidesAndIsNamed) {
  auto ranks = Ok();
  ranks[2].set_status(v1::CASE_STATUS_WRONG);
  ranks[2].set_message("out[3,17] got 1.5 want 1.25");
  ranks[3].set_status(v1::CASE_STATUS_WRONG);
  ranks[3].set_message("out[0,0] got 2 want 1");
  ranks[1].set_status(v1::CASE_STATUS_UNSUPPORTED);
  const v1::CaseResult c = MergeCase(0, kDevices, Request(), ranks);
  EXPECT_EQ(c.status(), v1::CASE_STATUS_WRONG);
  EXPECT_EQ(c.message(), "rank 2: out[3,17] got 1.5 want 1.25 (also rank 3)");
}

TEST(CaseMergeTest, ErrorBeatsHangBecauseTheDeathCausedIt) {
  auto ranks = Ok();
  ranks[0] = Hang(0, 2, "start_sync");
  ranks[1] = Hang(1, 2, "start_sync");
  ranks[2].set_status(v1::CASE_STATUS_ERROR);
  ranks[2].set_message("worker exited (signal 9)");
  const v1::CaseResult c = MergeCase(0, kDevices, Request(), ranks);
  EXPECT_EQ(c.status(), v1::CASE_STATUS_ERROR);
  EXPECT_EQ(c.message(), "rank 2: worker exited (signal 9)");
}

TEST(CaseMergeTest, HangVerdictNamesTheCulprit) {
  auto ranks = Ok();
  ranks[0] = Hang(0, 1, "lamport phase B");
  ranks[2] = Hang(2, 1, "lamport phase B");
  ranks[3] = Hang(3, 1, "lamport phase B");
  ranks[1].set_status(v1::CASE_STATUS_OK);
  const v1::CaseResult c = MergeCase(0, kDevices, Request(), ranks);
  EXPECT_EQ(c.status(), v1::CASE_STATUS_HANG);
  EXPECT_EQ(c.message(), "rank 1 never arrived: ranks 0, 2, 3 waited for it in lamport phase B");
}

TEST(CaseMergeTest, HangVerdictWithOneWaiterAndSeveralPhases) {
  EXPECT_EQ(HangVerdict({Hang(1, 3, "lamport phase B")}),
            "rank 3 never arrived: rank 1 waited for it in lamport phase B");
  EXPECT_EQ(HangVerdict({Hang(0, 3, "start_sync"), Hang(1, 3, "end_sync"), Hang(2, 3, "")}),
            "rank 3 never arrived: rank 2 waited for it; rank 1 waited for it in end_sync; "
            "rank 0 waited for it in start_sync");
}

TEST(CaseMergeTest, MessagesThatNameTheirRankAreNotPrefixedTwice) {
  auto ranks = Ok();
  ranks[2].set_status(v1::CASE_STATUS_HANG);
  ranks[2].set_message("rank 2 did not answer within 3.025s");
  EXPECT_EQ(MergeCase(0, kDevices, Request(), ranks).message(),
            "rank 2 did not answer within 3.025s");
  ranks[2].set_status(v1::CASE_STATUS_ERROR);
  ranks[2].set_message("rank 21 is someone else");
  EXPECT_EQ(MergeCase(0, kDevices, Request(), ranks).message(), "rank 2: rank 21 is someone else");
}

TEST(CaseMergeTest, HangVerdictListsDisagreement) {
  v1::RankResult silent = Hang(3, -1, "");
  silent.set_message("missed the deadline (5000 ms + 2 s grace); killed");
  EXPECT_EQ(HangVerdict({Hang(0, 1, "lamport phase B"), Hang(1, 2, "start_sync"),
                         Hang(2, 1, "lamport phase B"), silent}),
            "ranks disagree: ranks 0, 2 waited for rank 1 in lamport phase B; rank 1 waited for "
            "rank 2 in start_sync; rank 3: missed the deadline (5000 ms + 2 s grace); killed");
}

TEST(CaseMergeTest, TimingIsTheMaxOverRanksAndBandwidthFollows) {
  auto ranks = Ok();
  for (uint32_t r = 0; r < 4; ++r) {
    v1::TimingStats* t = ranks[r].mutable_timing();
    t->set_median_us(10 + r);
    t->set_p10_us(20 - r);
    t->set_p90_us(30 + (r == 1 ? 5 : 0));
    t->set_min_us(5 + (r == 2 ? 1 : 0));
    t->set_max_us(40);
    t->set_samples(20);
  }
  const v1::CaseResult c = MergeCase(0, kDevices, Request(64, 7168), ranks);
  EXPECT_DOUBLE_EQ(c.timing().median_us(), 13);
  EXPECT_DOUBLE_EQ(c.timing().p10_us(), 20);
  EXPECT_DOUBLE_EQ(c.timing().p90_us(), 35);
  EXPECT_DOUBLE_EQ(c.timing().min_us(), 6);
  EXPECT_DOUBLE_EQ(c.timing().max_us(), 40);
  EXPECT_EQ(c.timing().samples(), 20u);
  const double bytes = 64.0 * 7168 * 2;
  const double algbw = bytes / 13e-6 / 1e9;
  EXPECT_DOUBLE_EQ(c.algbw_gbps(), algbw);
  EXPECT_DOUBLE_EQ(c.busbw_gbps(), algbw * 2 * 3 / 4);
}

TEST(CaseMergeTest, BusBandwidthForTwoRanks) {
  auto ranks = Ok(2);
  ranks[0].mutable_timing()->set_median_us(1);
  ranks[1].mutable_timing()->set_median_us(1);
  wv1::CaseRequest r = Request(1, 8);
  r.set_dtype(v1::DTYPE_FP32);
  const v1::CaseResult c = MergeCase(0, {0, 1}, r, ranks);
  EXPECT_DOUBLE_EQ(c.algbw_gbps(), 32 / 1e-6 / 1e9);
  EXPECT_DOUBLE_EQ(c.busbw_gbps(), c.algbw_gbps());  // 2(W-1)/W = 1 for W = 2
}

TEST(CaseMergeTest, NoTimingNoBandwidth) {
  const v1::CaseResult c = MergeCase(0, kDevices, Request(), Ok());
  EXPECT_EQ(c.algbw_gbps(), 0);
  EXPECT_EQ(c.busbw_gbps(), 0);
}

TEST(CaseMergeTest, DiffsAreMerged) {
  auto ranks = Ok();
  ranks[1].mutable_diff()->set_mismatches(3);
  ranks[1].mutable_diff()->set_checked(100);
  ranks[1].mutable_diff()->set_max_abs_err(0.5);
  ranks[1].mutable_diff()->set_first_bad("out[1,2] got 1 want 2");
  ranks[1].mutable_diff()->set_first_bad_call(7);
  ranks[3].mutable_diff()->set_mismatches(2);
  ranks[3].mutable_diff()->set_checked(100);
  ranks[3].mutable_diff()->set_max_rel_err(0.25);
  ranks[3].mutable_diff()->set_max_ulp(9);
  ranks[3].mutable_diff()->set_nan_inf(1);
  ranks[3].mutable_diff()->set_first_bad("out[0,0] got nan want 1");
  ranks[3].mutable_diff()->set_first_bad_call(2);
  ranks[2].mutable_diff()->set_max_ulp(4);
  ranks[2].mutable_diff()->set_max_abs_err(0.75);
  const v1::CaseResult c = MergeCase(0, kDevices, Request(), ranks);
  EXPECT_EQ(c.diff().mismatches(), 5u);
  EXPECT_EQ(c.diff().checked(), 200u);
  EXPECT_EQ(c.diff().nan_inf(), 1u);
  EXPECT_DOUBLE_EQ(c.diff().max_abs_err(), 0.75);
  EXPECT_DOUBLE_EQ(c.diff().max_rel_err(), 0.25);
  EXPECT_EQ(c.diff().max_ulp(), 9u);
  EXPECT_EQ(c.diff().first_bad(), "out[1,2] got 1 want 2");
  EXPECT_EQ(c.diff().first_bad_call(), 2);
}

TEST(CaseMergeTest, EpilogueComesFromTheRequest) {
  wv1::CaseRequest request = Request();
  const v1::CaseResult plain = MergeCase(0, kDevices, request, Ok());
  EXPECT_EQ(plain.epilogue(), v1::EPILOGUE_NONE);  // UNSPECIFIED is none
  EXPECT_FALSE(plain.keep_normed());
  EXPECT_EQ(plain.quant().first_bad_call(), -1);
  // keep_normed means nothing without a quantising epilogue.
  request.set_keep_normed(true);
  request.set_epilogue(v1::EPILOGUE_NONE);
  EXPECT_FALSE(MergeCase(0, kDevices, request, Ok()).keep_normed());
  request.set_epilogue(v1::EPILOGUE_FP8_TOKEN);
  auto ranks = Ok();
  ranks[0].set_fp8_format(v1::FP8_FORMAT_E4M3FNUZ);  // what rank 0 wrote
  const v1::CaseResult c = MergeCase(0, kDevices, request, ranks);
  EXPECT_EQ(c.epilogue(), v1::EPILOGUE_FP8_TOKEN);
  EXPECT_TRUE(c.keep_normed());
  EXPECT_EQ(c.fp8_format(), v1::FP8_FORMAT_E4M3FNUZ);
  const v1::CaseResult unsupported = UnsupportedCase(0, kDevices, request, "no epilogue here");
  EXPECT_EQ(unsupported.epilogue(), v1::EPILOGUE_FP8_TOKEN);
  EXPECT_EQ(unsupported.quant().first_bad_call(), -1);
}

v1::QuantDiffStats Quant(uint64_t codes, uint64_t bad, uint64_t scales, uint64_t bad_scales) {
  v1::QuantDiffStats q;
  q.set_checked_codes(codes);
  q.set_code_mismatches(bad);
  q.set_checked_scales(scales);
  q.set_scale_mismatches(bad_scales);
  q.set_first_bad_call(-1);
  return q;
}

// Counts add up, errors take the worst rank's, and the first bad row, its call and its rule all
// come from one rank: the one that went wrong first (ties: the lowest rank).
TEST(CaseMergeTest, QuantStatsAreMerged) {
  auto ranks = Ok();
  *ranks[0].mutable_quant() = Quant(100, 0, 4, 0);
  ranks[0].mutable_quant()->set_first_bad_call(0);  // as a rank that left it unset: no bad row
  *ranks[1].mutable_quant() = Quant(100, 2, 4, 1);
  ranks[1].mutable_quant()->set_tolerated(1);
  ranks[1].mutable_quant()->set_max_code_distance(3);
  ranks[1].mutable_quant()->set_max_dequant_err(0.5);
  ranks[1].mutable_quant()->set_rule(v1::QUANT_RULE_SCALE);
  ranks[1].mutable_quant()->set_first_bad("row 1: scale got 0.5 want 0.25");
  ranks[1].mutable_quant()->set_first_bad_call(4);
  *ranks[2].mutable_quant() = Quant(100, 5, 4, 0);
  ranks[2].mutable_quant()->set_nan_codes(2);
  ranks[2].mutable_quant()->set_max_code_distance(kNanDistance);
  ranks[2].mutable_quant()->set_max_scale_rel_err(0.125);
  ranks[2].mutable_quant()->set_expected_dequant_err(0.0625);
  ranks[2].mutable_quant()->set_rule(v1::QUANT_RULE_SATURATION);
  ranks[2].mutable_quant()->set_first_bad("row 0: code[3] got 0x7f want 0x7e (scaled 500)");
  ranks[2].mutable_quant()->set_first_bad_call(1);
  *ranks[3].mutable_quant() = Quant(100, 1, 4, 0);
  ranks[3].mutable_quant()->set_tolerated(2);
  ranks[3].mutable_quant()->set_rule(v1::QUANT_RULE_ROUNDING);
  ranks[3].mutable_quant()->set_first_bad("row 2: code[0] got 0x3a want 0x3b (scaled 13.5)");
  ranks[3].mutable_quant()->set_first_bad_call(1);  // as early as rank 2: the lower rank wins
  const v1::QuantDiffStats q = MergeCase(0, kDevices, Request(), ranks).quant();
  EXPECT_EQ(q.checked_codes(), 400u);
  EXPECT_EQ(q.code_mismatches(), 8u);
  EXPECT_EQ(q.tolerated(), 3u);
  EXPECT_EQ(q.nan_codes(), 2u);
  EXPECT_EQ(q.checked_scales(), 16u);
  EXPECT_EQ(q.scale_mismatches(), 1u);
  EXPECT_EQ(q.max_code_distance(), kNanDistance);
  EXPECT_DOUBLE_EQ(q.max_scale_rel_err(), 0.125);
  EXPECT_DOUBLE_EQ(q.max_dequant_err(), 0.5);
  EXPECT_DOUBLE_EQ(q.expected_dequant_err(), 0.0625);
  EXPECT_EQ(q.rule(), v1::QUANT_RULE_SATURATION);
  EXPECT_EQ(q.first_bad(), "row 0: code[3] got 0x7f want 0x7e (scaled 500)");
  EXPECT_EQ(q.first_bad_call(), 1);
}

TEST(CaseMergeTest, NoBadQuantRowLeavesNoFirstBad) {
  auto ranks = Ok();
  for (auto& r : ranks) *r.mutable_quant() = Quant(64, 0, 4, 0);
  const v1::QuantDiffStats q = MergeCase(0, kDevices, Request(), ranks).quant();
  EXPECT_EQ(q.checked_codes(), 256u);
  EXPECT_EQ(q.rule(), v1::QUANT_RULE_UNSPECIFIED);
  EXPECT_EQ(q.first_bad(), "");
  EXPECT_EQ(q.first_bad_call(), -1);
}

// A WRONG made by the quantised output names the rule its codes break, once.
TEST(CaseMergeTest, AQuantFailureNamesItsRule) {
  auto ranks = Ok();
  ranks[1].set_status(v1::CASE_STATUS_WRONG);
  ranks[1].set_message("one_stage: 3 of 4096 codes outside tolerance; first row 2: code[0]");
  *ranks[1].mutable_quant() = Quant(4096, 3, 64, 0);
  ranks[1].mutable_quant()->set_rule(v1::QUANT_RULE_ROUNDING);
  EXPECT_EQ(MergeCase(0, kDevices, Request(), ranks).message(),
            "rank 1: one_stage: 3 of 4096 codes outside tolerance; first row 2: code[0] "
            "(quant rule: rounding)");
  // Already named by the worker: not repeated.
  ranks[1].set_message("one_stage: 3 of 4096 codes break the rounding rule");
  EXPECT_EQ(MergeCase(0, kDevices, Request(), ranks).message(),
            "rank 1: one_stage: 3 of 4096 codes break the rounding rule");
  // "fp8_scale" is no mention of the scale rule.
  ranks[1].set_message("one_stage: 1 of 64 scales wrong at fp8_scale 0.5");
  ranks[1].mutable_quant()->set_scale_mismatches(1);
  ranks[1].mutable_quant()->set_rule(v1::QUANT_RULE_SCALE);
  EXPECT_THAT(MergeCase(0, kDevices, Request(), ranks).message(),
              HasSubstr("fp8_scale 0.5 (quant rule: scale)"));
  // No message: the first bad row says what went wrong.
  ranks[1].clear_message();
  ranks[1].mutable_quant()->set_first_bad("row 5: scale got 1 want 2");
  EXPECT_EQ(MergeCase(0, kDevices, Request(), ranks).message(),
            "rank 1: row 5: scale got 1 want 2 (quant rule: scale)");
}

// The normed output's own failure names no quant rule, even with the epilogue's codes all right.
TEST(CaseMergeTest, ADiffFailureNamesNoQuantRule) {
  auto ranks = Ok();
  ranks[2].set_status(v1::CASE_STATUS_WRONG);
  ranks[2].set_message("one_stage: 1 of 100 elements outside tolerance; first out[0,1]");
  *ranks[2].mutable_quant() = Quant(100, 0, 4, 0);
  ranks[2].mutable_quant()->set_tolerated(1);
  EXPECT_THAT(MergeCase(0, kDevices, Request(), ranks).message(), Not(HasSubstr("quant rule")));
}

TEST(CaseMergeTest, UnsupportedWhenEveryRankSaysSo) {
  auto ranks = Ok();
  for (auto& r : ranks) {
    r.set_status(v1::CASE_STATUS_UNSUPPORTED);
    r.set_message("nccl is not built into the cpu backend");
  }
  const v1::CaseResult c = MergeCase(0, kDevices, Request(), ranks);
  EXPECT_EQ(c.status(), v1::CASE_STATUS_UNSUPPORTED);
  EXPECT_EQ(c.message(), "rank 0: nccl is not built into the cpu backend");
}

TEST(CaseMergeTest, MissingAndShuffledRanks) {
  auto ranks = Ok();
  std::swap(ranks[0], ranks[3]);
  ranks.erase(ranks.begin() + 1);  // drops rank 1
  const v1::CaseResult c = MergeCase(0, kDevices, Request(), ranks);
  ASSERT_EQ(c.ranks_size(), 4);
  for (uint32_t r = 0; r < 4; ++r) EXPECT_EQ(c.ranks(r).rank(), r);
  EXPECT_EQ(c.status(), v1::CASE_STATUS_ERROR);
  EXPECT_THAT(c.message(), HasSubstr("rank 1: no result"));
}

TEST(CaseMergeTest, FailedCaseCarriesThePoolError) {
  const v1::CaseResult c =
      FailedCase(3, kDevices, Request(), absl::UnavailableError("worker 2 did not start"));
  EXPECT_EQ(c.index(), 3u);
  EXPECT_EQ(c.status(), v1::CASE_STATUS_ERROR);
  EXPECT_THAT(c.message(), HasSubstr("worker 2 did not start"));
  EXPECT_EQ(c.world_size(), 4u);
}

}  // namespace
}  // namespace colltest::server
