#include "client/flags/flags.h"

#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/flags/size_flags.h"
#include "client/flags/suggest.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::client {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

TEST(BuildSweepSpecTest, UnsetFlagsGetTheClientDefaults) {
  absl::StatusOr<v1::SweepSpec> spec = BuildSweepSpec(SweepFlags{});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(spec->n(), ElementsAre(7168));
  EXPECT_EQ(spec->dtype(), v1::DTYPE_BF16);
  EXPECT_THAT(spec->m(), ElementsAre(1, 4, 16, 64, 256, 1024));
  EXPECT_THAT(spec->modes(), ElementsAre(v1::MODE_EAGER, v1::MODE_GRAPH));
  // The server's: every selected device, and the variants ListDevices offers (filled later).
  EXPECT_EQ(spec->world_size(), 0u);
  EXPECT_EQ(spec->devices_size(), 0);
  EXPECT_EQ(spec->variants_size(), 0);
  EXPECT_TRUE(VariantsFromServer(SweepFlags{}));
  // Left to the server's own defaults.
  EXPECT_EQ(spec->pattern(), v1::PATTERN_UNSPECIFIED);
  EXPECT_EQ(spec->timeout_ms(), 0u);
  EXPECT_EQ(spec->warmup(), 0u);
  EXPECT_FALSE(spec->no_residual());
  EXPECT_FALSE(spec->stop_on_failure());
  EXPECT_FALSE(spec->force());
  EXPECT_FALSE(spec->has_knobs());
}

TEST(BuildSweepSpecTest, AGivenFlagReplacesItsDefaultOnly) {
  SweepFlags flags;
  flags.m = "8";
  flags.modes = "graph";
  absl::StatusOr<v1::SweepSpec> spec = BuildSweepSpec(flags);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(spec->m(), ElementsAre(8));
  EXPECT_THAT(spec->modes(), ElementsAre(v1::MODE_GRAPH));
  EXPECT_THAT(spec->n(), ElementsAre(7168));
  EXPECT_EQ(spec->dtype(), v1::DTYPE_BF16);
}

TEST(BuildSweepSpecTest, TranslatesEveryFlag) {
  SweepFlags flags;
  flags.world = "4";
  flags.devices = "0,1,2,3";
  flags.m = "1, 8,64";
  flags.n = "7168";
  flags.dtype = "fp16";
  flags.variants = "lamport,lamport_tb,nccl";
  flags.modes = "eager,graph";
  flags.pattern = "neg_zero";
  flags.tolerance = "trtllm";
  flags.warmup = "3";
  flags.iters = "50";
  flags.stress = "1000";
  flags.seed = "18446744073709551615";
  flags.timeout = "2s";
  flags.no_residual = true;
  flags.eps = "1e-5";
  flags.fault = "delay_rank:1:3000000";
  flags.grid_blocks = "64";
  flags.threads_per_block = "512";
  flags.lamport_min_bytes = "65536";
  flags.arm_repeat = "2";
  flags.label = "nightly h200";
  flags.stop_on_failure = true;
  flags.force = true;

  absl::StatusOr<v1::SweepSpec> spec = BuildSweepSpec(flags);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->world_size(), 4u);
  EXPECT_THAT(spec->devices(), ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(spec->m(), ElementsAre(1, 8, 64));
  EXPECT_THAT(spec->n(), ElementsAre(7168));
  EXPECT_EQ(spec->dtype(), v1::DTYPE_FP16);
  EXPECT_THAT(spec->variants(),
              ElementsAre(v1::VARIANT_LAMPORT, v1::VARIANT_LAMPORT_TB, v1::VARIANT_NCCL));
  EXPECT_THAT(spec->modes(), ElementsAre(v1::MODE_EAGER, v1::MODE_GRAPH));
  EXPECT_EQ(spec->pattern(), v1::PATTERN_NEG_ZERO);
  EXPECT_EQ(spec->tolerance(), v1::TOLERANCE_TRTLLM);
  EXPECT_EQ(spec->warmup(), 3u);
  EXPECT_EQ(spec->iters(), 50u);
  EXPECT_EQ(spec->stress_calls(), 1000u);
  EXPECT_EQ(spec->seed(), 18446744073709551615ull);
  EXPECT_EQ(spec->timeout_ms(), 2000u);
  EXPECT_TRUE(spec->no_residual());
  EXPECT_FLOAT_EQ(spec->eps(), 1e-5f);
  EXPECT_EQ(spec->fault(), "delay_rank:1:3000000");
  EXPECT_EQ(spec->knobs().grid_blocks(), 64u);
  EXPECT_EQ(spec->knobs().threads_per_block(), 512u);
  EXPECT_EQ(spec->knobs().lamport_min_bytes(), 65536u);
  EXPECT_EQ(spec->knobs().arm_repeat(), 2u);
  EXPECT_EQ(spec->label(), "nightly h200");
  EXPECT_TRUE(spec->stop_on_failure());
  EXPECT_TRUE(spec->force());
}

TEST(BuildSweepSpecTest, AllVariantsIsTheServersLikeUnset) {
  for (const char* text : {"all", " ALL ", "lamport,all"}) {
    SweepFlags flags;
    flags.variants = text;
    EXPECT_TRUE(VariantsFromServer(flags)) << text;
    absl::StatusOr<v1::SweepSpec> spec = BuildSweepSpec(flags);
    ASSERT_TRUE(spec.ok()) << spec.status();
    EXPECT_EQ(spec->variants_size(), 0) << text;
  }
  SweepFlags named;
  named.variants = "lamport,nccl";
  EXPECT_FALSE(VariantsFromServer(named));
  // A typo next to `all` is still one.
  SweepFlags typo;
  typo.variants = "all,lampor";
  EXPECT_FALSE(BuildSweepSpec(typo).ok());
}

