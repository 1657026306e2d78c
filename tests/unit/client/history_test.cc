// `history`: its flags, --since, and following the pages of the history.
#include "client/flags/history.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::client {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// 2026-11-30T12:00:00Z
const absl::Time kNow = absl::FromUnixSeconds(1796040000);

int64_t Since(const std::string& text) {
  absl::StatusOr<int64_t> since = ParseSinceFlag("--since", text, kNow);
  EXPECT_TRUE(since.ok()) << text << ": " << since.status();
  return since.value_or(-1);
}

TEST(ParseSinceTest, DateIsItsUtcMidnight) {
  EXPECT_EQ(Since("2026-11-01"), 1793491200000);
  EXPECT_EQ(Since(" 1970-01-01 "), 0);
}

TEST(ParseSinceTest, Rfc3339WithZoneOrOffset) {
  EXPECT_EQ(Since("2026-11-01T08:00:00Z"), 1793491200000 + 8 * 3600000);
  EXPECT_EQ(Since("2026-11-01T10:00:00+02:00"), 1793491200000 + 8 * 3600000);
  EXPECT_EQ(Since("2026-11-01T08:00:00.250Z"), 1793491200000 + 8 * 3600000 + 250);
}

TEST(ParseSinceTest, DurationIsThatLongAgo) {
  EXPECT_EQ(Since("24h"), absl::ToUnixMillis(kNow - absl::Hours(24)));
  EXPECT_EQ(Since("7d"), absl::ToUnixMillis(kNow - absl::Hours(7 * 24)));
  EXPECT_EQ(Since("90m"), absl::ToUnixMillis(kNow - absl::Minutes(90)));
  // Further back than 1970 is simply "everything".
  EXPECT_EQ(Since("36500d"), 0);
}

TEST(ParseSinceTest, BareNumbersAndGarbageAreRefused) {
  for (const char* text :
       {"2026", "500", "yesterday", "2026-13-01", "2026-11-01T08:00", "-24h", ""}) {
    absl::StatusOr<int64_t> since = ParseSinceFlag("--since", text, kNow);
    ASSERT_FALSE(since.ok()) << text;
    EXPECT_EQ(since.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(since.status().message(),
                HasSubstr(absl::StrCat("--since: cannot parse '", text, "': expected a date")));
  }
}

TEST(ParseSinceTest, BeforeTheEpochIsRefused) {
  absl::StatusOr<int64_t> since = ParseSinceFlag("--since", "1969-12-31", kNow);
  ASSERT_FALSE(since.ok());
  EXPECT_THAT(since.status().message(), HasSubstr("before 1970-01-01"));
}

TEST(BuildListRunsRequestTest, EveryFilter) {
  HistoryFlags flags;
  flags.label = "nightly";
  flags.state = "Interrupted";
  flags.since = "2026-11-01";
  flags.variant = "lamport_tb";
  flags.limit = "1k";
  flags.page_token = "p-2";
  absl::StatusOr<v1::ListRunsRequest> request = BuildListRunsRequest(flags, kNow);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->label(), "nightly");
  EXPECT_EQ(request->state(), v1::RUN_STATE_INTERRUPTED);
  EXPECT_EQ(request->since_unix_ms(), 1793491200000);
  EXPECT_EQ(request->variant(), v1::VARIANT_LAMPORT_TB);
  EXPECT_EQ(request->limit(), 1024u);
  EXPECT_EQ(request->page_token(), "p-2");
}

TEST(BuildListRunsRequestTest, NoFlagsIsAnyRun) {
  absl::StatusOr<v1::ListRunsRequest> request = BuildListRunsRequest(HistoryFlags(), kNow);
  ASSERT_TRUE(request.ok());
  EXPECT_EQ(request->ShortDebugString(), "");
}

TEST(BuildListRunsRequestTest, EveryStateByName) {
  const std::vector<std::pair<const char*, v1::RunState>> states = {
      {"done", v1::RUN_STATE_DONE},     {"cancelled", v1::RUN_STATE_CANCELLED},
      {"failed", v1::RUN_STATE_FAILED}, {"interrupted", v1::RUN_STATE_INTERRUPTED},
      {"queued", v1::RUN_STATE_QUEUED}, {"RUNNING", v1::RUN_STATE_RUNNING},
  };
  for (const auto& [name, state] : states) {
    HistoryFlags flags;
    flags.state = name;
    absl::StatusOr<v1::ListRunsRequest> request = BuildListRunsRequest(flags, kNow);
    ASSERT_TRUE(request.ok()) << name;
    EXPECT_EQ(request->state(), state) << name;
  }
}

TEST(BuildListRunsRequestTest, BadValuesNameTheirFlag) {
  const std::vector<std::pair<HistoryFlags, std::string>> cases = [] {
    std::vector<std::pair<HistoryFlags, std::string>> out(4);
    out[0].first.state = "finished";
    out[0].second = "--state: unknown state 'finished': expected one of done, cancelled";
    out[1].first.variant = "turbo";
    out[1].second = "--variant: unknown variant 'turbo'";
    out[2].first.limit = "ten";
    out[2].second = "--limit: cannot parse 'ten'";
    out[3].first.since = "soon";
    out[3].second = "--since: cannot parse 'soon'";
    return out;
  }();
  for (const auto& [flags, message] : cases) {
    absl::StatusOr<v1::ListRunsRequest> request = BuildListRunsRequest(flags, kNow);
    ASSERT_FALSE(request.ok()) << message;
    EXPECT_THAT(request.status().message(), HasSubstr(message));
  }
}

