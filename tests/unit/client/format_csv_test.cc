#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "client/format/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/client/sample_health.h"
#include "tests/unit/client/sample_run.h"

namespace colltest::client {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

TEST(FormatRunCsvTest, HeaderThenOneRowPerCase) {
  std::vector<std::string> lines = Lines(FormatRunCsv(testing::SampleRun()));
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(
      lines[0],
      "run_id,index,variant,resolved_variant,mode,world,m,n,dtype,bytes,pattern,residual,status,"
      "median_us,p10_us,p90_us,min_us,max_us,algbw_gbps,busbw_gbps,mismatches,checked,"
      "max_abs_err,max_rel_err,max_ulp,nan_inf,first_bad_call,stress_calls,wall_ms,"
      "first_bad,message,ranks_per_gpu,shared_gpu,time_sliced,epilogue,keep_normed,fp8_format,"
      "quant_checked_codes,quant_code_mismatches,quant_max_code_distance,quant_scale_mismatches,"
      "quant_max_scale_rel_err,quant_max_dequant_err,quant_rule");
  EXPECT_EQ(lines[1],
            "r-42,0,lamport,lamport,eager,2,64,7168,bf16,917504,normal,true,OK,12.3,11.5,14.25,,,"
            "37.5,37.5,0,458752,0.0078125,0,1,0,,0,250,,,1,false,false,none,false,,,,,,,,");
}

// Every row of a run whose ranks shared a GPU says so: its times are no link measurement.
TEST(FormatRunCsvTest, EveryRowSaysWhetherTheRanksSharedAGpu) {
  v1::RunResult run = testing::SampleRun();
  run.set_ranks_per_gpu(4);
  std::vector<std::string> lines = Lines(FormatRunCsv(run));
  ASSERT_EQ(lines.size(), 5u);
  for (size_t i = 1; i < lines.size(); ++i) {
    EXPECT_THAT(lines[i], HasSubstr(",4,true,false,none,")) << lines[i];
  }
  run.set_time_sliced(true);
  EXPECT_THAT(Lines(FormatRunCsv(run))[1], HasSubstr(",4,true,true,none,"));
}

TEST(FormatRunCsvTest, QuotesFieldsWithCommasAndQuotes) {
  std::vector<std::string> lines = Lines(FormatRunCsv(testing::SampleRun()));
  ASSERT_GE(lines.size(), 3u);
  EXPECT_THAT(lines[2],
              StartsWith("r-42,1,auto,lamport_tb,graph,2,8,7168,fp16,114688,normal,true,WRONG,"));
  EXPECT_THAT(lines[2],
              HasSubstr(",\"out[3,17] got 1.5 want 1.25\",\"3 mismatches, \"\"out\"\" <rank 1> "
                        "& more\""));
}

TEST(FormatRunCsvTest, EmptyRunIsHeaderOnly) {
  EXPECT_EQ(Lines(FormatRunCsv(v1::RunResult())).size(), 1u);
}

TEST(FormatHealthCsvTest, HeaderThenRanksThenPairs) {
  std::vector<std::string> lines = Lines(FormatHealthCsv(testing::SampleHealthOk()));
  ASSERT_EQ(lines.size(), 7u);
  EXPECT_EQ(lines[0],
            "kind,devices,status,latency_us,median_ratio,slow,suspect_peer,phase,message");
  EXPECT_EQ(lines[1], "rank,0,OK,12.5,1,false,,,");
  EXPECT_EQ(lines[3], "rank,2,OK,13,1.04,false,,,");
  EXPECT_EQ(lines[4], "pair,0-1,OK,8,1,false,,,");
  EXPECT_EQ(lines[5], "pair,0-2,OK,16.8,2.1,true,,,");
  EXPECT_EQ(lines[6], "pair,1-2,OK,7.9,0.99,false,,,");
}

TEST(FormatHealthCsvTest, HangRowNamesItsSuspectAndPhase) {
  v1::HealthResponse health = testing::SampleHealthHang();
  health.mutable_ranks(1)->set_message("timed out, after 5000 ms");
  std::vector<std::string> lines = Lines(FormatHealthCsv(health));
  ASSERT_EQ(lines.size(), 3u);
  // suspect_peer left at the proto default 0 on an OK rank is not a suspect; a hung target that
  // did not time has no latency: empty cells, not zeros.
  EXPECT_EQ(lines[1], "rank,0,OK,11,1,false,,,");
  EXPECT_EQ(lines[2], "rank,1,HANG,,,false,0,lamport phase B,\"timed out, after 5000 ms\"");
}

TEST(FormatHealthCsvTest, ErrorWithoutTargetsIsHeaderOnly) {
  EXPECT_EQ(Lines(FormatHealthCsv(testing::SampleHealthError())).size(), 1u);
}

TEST(FormatRunCsvTest, EscapesControlCharactersOfMessages) {
  v1::RunResult run;
  run.set_run_id("r-9");
  run.add_cases()->set_message("\x1b]0;title\x07 done");
  const std::string csv = FormatRunCsv(run);
  EXPECT_THAT(csv, HasSubstr("\\x1b]0;title\\x07 done"));
  EXPECT_EQ(csv.find('\x1b'), std::string::npos);
}

TEST(FormatRunCsvTest, FiguresAnUnsupportedCaseLacksAreEmptyCells) {
  v1::RunResult run;
  run.set_run_id("r-7");
  v1::CaseResult* c = run.add_cases();
  c->set_status(v1::CASE_STATUS_UNSUPPORTED);
  c->set_m(2);
  c->set_n(1024);
  c->mutable_diff()->set_first_bad_call(-1);
  std::vector<std::string> lines = Lines(FormatRunCsv(run));
  ASSERT_EQ(lines.size(), 2u);
  // bytes = 2 x 1024 x 2 (bf16); median .. busbw, the error figures and wall_ms are empty.
  EXPECT_EQ(lines[1],
            "r-7,0,unspecified,unspecified,eager,0,2,1024,bf16,4096,normal,false,"
            "UNSUPPORTED,,,,,,,,,,,,,,,0,,,,1,false,false,none,false,,,,,,,,");
}

}  // namespace
}  // namespace colltest::client