TEST(BuildSweepSpecTest, UseServerVariantsTakesListDevicesOrder) {
  v1::ListDevicesResponse devices;
  devices.add_variants(v1::VARIANT_LAMPORT);
  devices.add_variants(v1::VARIANT_ONE_STAGE);
  v1::SweepSpec spec = *BuildSweepSpec(SweepFlags{});
  UseServerVariants(devices, spec);
  EXPECT_THAT(spec.variants(), ElementsAre(v1::VARIANT_LAMPORT, v1::VARIANT_ONE_STAGE));
}

TEST(ParseVariantsFlagTest, AllIsAllSevenInEnumOrder) {
  absl::StatusOr<std::vector<v1::Variant>> variants = ParseVariantsFlag("--variants", "all");
  ASSERT_TRUE(variants.ok()) << variants.status();
  EXPECT_THAT(*variants, ElementsAre(v1::VARIANT_ONE_STAGE, v1::VARIANT_TWO_KERNEL,
                                     v1::VARIANT_LAMPORT, v1::VARIANT_LAMPORT_TB, v1::VARIANT_NCCL,
                                     v1::VARIANT_AUTO, v1::VARIANT_LAMPORT_TWO_SHOT));
}

TEST(BuildSweepSpecTest, AllModesIsEagerAndGraph) {
  SweepFlags flags;
  flags.modes = "all";
  absl::StatusOr<v1::SweepSpec> spec = BuildSweepSpec(flags);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(spec->modes(), ElementsAre(v1::MODE_EAGER, v1::MODE_GRAPH));
}

TEST(BuildSweepSpecTest, DoesNotValidateRanges) {
  // The server owns the limits; values that parse must reach it unchanged.
  SweepFlags flags;
  flags.world = "0";
  flags.m = "0,4294967295";
  flags.grid_blocks = "100000";
  flags.eps = "-1";
  flags.fault = "missing_rank:99";  // the world is the server's to check
  absl::StatusOr<v1::SweepSpec> spec = BuildSweepSpec(flags);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(spec->m(), ElementsAre(0u, 4294967295u));
  EXPECT_EQ(spec->knobs().grid_blocks(), 100000u);
  EXPECT_FLOAT_EQ(spec->eps(), -1.0f);
  EXPECT_EQ(spec->fault(), "missing_rank:99");
}

struct BadFlagCase {
  std::string flag;
  std::string value;
  std::string expected_in_message;
};

// Readable test names in ctest: the flag and its value instead of a byte dump of the struct.
void PrintTo(const BadFlagCase& c, std::ostream* os) { *os << c.flag << "=" << c.value; }

