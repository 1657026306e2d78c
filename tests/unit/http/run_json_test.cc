// WriteRunJson: the same bytes as ToJson(run), written in bounded pieces.
#include "http/run_json.h"

#include <string>
#include <vector>

#include "colltest/v1/colltest.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "http/json_codec.h"

namespace colltest::http {
namespace {

namespace v1 = ::colltest::v1;

// A run whose strings hold the characters an outline search could trip on.
v1::RunResult RunWithCases(int cases) {
  v1::RunResult run;
  run.set_run_id("r-1");
  run.set_state(v1::RUN_STATE_DONE);
  run.set_message(R"(a "cases":[] look-alike, and one with \ and "quotes")");
  run.mutable_spec()->set_label(R"("cases":[],"backend":"x")");
  run.mutable_spec()->add_m(1);
  run.set_backend("cpu");
  run.mutable_machine()->set_hostname("host");
  for (int i = 0; i < cases; ++i) {
    v1::CaseResult* one = run.add_cases();
    one->set_m(i + 1);
    one->set_status(i % 2 ? v1::CASE_STATUS_OK : v1::CASE_STATUS_WRONG);
    one->set_message(i == 0 ? "\"cases\":[]\n" : "fine");
    one->add_ranks()->set_rank(i);
  }
  return run;
}

std::string Written(v1::RunResult run, std::vector<size_t>* piece_sizes = nullptr) {
  std::string out;
  const bool whole = WriteRunJson(std::move(run), [&](absl::string_view piece) {
    if (piece_sizes != nullptr) piece_sizes->push_back(piece.size());
    out.append(piece.data(), piece.size());
    return true;
  });
  EXPECT_TRUE(whole);
  return out;
}

TEST(RunJsonTest, SameBytesAsTheWholeDocument) {
  for (int cases : {0, 1, 3}) {
    const v1::RunResult run = RunWithCases(cases);
    EXPECT_EQ(Written(run), ToJson(run)) << cases << " cases";
  }
}

TEST(RunJsonTest, LargeRunGoesInBoundedPieces) {
  const v1::RunResult run = RunWithCases(4096);
  std::vector<size_t> sizes;
  EXPECT_EQ(Written(run, &sizes), ToJson(run));
  ASSERT_GT(sizes.size(), 2u);
  for (size_t size : sizes) EXPECT_LT(size, kRunJsonPieceBytes + 1024);
}

TEST(RunJsonTest, StopsWhenTheSinkRefuses) {
  int pieces = 0;
  const bool whole = WriteRunJson(RunWithCases(4096), [&](absl::string_view) {
    ++pieces;
    return false;
  });
  EXPECT_FALSE(whole);
  EXPECT_EQ(pieces, 1);
}

TEST(RunJsonTest, SummaryEventIsTheSameBytesAsTheWholeEvent) {
  for (int cases : {0, 3, 4096}) {
    v1::SweepEvent event;
    event.set_run_id(R"(r-"1")");
    *event.mutable_summary() = RunWithCases(cases);
    std::string out;
    EXPECT_TRUE(WriteSummaryEventJson(event, [&](absl::string_view piece) {
      out.append(piece.data(), piece.size());
      return true;
    }));
    EXPECT_EQ(out, ToJson(event)) << cases << " cases";
  }
}

}  // namespace
}  // namespace colltest::http
