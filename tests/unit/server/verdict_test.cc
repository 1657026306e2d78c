// The rules of server/workers/verdict.h, one test each: the watchdog's facts become rank results,
// and the ranks' results one case verdict (docs/verdicts.md).
#include "server/workers/verdict.h"

#include "common/worker_page.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::server {
namespace {

namespace v1 = ::colltest::v1;
using ::testing::HasSubstr;
using ::testing::Not;

// A group of `world` ranks on devices 10, 11, ... that every rank answered OK.
CaseFacts AllAnswered(size_t world) {
  CaseFacts facts;
  facts.deadline = absl::Seconds(8);
  facts.ranks.resize(world);
  for (size_t rank = 0; rank < world; ++rank) {
    RankFacts& f = facts.ranks[rank];
    f.device = static_cast<uint32_t>(10 + rank);
    f.pid = static_cast<int>(100 + rank);
    f.answer.emplace();
    f.answer->set_status(v1::CASE_STATUS_OK);
    f.answer->set_suspect_peer(-1);
  }
  return facts;
}

void Unanswered(CaseFacts& facts, size_t rank, CallFailure failure, int32_t awaited = -1) {
  facts.ranks[rank].answer.reset();
  facts.ranks[rank].failure = failure;
  facts.ranks[rank].awaited_at_stop = awaited;
}

v1::CaseResult AsCase(const std::vector<v1::RankResult>& ranks) {
  v1::CaseResult c;
  const CaseDecision d = CaseVerdict(ranks);
  c.set_status(d.status);
  c.set_message(d.message);
  for (const v1::RankResult& r : ranks) *c.add_ranks() = r;
  return c;
}

// Rule: a rank that misses the host deadline while its peers wait for it is a HANG naming it,
// found from the peers' pages, whoever ran out of time first.
TEST(VerdictTest, HostDeadlineNamesTheMissingRank) {
  CaseFacts facts = AllAnswered(4);
  facts.killed = true;
  facts.first_failed = 0;
  Unanswered(facts, 0, CallFailure::kLate, /*awaited=*/2);
  Unanswered(facts, 1, CallFailure::kKilledByUs, 2);
  Unanswered(facts, 2, CallFailure::kKilledByUs);
  Unanswered(facts, 3, CallFailure::kKilledByUs, 2);
  const std::vector<v1::RankResult> ranks = RankVerdicts(facts);
  EXPECT_EQ(ranks[0].status(), v1::CASE_STATUS_HANG);
  EXPECT_EQ(ranks[0].suspect_peer(), 2);
  EXPECT_EQ(ranks[2].device(), 12u);
  const v1::CaseResult c = AsCase(ranks);
  EXPECT_EQ(c.status(), v1::CASE_STATUS_HANG);
  EXPECT_THAT(c.message(), HasSubstr("rank 2 never arrived: rank 0 waited for it in a wait ended "
                                     "by the host deadline (8s)"));
  EXPECT_THAT(c.message(),
              HasSubstr("ranks 1, 3 waited for it in a wait ended when rank 0 failed"));
  const std::vector<uint32_t> devices = {10, 11, 12, 13};
  const std::optional<Culprit> culprit = HangCulpritOf(c, devices);
  ASSERT_TRUE(culprit.has_value());
  EXPECT_EQ(culprit->rank, 2u);
  EXPECT_EQ(culprit->device, 12u);
}

// Rule (docs/plugins.md): ranks stopped inside a kernel plugin's launch are a HANG naming the
// plugin, the call and every such rank on one line; a rank stopped outside the plugin while its
// peers were inside it is named apart; a missing rank says it never launched.
TEST(VerdictTest, RanksStoppedInsideAPluginAreNamedWithThePluginAndTheCall) {
  CaseFacts facts = AllAnswered(4);
  facts.plugin = "plugin:theirs";
  facts.killed = true;
  facts.first_failed = 0;
  Unanswered(facts, 0, CallFailure::kStalled);
  facts.ranks[0].stalled_for = absl::Seconds(2);
  Unanswered(facts, 1, CallFailure::kKilledByUs);
  Unanswered(facts, 3, CallFailure::kKilledByUs);
  for (size_t r : {0, 1, 3}) {
    facts.ranks[r].plugin_entry = static_cast<uint32_t>(PluginEntry::kLaunch);
    facts.ranks[r].plugin_call = 7;
  }
  facts.ranks[2].answer->set_status(v1::CASE_STATUS_HANG);
  facts.ranks[2].answer->set_phase("fault: missing_rank");
  facts.ranks[2].answer->set_message("fault injected: rank 2 never launched plugin:theirs");
  const std::vector<v1::RankResult> ranks = RankVerdicts(facts);
  EXPECT_EQ(ranks[1].status(), v1::CASE_STATUS_HANG);
  EXPECT_EQ(ranks[1].phase(), "plugin:theirs launch");
  const v1::CaseResult c = AsCase(ranks);
  EXPECT_EQ(c.status(), v1::CASE_STATUS_HANG);
  EXPECT_THAT(c.message(), HasSubstr("plugin:theirs launch (call 7) did not finish on rank 0: "
                                     "rank 0 (pid 100) made no progress for 2s"));
  EXPECT_THAT(c.message(), HasSubstr("(also ranks 1, 3)"));
  EXPECT_THAT(c.message(),
              HasSubstr("rank 2: fault injected: rank 2 never launched plugin:theirs"));

  // The rank whose own watchdog verdict stopped the group speaks for all, not one torn down with
  // it; a GPU rank waiting for its stream names the calls from the earliest unfinished one.
  CaseFacts gpu = facts;
  gpu.first_failed = 1;
  Unanswered(gpu, 0, CallFailure::kKilledByUs);
  Unanswered(gpu, 1, CallFailure::kLate);
  for (size_t r : {0, 1, 3}) {
    gpu.ranks[r].plugin_entry = static_cast<uint32_t>(PluginEntry::kKernel);
    gpu.ranks[r].plugin_call = 20;
  }
  EXPECT_THAT(AsCase(RankVerdicts(gpu)).message(),
              HasSubstr("plugin:theirs kernel (calls from 20) did not finish on rank 1: rank 1 "
                        "did not answer within 8s (also ranks 0, 3)"));

  // A rank stopped between two calls while the others were inside: named apart.
  facts.ranks[2].answer.reset();
  facts.ranks[2].failure = CallFailure::kKilledByUs;
  facts.ranks[2].plugin_entry = 0;
  const v1::CaseResult outside = AsCase(RankVerdicts(facts));
  EXPECT_THAT(outside.message(), HasSubstr("rank 2 (pid 102) was outside plugin:theirs"));
}

// A rank that died inside a plugin's entry point is an ERROR naming the plugin and the call.
TEST(VerdictTest, ARankThatDiedInsideAPluginNamesItAndTheCall) {
  CaseFacts facts = AllAnswered(2);
  facts.plugin = "plugin:theirs";
  facts.killed = true;
  facts.first_failed = 1;
  Unanswered(facts, 1, CallFailure::kDied);
  facts.ranks[1].exit = "killed by signal 11";
  facts.ranks[1].plugin_entry = static_cast<uint32_t>(PluginEntry::kInit);
  const std::vector<v1::RankResult> ranks = RankVerdicts(facts);
  EXPECT_EQ(ranks[1].status(), v1::CASE_STATUS_ERROR);
  EXPECT_EQ(ranks[1].message(), "rank 1 (pid 101) died in plugin:theirs init: killed by signal 11");
  // Not a plugin case: the page's entry means nothing.
  facts.plugin.clear();
  EXPECT_EQ(RankVerdicts(facts)[1].message(), "rank 1 (pid 101) died: killed by signal 11");
}

// A late rank that waited for nobody is its own culprit.
TEST(VerdictTest, LateRankWaitingForNobodyIsTheCulprit) {
  CaseFacts facts = AllAnswered(2);
  facts.first_failed = 1;
  Unanswered(facts, 1, CallFailure::kLate);
  const std::vector<v1::RankResult> ranks = RankVerdicts(facts);
  EXPECT_EQ(ranks[1].status(), v1::CASE_STATUS_HANG);
  EXPECT_EQ(ranks[1].phase(), "host deadline");
  EXPECT_EQ(ranks[1].message(), "rank 1 did not answer within 8s");
  EXPECT_EQ(HangCulprit(ranks), std::optional<uint32_t>(1));
}

// Rule: a worker that died is an ERROR naming it; its peers torn down because of it are ERROR
// "aborted" (a consequence), and the case message names the rank that died.
TEST(VerdictTest, AWorkerThatDiedIsAnErrorNamingItNotAHang) {
  CaseFacts facts = AllAnswered(3);
  facts.killed = true;
  facts.first_failed = 1;
  Unanswered(facts, 0, CallFailure::kKilledByUs);
  Unanswered(facts, 1, CallFailure::kDied);
  facts.ranks[1].exit = "killed by signal 6";
  Unanswered(facts, 2, CallFailure::kKilledByUs);
  const std::vector<v1::RankResult> ranks = RankVerdicts(facts);
  EXPECT_EQ(ranks[1].status(), v1::CASE_STATUS_ERROR);
  EXPECT_EQ(ranks[1].message(), "rank 1 (pid 101) died: killed by signal 6");
  EXPECT_EQ(ranks[0].status(), v1::CASE_STATUS_ERROR);
  EXPECT_EQ(ranks[0].message(), "aborted: group torn down after rank 1 failed");
  const v1::CaseResult c = AsCase(ranks);
  EXPECT_EQ(c.status(), v1::CASE_STATUS_ERROR);
  EXPECT_EQ(c.message(), "rank 1 (pid 101) died: killed by signal 6 (also ranks 0, 2)");
  EXPECT_EQ(GroupFailureSummary(ranks), "rank 1: rank 1 (pid 101) died: killed by signal 6");
}

// A peer torn down because another rank hung (not died) is a HANG "aborted", which speaks only
// when nobody else does; the stuck rank is the culprit.
TEST(VerdictTest, RanksTornDownAfterAStuckRankAreConsequences) {
  CaseFacts facts = AllAnswered(3);
  facts.first_failed = 2;
  Unanswered(facts, 0, CallFailure::kKilledByUs);
  Unanswered(facts, 1, CallFailure::kKilledByUs);
  Unanswered(facts, 2, CallFailure::kStalled);
  facts.ranks[2].stalled_for = absl::Milliseconds(3456);
  const std::vector<v1::RankResult> ranks = RankVerdicts(facts);
  EXPECT_EQ(ranks[0].status(), v1::CASE_STATUS_HANG);
  EXPECT_EQ(ranks[0].phase(), "aborted");
  EXPECT_EQ(ranks[2].phase(), "watchdog");
  const v1::CaseResult c = AsCase(ranks);
  EXPECT_EQ(c.status(), v1::CASE_STATUS_HANG);
  EXPECT_EQ(c.message(),
            "rank 2 (pid 102) made no progress for 3.4s (no heartbeat), alive but stuck: killed");
  EXPECT_EQ(HangCulprit(ranks), std::optional<uint32_t>(2));
}

TEST(VerdictTest, AFailedCallOfALiveWorkerIsAnInfrastructureError) {
  CaseFacts facts = AllAnswered(2);
  Unanswered(facts, 0, CallFailure::kError);
  facts.ranks[0].error_code = static_cast<int>(absl::StatusCode::kUnavailable);
  facts.ranks[0].error_message = "socket closed";
  const std::vector<v1::RankResult> ranks = RankVerdicts(facts);
  EXPECT_EQ(ranks[0].status(), v1::CASE_STATUS_ERROR);
  EXPECT_EQ(ranks[0].message(),
            "rank 0 RunCase failed (infrastructure): UNAVAILABLE: socket closed");
}

// Rule: WRONG over HANG. A rank stops at its first wrong call; the peers that then wait for it
// in vain are its consequence.
TEST(VerdictTest, HangsWaitingForAWrongRankAreWrong) {
  std::vector<v1::RankResult> ranks = RankVerdicts(AllAnswered(3));
  ranks[1].set_status(v1::CASE_STATUS_WRONG);
  ranks[1].set_message("12 of 4096 elements outside tolerance");
  ranks[0].set_status(v1::CASE_STATUS_HANG);
  ranks[0].set_suspect_peer(1);
  ranks[0].set_phase("start_sync");
  CaseDecision d = CaseVerdict(ranks);
  EXPECT_EQ(d.status, v1::CASE_STATUS_WRONG);
  EXPECT_EQ(d.message,
            "rank 1: 12 of 4096 elements outside tolerance; then rank 1 never arrived: rank 0 "
            "waited for it in start_sync");
  // One hang that waited for a rank that did not answer WRONG keeps the case a HANG.
  ranks[2].set_status(v1::CASE_STATUS_HANG);
  ranks[2].set_suspect_peer(0);
  d = CaseVerdict(ranks);
  EXPECT_EQ(d.status, v1::CASE_STATUS_HANG);
  EXPECT_THAT(d.message, Not(HasSubstr("outside tolerance")));
}

// Rule: a cancelled case has no verdict; why, and how the group recovers, is said here.
TEST(VerdictTest, CancelledCaseHasAReasonNotAVerdict) {
  CaseFacts facts = AllAnswered(2);
  facts.cancelled = true;
  facts.reset = true;
  EXPECT_EQ(CancelledCaseReason(facts), "a cancelled case stopped mid-protocol");
  facts.reset = false;
  facts.killed = true;
  facts.cancel_killed = true;
  Unanswered(facts, 0, CallFailure::kKilledByUs, /*awaited=*/1);
  EXPECT_EQ(CancelledCaseReason(facts), "a cancelled case did not stop within 1 s: killed");
  const std::vector<v1::RankResult> ranks = RankVerdicts(facts);
  EXPECT_EQ(ranks[0].status(), v1::CASE_STATUS_ERROR);
  EXPECT_EQ(ranks[0].message(), "cancelled: killed after it did not stop within 1s");
}

TEST(VerdictTest, PoolFailureAndMissingRanksAreErrors) {
  const CaseDecision d = PoolFailureVerdict(absl::UnavailableError("rank 1 did not start"));
  EXPECT_EQ(d.status, v1::CASE_STATUS_ERROR);
  EXPECT_EQ(d.message, "workers could not run the case: rank 1 did not start");
  EXPECT_EQ(NoResultFrom(3, 13).status(), v1::CASE_STATUS_ERROR);
  v1::RankResult r;
  RequireStatus(r);
  EXPECT_EQ(r.status(), v1::CASE_STATUS_ERROR);
  EXPECT_EQ(r.message(), "the worker returned no status");
  EXPECT_FALSE(IsFailure(v1::CASE_STATUS_UNSUPPORTED));
  EXPECT_TRUE(IsFailure(v1::CASE_STATUS_WRONG));
}

}  // namespace
}  // namespace colltest::server