std::string BadFlagName(const ::testing::TestParamInfo<BadFlagCase>& info) {
  std::string name = absl::StrCat(info.index, "_", absl::StripPrefix(info.param.flag, "--"));
  for (char& ch : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

class BadFlagTest : public ::testing::TestWithParam<BadFlagCase> {};

void SetFlag(SweepFlags& flags, const std::string& name, const std::string& value) {
  if (name == "--world") flags.world = value;
  if (name == "--devices") flags.devices = value;
  if (name == "--m") flags.m = value;
  if (name == "--hidden") flags.n = value;
  if (name == "--dtype") flags.dtype = value;
  if (name == "--variants") flags.variants = value;
  if (name == "--modes") flags.modes = value;
  if (name == "--pattern") flags.pattern = value;
  if (name == "--tolerance") flags.tolerance = value;
  if (name == "--seed") flags.seed = value;
  if (name == "--timeout") flags.timeout = value;
  if (name == "--eps") flags.eps = value;
  if (name == "--fault") flags.fault = value;
  if (name == "--grid-blocks") flags.grid_blocks = value;
  if (name == "--lamport-min-bytes") flags.lamport_min_bytes = value;
}

TEST_P(BadFlagTest, IsRejectedNamingTheFlag) {
  const BadFlagCase& param = GetParam();
  SweepFlags flags;
  SetFlag(flags, param.flag, param.value);
  absl::StatusOr<v1::SweepSpec> spec = BuildSweepSpec(flags);
  ASSERT_FALSE(spec.ok()) << param.flag << " " << param.value;
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(spec.status().message(), HasSubstr(param.flag + ":"));
  EXPECT_THAT(spec.status().message(), HasSubstr(param.expected_in_message));
}

INSTANTIATE_TEST_SUITE_P(
    Syntax, BadFlagTest,
    ::testing::Values(
        BadFlagCase{"--m", "abc", "'abc'"}, BadFlagCase{"--m", "1,,8", "'1,,8'"},
        BadFlagCase{"--m", "8,", "'8,'"}, BadFlagCase{"--m", "-1", "'-1'"},
        BadFlagCase{"--hidden", "7168x", "'7168x'"},
        BadFlagCase{"--hidden", "4294967296", "'4294967296'"},
        BadFlagCase{"--devices", "0;1", "'0;1'"}, BadFlagCase{"--world", "", "''"},
        BadFlagCase{"--world", "two", "'two'"}, BadFlagCase{"--variants", "lamport,fast", "'fast'"},
        BadFlagCase{"--variants", "", "''"}, BadFlagCase{"--modes", "eager,lazy", "'lazy'"},
        BadFlagCase{"--dtype", "fp8", "'fp8'"}, BadFlagCase{"--pattern", "random", "'random'"},
        BadFlagCase{"--tolerance", "loose", "'loose'"}, BadFlagCase{"--seed", "0x10", "'0x10'"},
        BadFlagCase{"--timeout", "5 parsecs", "'5 parsecs'"},
        BadFlagCase{"--timeout", "-1s", "'-1s'"}, BadFlagCase{"--timeout", "inf", "'inf'"},
        BadFlagCase{"--timeout", "-5", "'-5'"}, BadFlagCase{"--seed", "-1", "'-1'"},
        BadFlagCase{"--eps", "small", "'small'"}, BadFlagCase{"--eps", "nan", "'nan'"},
        BadFlagCase{"--fault", ":1", "unknown fault kind ''"},
        BadFlagCase{"--fault", "delay:x", "unknown fault kind 'delay'"},
        BadFlagCase{"--fault", "foo", "expected one of missing_rank:R, delay_rank:R:US"},
        BadFlagCase{"--fault", "missing_rank:-1", "the rank '-1' is not a decimal number"},
        BadFlagCase{"--fault", "delay_rank:0:abc", "the delay 'abc'"},
        BadFlagCase{"--fault", "crash_rank:0:extra", "crash_rank takes 1 argument"},
        BadFlagCase{"--fault", std::string(65, 'x'), "65 bytes, the limit is 64"},
        BadFlagCase{"--m", "8q", "'8q'"}, BadFlagCase{"--m", "128..8", "runs backwards"},
        BadFlagCase{"--m", "1..100000:+1", "more than 4096 values"},
        BadFlagCase{"--m", "8G", "the limit is 4294967295"},
        BadFlagCase{"--lamport-min-bytes", "1Q", "'1Q'"},
        BadFlagCase{"--lamport-min-bytes", "16777216T", "does not fit in 64 bits"},
        BadFlagCase{"--grid-blocks", "1.5", "'1.5'"}),
    BadFlagName);

TEST(BuildSweepSpecTest, EveryBadFlagIsReportedAtOnceOneLineEach) {
  SweepFlags flags;
  flags.world = "two";
  flags.m = "abc";
  flags.dtype = "fp8";
  flags.variants = "lampor,turbo";
  flags.modes = "lazy";
  flags.timeout = "soon";
  flags.label = "fine";
  absl::StatusOr<v1::SweepSpec> spec = BuildSweepSpec(flags);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  const std::vector<std::string> lines = absl::StrSplit(spec.status().message(), '\n');
  ASSERT_EQ(lines.size(), 7u) << spec.status().message();
  for (const char* flag : {"--world:", "--m:", "--dtype:", "--variants: unknown variant 'lampor'",
                           "--variants: unknown variant 'turbo'", "--modes:", "--timeout:"}) {
    EXPECT_EQ(std::count_if(lines.begin(), lines.end(),
                            [&](const std::string& line) { return absl::StartsWith(line, flag); }),
              1)
        << flag << " in " << spec.status().message();
  }
  for (const std::string& line : lines) EXPECT_THAT(line, HasSubstr("expected ")) << line;
}

TEST(BuildSweepSpecTest, UnknownNamesGetDidYouMean) {
  struct Case {
    std::string flag, value, hint;
  };
  for (const Case& c : {Case{"--variants", "lampor", "did you mean 'lamport'?"},
                        Case{"--variants", "one_stage,lamprot_tb", "did you mean 'lamport_tb'?"},
                        Case{"--variants", "al", "did you mean 'all'?"},
                        Case{"--modes", "grpah", "did you mean 'graph'?"},
                        Case{"--modes", "eag", "did you mean 'eager'?"},
                        Case{"--dtype", "bf61", "did you mean 'bf16'?"},
                        Case{"--pattern", "neg-zero", "did you mean 'neg_zero'?"},
                        Case{"--tolerance", "trtlm", "did you mean 'trtllm'?"}}) {
    SweepFlags flags;
    SetFlag(flags, c.flag, c.value);
    absl::StatusOr<v1::SweepSpec> spec = BuildSweepSpec(flags);
    ASSERT_FALSE(spec.ok()) << c.value;
    EXPECT_THAT(spec.status().message(), HasSubstr(c.flag + ":"));
    EXPECT_THAT(spec.status().message(), HasSubstr(c.hint)) << c.value;
  }
  SweepFlags far;
  far.variants = "turbo";
  EXPECT_THAT(BuildSweepSpec(far).status().message(), Not(HasSubstr("did you mean")));
}

// The byte-size flags go through ResolveRows with the spec's n and dtype; its rows or its error
// are the sweep's, whatever ResolveRows makes of them.
TEST(BuildSweepSpecTest, ByteSizeFlagsGiveTheRowsThroughResolveRows) {
  SweepFlags flags;
  flags.bytes = "14K:112K:x2";
  flags.dtype = "bf16";
  absl::StatusOr<std::vector<uint32_t>> rows = ResolveRows(flags, {7168}, v1::DTYPE_BF16);
  absl::StatusOr<v1::SweepSpec> spec = BuildSweepSpec(flags);
  if (rows.ok()) {
    ASSERT_TRUE(spec.ok()) << spec.status();
    EXPECT_THAT(std::vector<uint32_t>(spec->m().begin(), spec->m().end()), ElementsAreArray(*rows));
  } else {
    ASSERT_FALSE(spec.ok());
    EXPECT_THAT(spec.status().message(), HasSubstr(rows.status().message()));
  }
  // Its error is collected with the others.
  flags.pattern = "random";
  flags.bytes = "not a size";
  rows = ResolveRows(flags, {7168}, v1::DTYPE_BF16);
  ASSERT_FALSE(rows.ok());
  spec = BuildSweepSpec(flags);
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(spec.status().message(), HasSubstr("--pattern:"));
  EXPECT_THAT(spec.status().message(), HasSubstr(rows.status().message()));
}

TEST(BuildSweepSpecTest, ByteSizeFlagsWaitForAValidNAndDtype) {
  // The sizes cannot be converted without them: their own errors are the ones to fix.
  SweepFlags flags;
  flags.bytes = "not a size";
  flags.n = "x";
  absl::StatusOr<v1::SweepSpec> spec = BuildSweepSpec(flags);
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()), StartsWith("--hidden: "));
  EXPECT_THAT(spec.status().message(), Not(HasSubstr("\n")));
}

