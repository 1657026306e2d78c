// What every format says of the quantising epilogues (client/format/quant_view.h): the table's
// epilogue and quant columns, the CSV's columns after the placement, the JSON fields and the
// JUnit test names.
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "client/format/format.h"
#include "client/format/quant_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/unit/client/sample_compare.h"
#include "tests/unit/client/sample_run.h"

namespace colltest::client {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

// SampleRun with case 0 an fp8_token case that also wrote the normed output, every code right,
// and case 1 an nvfp4 case whose codes broke the rounding rule.
v1::RunResult QuantRun() {
  v1::RunResult run = testing::SampleRun();
  v1::CaseResult& ok = *run.mutable_cases(0);
  ok.set_epilogue(v1::EPILOGUE_FP8_TOKEN);
  ok.set_keep_normed(true);
  ok.set_fp8_format(v1::FP8_FORMAT_E4M3FN);
  ok.mutable_quant()->set_checked_codes(458752);
  ok.mutable_quant()->set_checked_scales(64);
  ok.mutable_quant()->set_max_dequant_err(0.125);
  ok.mutable_quant()->set_first_bad_call(-1);
  v1::CaseResult& wrong = *run.mutable_cases(1);
  wrong.set_epilogue(v1::EPILOGUE_NVFP4);
  v1::QuantDiffStats& q = *wrong.mutable_quant();
  q.set_checked_codes(57344);
  q.set_code_mismatches(3);
  q.set_max_code_distance(2);
  q.set_checked_scales(449);
  q.set_scale_mismatches(1);
  q.set_max_scale_rel_err(0.5);
  q.set_max_dequant_err(0.25);
  q.set_rule(v1::QUANT_RULE_ROUNDING);
  q.set_first_bad("row 3: code[17] got 0x3 want 0x4 (scaled 2.5)");
  q.set_first_bad_call(4);
  return run;
}

TEST(QuantCellTest, SaysNothingCheckedCleanOrWhatIsOff) {
  v1::QuantDiffStats q;
  EXPECT_EQ(QuantCell(q), "-");
  q.set_checked_codes(16);
  EXPECT_EQ(QuantCell(q), "0");
  q.set_code_mismatches(1);
  q.set_max_code_distance(4294967295u);
  q.set_rule(v1::QUANT_RULE_SATURATION);
  EXPECT_EQ(QuantCell(q), "1 code (d nan), saturation");
  q.set_code_mismatches(0);
  q.set_scale_mismatches(2);
  q.set_rule(v1::QUANT_RULE_SCALE);
  EXPECT_EQ(QuantCell(q), "2 scales, scale");
}

TEST(QuantTableTest, NoEpilogueColumnsWithoutAQuantisingCase) {
  v1::RunResult run = testing::SampleRun();
  run.mutable_cases(0)->set_epilogue(v1::EPILOGUE_NONE);  // as a server that sets it sends it
  for (TableWidth width : {TableWidth::kFit, TableWidth::kWide}) {
    const std::string table = FormatRunTable(run, width);
    EXPECT_THAT(table, Not(HasSubstr("epilogue")));
    EXPECT_THAT(table, Not(HasSubstr("quant")));
  }
}

TEST(QuantTableTest, EpilogueAndQuantColumnsWhenACaseQuantised) {
  std::vector<std::string> lines = Lines(FormatRunTable(QuantRun(), TableWidth::kWide));
  ASSERT_GE(lines.size(), 7u) << ::testing::PrintToString(lines);
  EXPECT_THAT(lines[1],
              MatchesRegex(".* +pattern +epilogue +median .* +max +quant +status +message"));
  EXPECT_THAT(lines[3], MatchesRegex(".* +normal +fp8_token\\+normed +12\\.3 .* +1 +0 +OK *"));
  EXPECT_THAT(lines[4],
              MatchesRegex(".* +normal +nvfp4 +20\\.0 .* +64 +3 codes \\(d 2\\), 1 scale, "
                           "rounding +WRONG .*"));
  // The cases that wrote no codes: none, and a dash for the quant column.
  EXPECT_THAT(lines[5], MatchesRegex(".* +normal +none +- .* +- +- +HANG .*"));
}

TEST(QuantCsvTest, ColumnsAfterThePlacementEmptyWhereNothingWasCompared) {
  std::vector<std::string> lines = Lines(FormatRunCsv(QuantRun()));
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_THAT(lines[0],
              EndsWith(",first_bad,message,ranks_per_gpu,shared_gpu,time_sliced,epilogue,"
                       "keep_normed,fp8_format,quant_checked_codes,quant_code_mismatches,"
                       "quant_max_code_distance,quant_scale_mismatches,quant_max_scale_rel_err,"
                       "quant_max_dequant_err,quant_rule"));
  EXPECT_THAT(lines[1], EndsWith(",1,false,false,fp8_token,true,e4m3fn,458752,0,0,0,0,0.125,"));
  EXPECT_THAT(lines[2], EndsWith(",1,false,false,nvfp4,false,,57344,3,2,1,0.5,0.25,rounding"));
  EXPECT_THAT(lines[3], EndsWith(",1,false,false,none,false,,,,,,,,"));
  // The columns before keep their positions: the header's first 34 names are those of before.
  EXPECT_EQ(std::vector<std::string>(absl::StrSplit(lines[0], ',')).size(), 44u);
}

TEST(QuantJsonTest, CasesAndRanksCarryTheEpilogueAndTheQuantStats) {
  const nlohmann::json json = nlohmann::json::parse(FormatRunJson(QuantRun()));
  const nlohmann::json& ok = json["cases"][0];
  EXPECT_EQ(ok["epilogue"], "fp8_token");
  EXPECT_EQ(ok["keep_normed"], true);
  EXPECT_EQ(ok["fp8_format"], "e4m3fn");
  EXPECT_EQ(ok["quant"]["checked_codes"], 458752);
  EXPECT_EQ(ok["quant"]["rule"], "none");
  EXPECT_EQ(ok["ranks"][0]["epilogue"], "fp8_token");
  EXPECT_EQ(ok["ranks"][0]["fp8_format"], "");
  const nlohmann::json& wrong = json["cases"][1];
  EXPECT_EQ(wrong["fp8_format"], "");
  EXPECT_EQ(wrong["quant"]["code_mismatches"], 3);
  EXPECT_EQ(wrong["quant"]["max_code_distance"], 2);
  EXPECT_EQ(wrong["quant"]["rule"], "rounding");
  EXPECT_EQ(wrong["quant"]["first_bad_call"], 4);
  EXPECT_EQ(json["cases"][2]["epilogue"], "none");
}

TEST(QuantJunitTest, TestNamesCarryAQuantisingEpilogueAndFailuresItsVerdict) {
  const std::string xml = FormatRunJunit(QuantRun());
  EXPECT_THAT(xml, HasSubstr("name=\"eager w=2 m=64 n=7168 bf16 fp8_token+normed\""));
  EXPECT_THAT(xml, HasSubstr("name=\"graph w=2 m=8 n=7168 fp16 nvfp4\""));
  EXPECT_THAT(xml, HasSubstr("name=\"eager w=2 m=1 n=7168 bf16\""));  // none: as before
  EXPECT_THAT(xml, HasSubstr("quant: 3 codes (d 2), 1 scale, rounding; first bad: row 3: "
                             "code[17] got 0x3 want 0x4 (scaled 2.5)"));
}

// SampleComparison with case 0 an fp8_tensor case (e4m3fnuz) that also wrote the normed output.
v1::CompareResponse QuantComparison() {
  v1::CompareResponse comparison = testing::SampleComparison();
  v1::CaseComparison& c = *comparison.mutable_cases(0);
  c.set_epilogue(v1::EPILOGUE_FP8_TENSOR);
  c.set_keep_normed(true);
  c.set_fp8_format(v1::FP8_FORMAT_E4M3FNUZ);
  return comparison;
}

TEST(QuantCompareTest, TheEpilogueIsShownWithTheRestOfTheKey) {
  EXPECT_THAT(FormatCompareTable(testing::SampleComparison()), Not(HasSubstr("epilogue")));
  std::vector<std::string> table = Lines(FormatCompareTable(QuantComparison()));
  ASSERT_GE(table.size(), 5u);
  const size_t header = 3;  // after the title and the lines of machines a and b
  EXPECT_THAT(table[header], MatchesRegex(".* +dtype +epilogue +median a .*")) << table[header];
  EXPECT_THAT(table[header + 1], MatchesRegex("lamport +graph +4 +64 +7168 +bf16 +"
                                              "fp8_tensor\\+normed +12\\.10 .*"));
  EXPECT_THAT(table[header + 2], MatchesRegex("one_stage +eager .* +bf16 +none +5\\.00 .*"));

  std::vector<std::string> csv = Lines(FormatCompareCsv(QuantComparison()));
  EXPECT_THAT(csv[0], EndsWith(",ratio,reason,epilogue,keep_normed,fp8_format"));
  EXPECT_THAT(csv[1], EndsWith(",fp8_tensor,true,e4m3fnuz"));

  const nlohmann::json json = nlohmann::json::parse(FormatCompareJson(QuantComparison()));
  EXPECT_EQ(json["cases"][0]["epilogue"], "fp8_tensor");
  EXPECT_EQ(json["cases"][0]["keep_normed"], true);
  EXPECT_EQ(json["cases"][0]["fp8_format"], "e4m3fnuz");
  EXPECT_EQ(json["cases"][1]["epilogue"], "none");

  const std::string xml = FormatCompareJunit(QuantComparison());
  EXPECT_THAT(xml, HasSubstr("name=\"graph w=4 m=64 n=7168 bf16 fp8_tensor+normed\""));
  EXPECT_THAT(xml, HasSubstr("name=\"eager w=4 m=1 n=7168 bf16\" time=\"0\"/>"));
}

}  // namespace
}  // namespace colltest::client