// A history of `total` runs served `per_page` at a time, with page tokens "p<first index>".
class FakeHistory {
 public:
  FakeHistory(int total, int per_page) : total_(total), per_page_(per_page) {}

  absl::StatusOr<v1::ListRunsResponse> operator()(const v1::ListRunsRequest& request) {
    requests.push_back(request);
    const int first = request.page_token().empty() ? 0 : std::stoi(request.page_token().substr(1));
    v1::ListRunsResponse response;
    for (int i = first; i < std::min(total_, first + per_page_); ++i) {
      response.add_runs()->set_run_id(absl::StrCat("r-", i));
    }
    if (first + per_page_ < total_)
      response.set_next_page_token(absl::StrCat("p", first + per_page_));
    return response;
  }

  std::vector<v1::ListRunsRequest> requests;

 private:
  int total_;
  int per_page_;
};

std::vector<std::string> Ids(const v1::ListRunsResponse& response) {
  std::vector<std::string> ids;
  for (const v1::RunSummary& r : response.runs()) ids.push_back(r.run_id());
  return ids;
}

TEST(FetchHistoryTest, OnePageWithoutAll) {
  FakeHistory fake(5, 2);
  absl::StatusOr<v1::ListRunsResponse> history =
      FetchHistory(v1::ListRunsRequest(), /*all=*/false, std::ref(fake));
  ASSERT_TRUE(history.ok());
  EXPECT_THAT(Ids(*history), ElementsAre("r-0", "r-1"));
  EXPECT_EQ(history->next_page_token(), "p2");
  EXPECT_EQ(fake.requests.size(), 1u);
}

TEST(FetchHistoryTest, AllFollowsTheTokensToTheEndKeepingTheFilters) {
  FakeHistory fake(5, 2);
  v1::ListRunsRequest request;
  request.set_label("nightly");
  request.set_limit(2);
  absl::StatusOr<v1::ListRunsResponse> history =
      FetchHistory(request, /*all=*/true, std::ref(fake));
  ASSERT_TRUE(history.ok()) << history.status();
  EXPECT_THAT(Ids(*history), ElementsAre("r-0", "r-1", "r-2", "r-3", "r-4"));
  EXPECT_EQ(history->next_page_token(), "");
  ASSERT_EQ(fake.requests.size(), 3u);
  EXPECT_EQ(fake.requests[0].page_token(), "");
  EXPECT_EQ(fake.requests[1].page_token(), "p2");
  EXPECT_EQ(fake.requests[2].page_token(), "p4");
  for (const v1::ListRunsRequest& r : fake.requests) {
    EXPECT_EQ(r.label(), "nightly");
    EXPECT_EQ(r.limit(), 2u);
  }
}

TEST(FetchHistoryTest, AllStartsAtTheGivenToken) {
  FakeHistory fake(5, 2);
  v1::ListRunsRequest request;
  request.set_page_token("p2");
  absl::StatusOr<v1::ListRunsResponse> history =
      FetchHistory(request, /*all=*/true, std::ref(fake));
  ASSERT_TRUE(history.ok());
  EXPECT_THAT(Ids(*history), ElementsAre("r-2", "r-3", "r-4"));
}

TEST(FetchHistoryTest, AllStopsAtThePageBoundWithTheTokenToContinue) {
  FakeHistory fake(1000, 1);
  absl::StatusOr<v1::ListRunsResponse> history =
      FetchHistory(v1::ListRunsRequest(), /*all=*/true, std::ref(fake));
  ASSERT_TRUE(history.ok());
  EXPECT_EQ(fake.requests.size(), static_cast<size_t>(kMaxHistoryPages));
  EXPECT_EQ(history->runs_size(), kMaxHistoryPages);
  EXPECT_EQ(history->next_page_token(), absl::StrCat("p", kMaxHistoryPages));
}

TEST(FetchHistoryTest, ARepeatedTokenIsDataLoss) {
  int calls = 0;
  auto looping = [&calls](const v1::ListRunsRequest&) -> absl::StatusOr<v1::ListRunsResponse> {
    ++calls;
    v1::ListRunsResponse response;
    response.add_runs()->set_run_id("r-same");
    response.set_next_page_token("again");
    return response;
  };
  absl::StatusOr<v1::ListRunsResponse> history =
      FetchHistory(v1::ListRunsRequest(), /*all=*/true, looping);
  EXPECT_EQ(history.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(history.status().message(), HasSubstr("'again' twice"));
  EXPECT_EQ(calls, 2);
}

TEST(FetchHistoryTest, AFailedPageFailsTheWhole) {
  int calls = 0;
  auto failing = [&calls](const v1::ListRunsRequest&) -> absl::StatusOr<v1::ListRunsResponse> {
    if (++calls == 2) return absl::UnavailableError("server going away");
    v1::ListRunsResponse response;
    response.set_next_page_token(absl::StrCat("p", calls));
    return response;
  };
  absl::StatusOr<v1::ListRunsResponse> history =
      FetchHistory(v1::ListRunsRequest(), /*all=*/true, failing);
  EXPECT_EQ(history.status(), absl::UnavailableError("server going away"));
}

}  // namespace
}  // namespace colltest::client