TEST(SuggestTest, EditDistanceCountsAnAdjacentSwapAsOne) {
  EXPECT_EQ(EditDistance("lamport", "lamport"), 0u);
  EXPECT_EQ(EditDistance("LAMPORT", "lamport"), 0u);
  EXPECT_EQ(EditDistance("lampor", "lamport"), 1u);
  EXPECT_EQ(EditDistance("lapmort", "lamport"), 1u);
  EXPECT_EQ(EditDistance("lmaport_b", "lamport_tb"), 2u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
}

TEST(SuggestTest, ClosestNameWithinTwoEditsOrByPrefix) {
  const std::vector<std::string> known = {"one_stage", "two_kernel", "lamport", "lamport_tb"};
  EXPECT_EQ(ClosestName("lampor", known), "lamport");
  EXPECT_EQ(ClosestName("lamport_t", known), "lamport_tb");
  EXPECT_EQ(ClosestName("two", known), "two_kernel");   // a prefix
  EXPECT_EQ(ClosestName("Lamport", known), "lamport");  // case alone
  EXPECT_EQ(ClosestName("lamport", known), std::nullopt);
  EXPECT_EQ(ClosestName("turbo", known), std::nullopt);
  EXPECT_EQ(ClosestName("", known), std::nullopt);
  // Fewer edits than letters: "x" is not "m".
  EXPECT_EQ(ClosestName("x", std::vector<std::string>{"m", "n"}), std::nullopt);
  EXPECT_EQ(ClosestName("mm", std::vector<std::string>{"m", "n"}), "m");
}

TEST(SuggestTest, WithSuggestionKeepsTheCodeAndAppendsTheHint) {
  const absl::Status status = WithSuggestion(absl::NotFoundError("--x: unknown 'lampor'"), "lampor",
                                             std::vector<std::string>{"lamport"});
  EXPECT_EQ(status, absl::NotFoundError("--x: unknown 'lampor'; did you mean 'lamport'?"));
  EXPECT_TRUE(WithSuggestion(absl::OkStatus(), "x", std::vector<std::string>{"x"}).ok());
}

TEST(ParseTimeoutMsFlagTest, AcceptsDurationsAndPlainMilliseconds) {
  EXPECT_EQ(*ParseTimeoutMsFlag("--timeout", "5s"), 5000u);
  EXPECT_EQ(*ParseTimeoutMsFlag("--timeout", "500ms"), 500u);
  EXPECT_EQ(*ParseTimeoutMsFlag("--timeout", "1.5s"), 1500u);
  EXPECT_EQ(*ParseTimeoutMsFlag("--timeout", "1m30s"), 90000u);
  EXPECT_EQ(*ParseTimeoutMsFlag("--timeout", "750"), 750u);
  EXPECT_EQ(*ParseTimeoutMsFlag("--timeout", "0"), 0u);
}

TEST(ParseTimeoutMsFlagTest, RoundsSubMillisecondUpSoItNeverBecomesTheDefault) {
  EXPECT_EQ(*ParseTimeoutMsFlag("--timeout", "100us"), 1u);
  EXPECT_EQ(*ParseTimeoutMsFlag("--timeout", "1.0001ms"), 2u);
}

TEST(ParseTimeoutMsFlagTest, RejectsWhatDoesNotFitTheField) {
  EXPECT_FALSE(ParseTimeoutMsFlag("--timeout", "2000h").ok());
  EXPECT_FALSE(ParseTimeoutMsFlag("--timeout", "5000000000").ok());
}

TEST(ParseVariantsFlagTest, IsCaseInsensitiveAndTrimsBlanks) {
  absl::StatusOr<std::vector<v1::Variant>> variants =
      ParseVariantsFlag("--variants", " One_Stage , TWO_KERNEL");
  ASSERT_TRUE(variants.ok()) << variants.status();
  EXPECT_THAT(*variants, ElementsAre(v1::VARIANT_ONE_STAGE, v1::VARIANT_TWO_KERNEL));
}

TEST(BuildHealthRequestTest, UnsetFlagsLeaveServerDefaults) {
  absl::StatusOr<v1::HealthRequest> request = BuildHealthRequest(HealthFlags{});
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_FALSE(request->pairs());
  EXPECT_EQ(request->timeout_ms(), 0u);
  EXPECT_EQ(request->devices_size(), 0);
  EXPECT_EQ(request->fault(), "");
  EXPECT_EQ(request->warn_ratio(), 0.0);
  EXPECT_EQ(request->level(), v1::HEALTH_LEVEL_UNSPECIFIED);
  EXPECT_FALSE(request->force());
  EXPECT_EQ(request->max_verdict_age_ms(), 0u);
}

TEST(BuildHealthRequestTest, TranslatesEveryFlag) {
  HealthFlags flags;
  flags.pairs = true;
  flags.timeout = "2s";
  flags.devices = "0, 1,3";
  flags.fault = "missing_rank:1";
  flags.warn_ratio = "1.25";
  flags.level = "standard";
  flags.force = true;
  flags.max_verdict_age = "1m30s";
  absl::StatusOr<v1::HealthRequest> request = BuildHealthRequest(flags);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_TRUE(request->pairs());
  EXPECT_EQ(request->timeout_ms(), 2000u);
  EXPECT_THAT(request->devices(), ElementsAre(0, 1, 3));
  EXPECT_EQ(request->fault(), "missing_rank:1");
  EXPECT_DOUBLE_EQ(request->warn_ratio(), 1.25);
  EXPECT_EQ(request->level(), v1::HEALTH_LEVEL_STANDARD);
  EXPECT_TRUE(request->force());
  EXPECT_EQ(request->max_verdict_age_ms(), 90000u);
}

TEST(BuildHealthRequestTest, LevelsByNameInAnyCase) {
  const std::pair<const char*, v1::HealthLevel> levels[] = {{"quick", v1::HEALTH_LEVEL_QUICK},
                                                            {"Standard", v1::HEALTH_LEVEL_STANDARD},
                                                            {" LONG ", v1::HEALTH_LEVEL_LONG}};
  for (const auto& [name, level] : levels) {
    HealthFlags flags;
    flags.level = name;
    absl::StatusOr<v1::HealthRequest> request = BuildHealthRequest(flags);
    ASSERT_TRUE(request.ok()) << name << ": " << request.status();
    EXPECT_EQ(request->level(), level) << name;
  }
}

TEST(BuildHealthRequestTest, EveryBadFlagIsReportedAtOnce) {
  HealthFlags flags;
  flags.timeout = "soon";
  flags.devices = "0;1";
  flags.warn_ratio = "1";
  flags.level = "standrd";
  flags.max_verdict_age = "old";
  absl::StatusOr<v1::HealthRequest> request = BuildHealthRequest(flags);
  ASSERT_FALSE(request.ok());
  EXPECT_EQ(request.status().code(), absl::StatusCode::kInvalidArgument);
  const std::vector<std::string> lines = absl::StrSplit(request.status().message(), '\n');
  ASSERT_EQ(lines.size(), 5u) << request.status().message();
  EXPECT_THAT(lines[0], StartsWith("--timeout: "));
  EXPECT_THAT(lines[1], StartsWith("--devices: "));
  EXPECT_THAT(lines[2], StartsWith("--warn-ratio: "));
  EXPECT_EQ(lines[3],
            "--level: cannot parse 'standrd': expected quick, standard or long; did you mean "
            "'standard'?");
  EXPECT_THAT(lines[4], StartsWith("--max-verdict-age: "));
}

TEST(BuildHealthRequestTest, MaxVerdictAgeTakesMillisecondsRoundedUp) {
  HealthFlags flags;
  flags.max_verdict_age = "500";
  EXPECT_EQ(BuildHealthRequest(flags)->max_verdict_age_ms(), 500u);
  // Truncated to 0 it would turn the cache off instead of asking for a very fresh verdict.
  flags.max_verdict_age = "100us";
  EXPECT_EQ(BuildHealthRequest(flags)->max_verdict_age_ms(), 1u);
}

class BadHealthFlagTest : public ::testing::TestWithParam<BadFlagCase> {};

TEST_P(BadHealthFlagTest, IsRejectedNamingTheFlag) {
  const BadFlagCase& param = GetParam();
  HealthFlags flags;
  if (param.flag == "--timeout") flags.timeout = param.value;
  if (param.flag == "--devices") flags.devices = param.value;
  if (param.flag == "--fault") flags.fault = param.value;
  if (param.flag == "--warn-ratio") flags.warn_ratio = param.value;
  if (param.flag == "--level") flags.level = param.value;
  if (param.flag == "--max-verdict-age") flags.max_verdict_age = param.value;
  absl::StatusOr<v1::HealthRequest> request = BuildHealthRequest(flags);
  ASSERT_FALSE(request.ok()) << param.flag << " " << param.value;
  EXPECT_EQ(request.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(request.status().message(), HasSubstr(param.flag + ":"));
  EXPECT_THAT(request.status().message(), HasSubstr(param.expected_in_message));
}

INSTANTIATE_TEST_SUITE_P(
    Syntax, BadHealthFlagTest,
    ::testing::Values(
        BadFlagCase{"--timeout", "soon", "'soon'"}, BadFlagCase{"--timeout", "-1s", "'-1s'"},
        BadFlagCase{"--devices", "0,,1", "'0,,1'"},
        BadFlagCase{"--fault", ":1", "unknown fault kind ''"},
        BadFlagCase{"--fault", "crash_rank:0:extra", "crash_rank takes 1 argument"},
        BadFlagCase{"--warn-ratio", "fast", "'fast'"}, BadFlagCase{"--warn-ratio", "inf", "'inf'"},
        // 0 is the proto's "default"; at or below 1 every target above the median
        // would be slow.
        BadFlagCase{"--warn-ratio", "0", "'0' is not above 1"},
        BadFlagCase{"--warn-ratio", "1", "'1' is not above 1"},
        BadFlagCase{"--warn-ratio", "0.5", "'0.5' is not above 1"},
        BadFlagCase{"--warn-ratio", "-2", "'-2' is not above 1"},
        BadFlagCase{"--level", "thorough", "'thorough': expected quick, standard or long"},
        BadFlagCase{"--level", "3", "expected quick, standard or long"},
        BadFlagCase{"--level", "", "expected quick, standard or long"},
        BadFlagCase{"--max-verdict-age", "fresh", "'fresh'"},
        BadFlagCase{"--max-verdict-age", "-1m", "'-1m'"},
        BadFlagCase{"--max-verdict-age", "2000h", "the limit is 4294967295"}),
    BadFlagName);

TEST(ParseWarnRatioFlagTest, AcceptsAnythingAboveOne) {
  EXPECT_DOUBLE_EQ(*ParseWarnRatioFlag("--warn-ratio", "1.5"), 1.5);
  EXPECT_DOUBLE_EQ(*ParseWarnRatioFlag("--warn-ratio", " 1.01 "), 1.01);
  EXPECT_DOUBLE_EQ(*ParseWarnRatioFlag("--warn-ratio", "10"), 10.0);
}

TEST(ParseFaultFlagTest, KeepsAFaultOfTheGrammarAsTyped) {
  EXPECT_EQ(*ParseFaultFlag("--fault", "skip_rearm"), "skip_rearm");
  EXPECT_EQ(*ParseFaultFlag("--fault", " missing_rank:3 "), "missing_rank:3");
  // Refused by the CLI once: the CLI and colltestd now read one grammar.
  EXPECT_EQ(*ParseFaultFlag("--fault", "delay_rank:1:3000000"), "delay_rank:1:3000000");
}

// The same words as colltestd's: only the field name differs.
TEST(ParseFaultFlagTest, SaysWhatTheServerSays) {
  const absl::Status cli = ParseFaultFlag("--fault", "crash_rank:0:extra").status();
  EXPECT_EQ(cli.message(),
            "--fault: 'crash_rank:0:extra': crash_rank takes 1 argument (crash_rank:R), got 2 "
            "(expected one of missing_rank:R, delay_rank:R:US, skip_rearm, poison_staging, "
            "skip_canonicalize, crash_rank:R, hang_end_sync:R, stall_rank:R, "
            "quant_amax_before_last_rank, quant_truncate, quant_no_saturation, quant_swap_format, "
            "quant_block_offset; R a rank (0 or more), US microseconds in 0..60000000)");
}

TEST(ParseUint32ListFlagTest, TakesSuffixesAndRanges) {
  EXPECT_THAT(*ParseUint32ListFlag("--m", "8k"), ElementsAre(8192u));
  EXPECT_THAT(*ParseUint32ListFlag("--m", "1..64"), ElementsAre(1, 2, 4, 8, 16, 32, 64));
  EXPECT_THAT(*ParseUint32ListFlag("--m", "8..128:x4"), ElementsAre(8, 32, 128));
  EXPECT_THAT(*ParseUint32ListFlag("--m", "1..4:+1,1K"), ElementsAre(1, 2, 3, 4, 1024));
}

TEST(BuildSweepSpecTest, SizesAndDurationsUseTheSharedGrammar) {
  SweepFlags flags;
  flags.m = "1..64";
  flags.n = "7k";
  flags.lamport_min_bytes = "1M";
  flags.timeout = "1.5s";
  flags.fault = "delay_rank:1:3000000";
  absl::StatusOr<v1::SweepSpec> spec = BuildSweepSpec(flags);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(spec->m(), ElementsAre(1, 2, 4, 8, 16, 32, 64));
  EXPECT_THAT(spec->n(), ElementsAre(7168));
  EXPECT_EQ(spec->knobs().lamport_min_bytes(), 1u << 20);
  EXPECT_EQ(spec->timeout_ms(), 1500u);
  EXPECT_EQ(spec->fault(), "delay_rank:1:3000000");
}

TEST(BuildTuneSpecTest, Defaults) {
  TuneFlags flags;
  flags.world = "2";
  absl::StatusOr<v1::SweepSpec> spec = BuildTuneSpec(flags);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->world_size(), 2u);
  EXPECT_EQ(spec->devices_size(), 0);
  EXPECT_THAT(spec->n(), ElementsAre(7168));
  EXPECT_EQ(spec->dtype(), v1::DTYPE_BF16);
  EXPECT_THAT(spec->m(), ElementsAre(1, 8, 16, 32, 64, 128, 256, 512, 1024));
  EXPECT_THAT(spec->modes(), ElementsAre(v1::MODE_GRAPH));
  EXPECT_THAT(spec->variants(), ElementsAre(v1::VARIANT_ONE_STAGE, v1::VARIANT_TWO_KERNEL,
                                            v1::VARIANT_LAMPORT, v1::VARIANT_LAMPORT_TB));
  EXPECT_EQ(spec->pattern(), v1::PATTERN_NORMAL);
  EXPECT_EQ(spec->tolerance(), v1::TOLERANCE_STRICT);
  EXPECT_EQ(spec->warmup(), 20u);
  EXPECT_EQ(spec->iters(), 200u);
  EXPECT_EQ(spec->timeout_ms(), 5000u);
  EXPECT_EQ(spec->label(), "tune");
  EXPECT_FALSE(spec->no_residual());
  EXPECT_FALSE(spec->stop_on_failure());
  EXPECT_EQ(spec->stress_calls(), 0u);
  EXPECT_EQ(spec->fault(), "");
  EXPECT_FALSE(spec->has_knobs());
}

TEST(BuildTuneSpecTest, FourRanksOrMoreAlsoTuneTheTwoShotVariant) {
  TuneFlags flags;
  flags.world = "4";
  absl::StatusOr<v1::SweepSpec> spec = BuildTuneSpec(flags);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(spec->variants(),
              ElementsAre(v1::VARIANT_ONE_STAGE, v1::VARIANT_TWO_KERNEL, v1::VARIANT_LAMPORT,
                          v1::VARIANT_LAMPORT_TB, v1::VARIANT_LAMPORT_TWO_SHOT));
}

TEST(BuildTuneSpecTest, TranslatesEveryFlag) {
  TuneFlags flags;
  flags.world = "8";
  flags.n = "4096";
  flags.dtype = "fp32";
  flags.m = "64, 1,8,1";
  flags.modes = "eager";
  flags.variants = "lamport_tb,one_stage,lamport_tb,nccl";
  flags.warmup = "3";
  flags.iters = "50";
  flags.timeout = "2s";
  absl::StatusOr<v1::SweepSpec> spec = BuildTuneSpec(flags);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->world_size(), 8u);
  EXPECT_THAT(spec->n(), ElementsAre(4096));
  EXPECT_EQ(spec->dtype(), v1::DTYPE_FP32);
  // One row per m, ascending.
  EXPECT_THAT(spec->m(), ElementsAre(1, 8, 64));
  EXPECT_THAT(spec->modes(), ElementsAre(v1::MODE_EAGER));
  // Listed order kept (it breaks ties), repeats dropped.
  EXPECT_THAT(spec->variants(),
              ElementsAre(v1::VARIANT_LAMPORT_TB, v1::VARIANT_ONE_STAGE, v1::VARIANT_NCCL));
  EXPECT_EQ(spec->warmup(), 3u);
  EXPECT_EQ(spec->iters(), 50u);
  EXPECT_EQ(spec->timeout_ms(), 2000u);
}

TEST(BuildTuneSpecTest, ARepeatedModeIsStillOneMode) {
  TuneFlags flags;
  flags.world = "2";
  flags.modes = "graph, GRAPH";
  absl::StatusOr<v1::SweepSpec> spec = BuildTuneSpec(flags);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(spec->modes(), ElementsAre(v1::MODE_GRAPH));
}

// The table records the epilogue it was measured with, so the sweep must run with it.
TEST(BuildTuneSpecTest, CarriesTheEpilogueAndTheFlagsItTakes) {
  TuneFlags flags;
  flags.world = "2";
  flags.epilogue = "nvfp4";
  flags.keep_normed = true;
  flags.fp8_format = "e4m3fnuz";
  flags.fp8_scale = "0.5";
  flags.nvfp4_global_scale = "128";
  absl::StatusOr<v1::SweepSpec> spec = BuildTuneSpec(flags);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(spec->epilogues(), ElementsAre(v1::EPILOGUE_NVFP4));
  EXPECT_TRUE(spec->keep_normed());
  EXPECT_EQ(spec->fp8_format(), v1::FP8_FORMAT_E4M3FNUZ);
  EXPECT_EQ(spec->fp8_scale(), 0.5f);
  EXPECT_EQ(spec->nvfp4_global_scale(), 128.0f);
  // Unset: the proto's defaults, epilogue none.
  flags = TuneFlags{};
  flags.world = "2";
  spec = BuildTuneSpec(flags);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(spec->epilogues().empty());
  EXPECT_FALSE(spec->keep_normed());
  EXPECT_EQ(spec->fp8_scale(), 0.0f);
  // One epilogue named twice is still one.
  flags.epilogue = "fp8_token, FP8_TOKEN";
  spec = BuildTuneSpec(flags);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(spec->epilogues(), ElementsAre(v1::EPILOGUE_FP8_TOKEN));
}

// `auto` picks a kernel plugin only when asked: a plugin in tune's --variants needs --tune-plugins,
// and then goes to SweepSpec.plugins, after colltest's own variants.
TEST(BuildTuneSpecTest, APluginIsTunedOnlyWithTunePlugins) {
  TuneFlags flags;
  flags.world = "2";
  flags.variants = "plugin:oneshot_norm,one_stage,plugin:theirs,lamport";
  absl::StatusOr<v1::SweepSpec> refused = BuildTuneSpec(flags);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.status().message(),
            "--variants: 'plugin:oneshot_norm': auto picks a kernel plugin only when asked: add "
            "--tune-plugins");
  flags.tune_plugins = true;
  absl::StatusOr<v1::SweepSpec> spec = BuildTuneSpec(flags);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(spec->variants(), ElementsAre(v1::VARIANT_ONE_STAGE, v1::VARIANT_LAMPORT));
  EXPECT_THAT(spec->plugins(), ElementsAre("oneshot_norm", "theirs"));
  // A plugin alone is a table of that plugin alone.
  flags.variants = "plugin:oneshot_norm";
  spec = BuildTuneSpec(flags);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(spec->variants().empty());
  EXPECT_THAT(spec->plugins(), ElementsAre("oneshot_norm"));
  // Without a plugin the switch would do nothing: refused rather than ignored.
  for (std::optional<std::string> variants :
       {std::optional<std::string>(), std::optional<std::string>("one_stage,lamport")}) {
    flags.variants = variants;
    absl::StatusOr<v1::SweepSpec> empty = BuildTuneSpec(flags);
    ASSERT_FALSE(empty.ok());
    EXPECT_EQ(empty.status().message(),
              "--tune-plugins: --variants names no kernel plugin (plugin:NAME) to tune");
  }
  // Still no auto, and a bad name is still refused by its rule.
  flags.variants = "auto,plugin:x";
  EXPECT_THAT(BuildTuneSpec(flags).status().message(), HasSubstr("includes auto"));
  flags.variants = "plugin:X-1";
  EXPECT_THAT(BuildTuneSpec(flags).status().message(),
              HasSubstr("a plugin's name is 1 to 32 of a-z, 0-9 and _"));
}

TEST(BuildTuneSpecTest, WorldIsRequired) {
  absl::StatusOr<v1::SweepSpec> spec = BuildTuneSpec(TuneFlags{});
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(spec.status().message(), HasSubstr("--world: required"));
}

class BadTuneFlagTest : public ::testing::TestWithParam<BadFlagCase> {};

TEST_P(BadTuneFlagTest, IsRejectedNamingTheFlag) {
  const BadFlagCase& param = GetParam();
  TuneFlags flags;
  flags.world = "2";
  if (param.flag == "--world") flags.world = param.value;
  if (param.flag == "--hidden") flags.n = param.value;
  if (param.flag == "--dtype") flags.dtype = param.value;
  if (param.flag == "--m") flags.m = param.value;
  if (param.flag == "--modes") flags.modes = param.value;
  if (param.flag == "--variants") flags.variants = param.value;
  if (param.flag == "--warmup") flags.warmup = param.value;
  if (param.flag == "--iters") flags.iters = param.value;
  if (param.flag == "--timeout") flags.timeout = param.value;
  if (param.flag == "--epilogue") flags.epilogue = param.value;
  if (param.flag == "--fp8-format") flags.fp8_format = param.value;
  if (param.flag == "--fp8-scale") flags.fp8_scale = param.value;
  if (param.flag == "--nvfp4-global-scale") flags.nvfp4_global_scale = param.value;
  absl::StatusOr<v1::SweepSpec> spec = BuildTuneSpec(flags);
  ASSERT_FALSE(spec.ok()) << param.flag << " " << param.value;
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(spec.status().message(), HasSubstr(param.flag + ":"));
  EXPECT_THAT(spec.status().message(), HasSubstr(param.expected_in_message));
}

INSTANTIATE_TEST_SUITE_P(
    Tune, BadTuneFlagTest,
    ::testing::Values(
        // The table is for one mode; "all" is two.
        BadFlagCase{"--modes", "eager,graph", "'eager,graph' names more than one mode"},
        BadFlagCase{"--modes", "all", "'all' names more than one mode"},
        BadFlagCase{"--modes", "lazy", "'lazy'"},
        // The proto's 0 means every device: a world the table could not name.
        BadFlagCase{"--world", "0", "'0' is not a rank count"},
        BadFlagCase{"--world", "two", "'two'"},
        BadFlagCase{"--hidden", "7168,4096", "one hidden size"},
        BadFlagCase{"--hidden", "big", "'big'"},
        BadFlagCase{"--variants", "one_stage,auto", "includes auto"},
        BadFlagCase{"--variants", "all", "includes auto"},
        BadFlagCase{"--variants", "turbo", "'turbo'"}, BadFlagCase{"--m", "1,,8", "'1,,8'"},
        BadFlagCase{"--dtype", "fp8", "'fp8'"}, BadFlagCase{"--warmup", "-1", "'-1'"},
        BadFlagCase{"--iters", "many", "'many'"}, BadFlagCase{"--timeout", "soon", "'soon'"},
        // The table is for one epilogue; "all" is four.
        BadFlagCase{"--epilogue", "none,nvfp4", "'none,nvfp4' names more than one epilogue"},
        BadFlagCase{"--epilogue", "all", "'all' names more than one epilogue"},
        BadFlagCase{"--epilogue", "fp4", "'fp4'"}, BadFlagCase{"--fp8-format", "e5m2", "'e5m2'"},
        BadFlagCase{"--fp8-scale", "0", "'0' is not above 0"},
        BadFlagCase{"--nvfp4-global-scale", "huge", "'huge'"}),
    BadFlagName);

// --variants takes kernel plugins as plugin:NAME beside the variants (docs/plugins.md); `all`
// never includes one; a bad or bare plugin name is refused naming the rule.
TEST(ParseKernelsFlagTest, PluginsBesideVariantsAndNeverInAll) {
  absl::StatusOr<KernelChoice> k =
      ParseKernelsFlag("--variants", "one_stage, plugin:theirs,plugin:theirs,lamport");
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->variants, (std::vector<v1::Variant>{v1::VARIANT_ONE_STAGE, v1::VARIANT_LAMPORT}));
  EXPECT_EQ(k->plugins, std::vector<std::string>{"theirs"});
  absl::StatusOr<KernelChoice> alone = ParseKernelsFlag("--variants", "plugin:a_1");
  ASSERT_TRUE(alone.ok());
  EXPECT_TRUE(alone->variants.empty());
  absl::StatusOr<KernelChoice> all = ParseKernelsFlag("--variants", "all");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(std::count(all->variants.begin(), all->variants.end(), v1::VARIANT_PLUGIN), 0);
  EXPECT_THAT(std::string(ParseKernelsFlag("--variants", "plugin:Bad-Name").status().message()),
              HasSubstr("'plugin:Bad-Name': a plugin's name is 1 to 32 of a-z, 0-9 and _"));
  EXPECT_THAT(std::string(ParseKernelsFlag("--variants", "plugin").status().message()),
              HasSubstr("'plugin' needs the plugin's name: plugin:NAME"));
  SweepFlags flags;
  flags.variants = "plugin:theirs";
  absl::StatusOr<v1::SweepSpec> built = BuildSweepSpec(flags);
  ASSERT_TRUE(built.ok()) << built.status();
  EXPECT_EQ(built->plugins_size(), 1);
  EXPECT_EQ(built->variants_size(), 0);
  EXPECT_FALSE(VariantsFromServer(flags));
}

}  // namespace
}  // namespace colltest::client
