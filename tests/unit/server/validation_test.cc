#include "server/runs/validation.h"

#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/text.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::server {
namespace {

namespace v1 = ::colltest::v1;
using ::testing::HasSubstr;
using ::testing::Not;

ServerLimits CpuLimits(uint32_t ranks = 4) {
  ServerLimits limits;
  limits.backend = "cpu";
  for (uint32_t i = 0; i < ranks; ++i) limits.devices.push_back(i);
  return limits;
}

v1::SweepSpec ValidSpec() {
  v1::SweepSpec spec;
  spec.set_world_size(4);
  spec.add_m(1);
  spec.add_m(8);
  spec.add_n(7168);
  spec.add_variants(v1::VARIANT_LAMPORT);
  return spec;
}

// Expects INVALID_ARGUMENT whose message contains every one of `parts`.
void ExpectInvalid(const v1::SweepSpec& spec, std::initializer_list<std::string> parts,
                   const ServerLimits& limits = CpuLimits()) {
  absl::StatusOr<v1::SweepSpec> out = ValidateSpec(spec, limits);
  ASSERT_FALSE(out.ok()) << "accepted: " << spec.ShortDebugString();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << out.status();
  for (const std::string& part : parts) {
    EXPECT_THAT(std::string(out.status().message()), HasSubstr(part));
  }
}

TEST(ValidationTest, ValidSpecGetsDefaults) {
  absl::StatusOr<v1::SweepSpec> out = ValidateSpec(ValidSpec(), CpuLimits());
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->world_size(), 4u);
  EXPECT_THAT(out->devices(), ::testing::ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(out->dtype(), v1::DTYPE_BF16);
  EXPECT_EQ(out->pattern(), v1::PATTERN_NORMAL);
  EXPECT_EQ(out->tolerance(), v1::TOLERANCE_STRICT);
  EXPECT_THAT(out->modes(), ::testing::ElementsAre(v1::MODE_EAGER));
  EXPECT_EQ(out->warmup(), 5u);
  EXPECT_EQ(out->iters(), 20u);
  EXPECT_EQ(out->timeout_ms(), 5000u);
  EXPECT_FLOAT_EQ(out->eps(), 1e-6f);
}

TEST(ValidationTest, ExplicitValuesAreKept) {
  v1::SweepSpec spec = ValidSpec();
  spec.set_world_size(0);
  spec.add_devices(3);
  spec.add_devices(1);
  spec.set_dtype(v1::DTYPE_FP32);
  spec.set_warmup(2);
  spec.set_iters(7);
  spec.set_timeout_ms(100);
  spec.set_eps(1e-5f);
  spec.add_modes(v1::MODE_UNSPECIFIED);
  spec.add_modes(v1::MODE_GRAPH);
  absl::StatusOr<v1::SweepSpec> out = ValidateSpec(spec, CpuLimits());
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->world_size(), 2u);
  EXPECT_THAT(out->devices(), ::testing::ElementsAre(3, 1));
  EXPECT_EQ(out->dtype(), v1::DTYPE_FP32);
  EXPECT_EQ(out->warmup(), 2u);
  EXPECT_EQ(out->iters(), 7u);
  EXPECT_EQ(out->timeout_ms(), 100u);
  EXPECT_FLOAT_EQ(out->eps(), 1e-5f);
  EXPECT_THAT(out->modes(), ::testing::ElementsAre(v1::MODE_EAGER, v1::MODE_GRAPH));
}

TEST(ValidationTest, WorldSizeZeroMeansEveryDevice) {
  v1::SweepSpec spec = ValidSpec();
  spec.set_world_size(0);
  absl::StatusOr<v1::SweepSpec> out = ValidateSpec(spec, CpuLimits(3));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->world_size(), 3u);
}

TEST(ValidationTest, AnyWorldSizeFromTwoUpIsAccepted) {
  for (uint32_t w : {2u, 3u, 5u, 7u}) {
    v1::SweepSpec spec = ValidSpec();
    spec.set_world_size(w);
    EXPECT_TRUE(ValidateSpec(spec, CpuLimits(8)).ok()) << w;
  }
}

TEST(ValidationTest, WorldSizeTooLargeNamesTheCpuFlag) {
  v1::SweepSpec spec = ValidSpec();
  spec.set_world_size(64);
  ExpectInvalid(spec, {"world_size = 64: this cpu backend has 4 ranks (colltestd --cpu-ranks)"});
}

TEST(ValidationTest, WorldSizeTooLargeOnGpus) {
  ServerLimits limits;
  limits.backend = "cuda";
  limits.devices = {0, 1};
  v1::SweepSpec spec = ValidSpec();
  spec.set_world_size(8);
  ExpectInvalid(spec, {"world_size = 8: this cuda backend has 2 devices"}, limits);
}

TEST(ValidationTest, WorldSizeOne) {
  v1::SweepSpec spec = ValidSpec();
  spec.set_world_size(1);
  ExpectInvalid(spec, {"world_size = 1: must be >= 2"});
}

TEST(ValidationTest, DevicesMustMatchWorldSize) {
  v1::SweepSpec spec = ValidSpec();
  spec.add_devices(0);
  spec.add_devices(1);
  ExpectInvalid(spec, {"devices: 2 listed but world_size = 4"});
}

TEST(ValidationTest, DevicesMustExist) {
  v1::SweepSpec spec = ValidSpec();
  spec.set_world_size(2);
  spec.add_devices(0);
  spec.add_devices(9);
  ExpectInvalid(spec, {"devices[1] = 9: no such device", "0, 1, 2, 3"});
}

TEST(ValidationTest, DevicesMustBeUnique) {
  v1::SweepSpec spec = ValidSpec();
  spec.set_world_size(2);
  spec.add_devices(1);
  spec.add_devices(1);
  ExpectInvalid(spec, {"devices[1] = 1: listed twice"});
}

TEST(ValidationTest, RowLimits) {
  v1::SweepSpec spec = ValidSpec();
  spec.set_m(0, 0);
  ExpectInvalid(spec, {"m = 0: must be >= 1"});
  spec.set_m(0, 65537);
  ExpectInvalid(spec, {"m = 65537: must be <= 65536"});
  spec.clear_m();
  ExpectInvalid(spec, {"m: empty"});
  spec.add_m(4);
  spec.add_m(4);
  ExpectInvalid(spec, {"m", "listed twice"});
}

TEST(ValidationTest, HiddenSizeMustBeAWholeNumberOfPacks) {
  v1::SweepSpec spec = ValidSpec();
  spec.set_n(0, 7);
  ExpectInvalid(spec, {"n = 7: must be a multiple of the pack size 8 (16 bytes of bf16)"});
  spec.set_n(0, 0);
  ExpectInvalid(spec, {"n = 0: must be >= the pack size 8"});
  spec.set_n(0, 12);
  spec.set_dtype(v1::DTYPE_FP32);
  EXPECT_TRUE(ValidateSpec(spec, CpuLimits()).ok());  // 3 packs of fp32
  spec.set_n(0, 6);
  ExpectInvalid(spec, {"n = 6: must be a multiple of the pack size 4 (16 bytes of fp32)"});
  spec.set_n(0, 16392);
  ExpectInvalid(spec, {"n = 16392: must be <= 16384"});
  spec.clear_n();
  ExpectInvalid(spec, {"n: empty"});
}

TEST(ValidationTest, CaseMemoryBudget) {
  v1::SweepSpec spec = ValidSpec();
  spec.add_m(4096);
  spec.set_n(0, 8192);  // 4096 * 8192 * 2 = 64 MiB > 32 MiB
  ExpectInvalid(spec,
                {"m = 4096, n = 8192", "67108864 bytes", "33554432", "colltestd --max-case-bytes"});
  ServerLimits big = CpuLimits();
  big.max_case_bytes = 64ull << 20;
  EXPECT_TRUE(ValidateSpec(spec, big).ok());
}

TEST(ValidationTest, Enums) {
  v1::SweepSpec spec = ValidSpec();
  spec.set_dtype(static_cast<v1::DType>(9));
  ExpectInvalid(spec, {"dtype = 9"});
  spec = ValidSpec();
  spec.set_pattern(static_cast<v1::Pattern>(42));
  ExpectInvalid(spec, {"pattern = 42"});
  spec = ValidSpec();
  spec.set_tolerance(static_cast<v1::Tolerance>(7));
  ExpectInvalid(spec, {"tolerance = 7"});
  spec = ValidSpec();
  spec.add_modes(static_cast<v1::Mode>(5));
  ExpectInvalid(spec, {"modes[0] = 5"});
  spec = ValidSpec();
  spec.add_variants(static_cast<v1::Variant>(99));
  ExpectInvalid(spec, {"variants[1] = 99"});
  spec = ValidSpec();
  spec.add_variants(v1::VARIANT_UNSPECIFIED);
  ExpectInvalid(spec, {"variants[1] = 0"});
  spec = ValidSpec();
  spec.add_variants(v1::VARIANT_LAMPORT);
  ExpectInvalid(spec, {"variants[1] = 3: listed twice"});
  spec = ValidSpec();
  spec.add_modes(v1::MODE_EAGER);
  spec.add_modes(v1::MODE_UNSPECIFIED);
  ExpectInvalid(spec, {"modes[1]", "listed twice"});
}

TEST(ValidationTest, EmptyVariants) {
  v1::SweepSpec spec = ValidSpec();
  spec.clear_variants();
  ExpectInvalid(spec, {"variants: empty"});
}

TEST(ValidationTest, CountLimits) {
  v1::SweepSpec spec = ValidSpec();
  spec.set_iters(100001);
  ExpectInvalid(spec, {"iters = 100001: must be <= 100000"});
  spec = ValidSpec();
  spec.set_warmup(10001);
  ExpectInvalid(spec, {"warmup = 10001: must be <= 10000"});
  spec = ValidSpec();
  spec.set_stress_calls(100001);
  ExpectInvalid(spec, {"stress_calls = 100001: must be <= 100000"});
  spec = ValidSpec();
  spec.set_timeout_ms(600001);
  ExpectInvalid(spec, {"timeout_ms = 600001: must be <= 600000"});
  spec = ValidSpec();
  spec.set_iters(100000);
  spec.set_warmup(10000);
  spec.set_stress_calls(100000);
  spec.set_timeout_ms(600000);
  EXPECT_TRUE(ValidateSpec(spec, CpuLimits()).ok());
}

TEST(ValidationTest, ExpandedCaseCount) {
  v1::SweepSpec spec = ValidSpec();
  spec.clear_m();
  for (uint32_t m = 1; m <= 1024; ++m) spec.add_m(m);  // 1024 x 1 x 2 x 2 = 4096: the limit
  spec.add_variants(v1::VARIANT_ONE_STAGE);
  spec.add_modes(v1::MODE_EAGER);
  spec.add_modes(v1::MODE_GRAPH);
  EXPECT_TRUE(ValidateSpec(spec, CpuLimits()).ok());
  spec.add_m(1025);
  ExpectInvalid(spec, {"cases = 4100", "must be <= 4096"});
}

TEST(ValidationTest, EpiloguesMultiplyTheCaseCount) {
  v1::SweepSpec spec = ValidSpec();
  spec.clear_m();
  for (uint32_t m = 1; m <= 1024; ++m) spec.add_m(m);  // 1024 x 1 x 2 x 1 x 2 = 4096: the limit
  spec.add_variants(v1::VARIANT_ONE_STAGE);
  spec.add_epilogues(v1::EPILOGUE_NONE);
  spec.add_epilogues(v1::EPILOGUE_NVFP4);
  EXPECT_TRUE(ValidateSpec(spec, CpuLimits()).ok());
  spec.add_m(1025);
  ExpectInvalid(
      spec, {"cases = 4100 (1025 m x 1 n x 2 variants x 1 modes x 2 epilogues): must be <= 4096"});
}

TEST(ValidationTest, EpiloguesAreDistinctAndNamed) {
  v1::SweepSpec spec = ValidSpec();
  spec.add_epilogues(v1::EPILOGUE_FP8_TOKEN);
  spec.add_epilogues(v1::EPILOGUE_UNSPECIFIED);
  ExpectInvalid(spec, {"epilogues[1] = 0: unknown epilogue (none, fp8_token, fp8_tensor, nvfp4)"});
  spec.set_epilogues(1, static_cast<v1::Epilogue>(99));
  ExpectInvalid(spec, {"epilogues[1] = 99: unknown epilogue"});
  spec.set_epilogues(1, v1::EPILOGUE_FP8_TOKEN);
  ExpectInvalid(spec, {"epilogues[1] = 2: listed twice"});
  spec.set_epilogues(1, v1::EPILOGUE_NONE);
  absl::StatusOr<v1::SweepSpec> out = ValidateSpec(spec, CpuLimits());
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->epilogues(), ::testing::ElementsAre(v1::EPILOGUE_FP8_TOKEN, v1::EPILOGUE_NONE));
}

// The stored spec says which scales and tolerance a run used, also when the request left them out.
TEST(ValidationTest, QuantSettingsGetDefaults) {
  absl::StatusOr<v1::SweepSpec> out = ValidateSpec(ValidSpec(), CpuLimits());
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->epilogues(), ::testing::ElementsAre(v1::EPILOGUE_NONE));
  EXPECT_EQ(out->fp8_scale(), 0.03125f);
  EXPECT_EQ(out->nvfp4_global_scale(), 256.0f);
  EXPECT_EQ(out->quant_tolerance(), v1::QUANT_TOLERANCE_STRICT);
  // The device's format: only the worker knows which one that is.
  EXPECT_EQ(out->fp8_format(), v1::FP8_FORMAT_UNSPECIFIED);
  EXPECT_FALSE(out->keep_normed());

  v1::SweepSpec spec = ValidSpec();
  spec.add_epilogues(v1::EPILOGUE_FP8_TENSOR);
  spec.set_keep_normed(true);
  spec.set_fp8_format(v1::FP8_FORMAT_E4M3FNUZ);
  spec.set_fp8_scale(0x1p64f);  // the largest allowed
  spec.set_nvfp4_global_scale(1e-30f);
  spec.set_quant_tolerance(v1::QUANT_TOLERANCE_ULP);
  out = ValidateSpec(spec, CpuLimits());
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->epilogues(), ::testing::ElementsAre(v1::EPILOGUE_FP8_TENSOR));
  EXPECT_TRUE(out->keep_normed());
  EXPECT_EQ(out->fp8_format(), v1::FP8_FORMAT_E4M3FNUZ);
  EXPECT_EQ(out->fp8_scale(), 0x1p64f);
  EXPECT_EQ(out->nvfp4_global_scale(), 1e-30f);
  EXPECT_EQ(out->quant_tolerance(), v1::QUANT_TOLERANCE_ULP);
}

TEST(ValidationTest, QuantScalesArePositiveFiniteAndBounded) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const auto& [value, text] : {std::pair<float, std::string>{-1.0f, "-1"},
                                    {-0.5f, "-0.5"},
                                    {nan, "nan"},
                                    {inf, "inf"},
                                    {0x1p65f, "3.689349e+19"},
                                    {std::nextafter(0x1p64f, inf), "1.8446746e+19"}}) {
    v1::SweepSpec spec = ValidSpec();
    spec.set_fp8_scale(value);
    ExpectInvalid(spec, {absl::StrCat("fp8_scale = ", text,
                                      ": must be > 0, finite and <= 2^64 (or 0 for 1/32)")});
    spec = ValidSpec();
    spec.set_nvfp4_global_scale(value);
    ExpectInvalid(spec, {absl::StrCat("nvfp4_global_scale = ", text,
                                      ": must be > 0, finite and <= 2^64 (or 0 for 256)")});
  }
}

TEST(ValidationTest, QuantEnums) {
  v1::SweepSpec spec = ValidSpec();
  spec.set_fp8_format(static_cast<v1::Fp8Format>(3));
  ExpectInvalid(spec, {"fp8_format = 3: unknown fp8 format (e4m3fn, e4m3fnuz)"});
  spec = ValidSpec();
  spec.set_quant_tolerance(static_cast<v1::QuantTolerance>(3));
  ExpectInvalid(spec, {"quant_tolerance = 3: unknown quant tolerance (strict, ulp)"});
  // Both at once, with a bad scale: every problem is named.
  spec.set_fp8_format(static_cast<v1::Fp8Format>(3));
  spec.set_fp8_scale(-2.0f);
  ExpectInvalid(spec, {"fp8_format = 3", "quant_tolerance = 3", "fp8_scale = -2"});
}

TEST(ValidationTest, QuantPatternsAreAccepted) {
  for (v1::Pattern p : {v1::PATTERN_AMAX_LAST_RANK, v1::PATTERN_QUANT_TIES,
                        v1::PATTERN_QUANT_SATURATE, v1::PATTERN_ZERO_ROWS}) {
    v1::SweepSpec spec = ValidSpec();
    spec.set_pattern(p);
    absl::StatusOr<v1::SweepSpec> out = ValidateSpec(spec, CpuLimits());
    ASSERT_TRUE(out.ok()) << p << ": " << out.status();
    EXPECT_EQ(out->pattern(), p);
  }
}

TEST(ValidationTest, Eps) {
  v1::SweepSpec spec = ValidSpec();
  spec.set_eps(-1.0f);
  ExpectInvalid(spec, {"eps = -1: must be > 0 and < 1"});
  spec.set_eps(1.0f);
  ExpectInvalid(spec, {"eps = 1: must be > 0 and < 1"});
  spec.set_eps(std::numeric_limits<float>::quiet_NaN());
  ExpectInvalid(spec, {"eps = nan"});
}

TEST(ValidationTest, Knobs) {
  v1::SweepSpec spec = ValidSpec();
  spec.mutable_knobs()->set_threads_per_block(128);
  ExpectInvalid(spec,
                {"knobs.threads_per_block = 128: must be 0 (the variant's default), 256 or 512"});
  spec.mutable_knobs()->set_threads_per_block(512);
  EXPECT_TRUE(ValidateSpec(spec, CpuLimits()).ok());
  spec.mutable_knobs()->set_grid_blocks(1025);
  ExpectInvalid(spec, {"knobs.grid_blocks = 1025: must be <= 1024"});
}

TEST(ValidationTest, KnobsArmRepeatIsBounded) {
  v1::SweepSpec spec = ValidSpec();
  spec.mutable_knobs()->set_arm_repeat(kMaxArmRepeat);
  EXPECT_TRUE(ValidateSpec(spec, CpuLimits()).ok());
  spec.mutable_knobs()->set_arm_repeat(4294967295u);
  ExpectInvalid(spec, {"knobs.arm_repeat = 4294967295: must be <= 64"});
}

TEST(ValidationTest, KnobsLamportMinBytesIsBounded) {
  v1::SweepSpec spec = ValidSpec();
  spec.mutable_knobs()->set_lamport_min_bytes(kMaxLamportMinBytes);
  EXPECT_TRUE(ValidateSpec(spec, CpuLimits()).ok());
  spec.mutable_knobs()->set_lamport_min_bytes(kMaxLamportMinBytes + 1);
  ExpectInvalid(spec, {"knobs.lamport_min_bytes = 1099511627777: must be <= 1099511627776"});
}

TEST(ValidationTest, LabelLength) {
  v1::SweepSpec spec = ValidSpec();
  spec.set_label(std::string(256, 'x'));
  EXPECT_TRUE(ValidateSpec(spec, CpuLimits()).ok());
  spec.set_label(std::string(300, 'x'));
  ExpectInvalid(spec, {"spec.label: 300 bytes, the limit is 256"});
}

TEST(ValidationTest, LabelIsOneLineOfPrintableText) {
  v1::SweepSpec spec = ValidSpec();
  spec.set_label("nightly gr\xc3\xbc\xc3\x9f");
  EXPECT_TRUE(ValidateSpec(spec, CpuLimits()).ok());
  spec.set_label("ok\nINFO forged log line");
  ExpectInvalid(spec, {"spec.label: control character \\x0a at byte 2"});
  spec.set_label("\x1b[2J");
  ExpectInvalid(spec, {"spec.label: control character \\x1b at byte 0"});
}

// U+202E would show "build\u202e-rc1" reversed in every client's run list; U+2028 breaks the log
// line the label is written to.
TEST(ValidationTest, LabelRefusesBidiControlsAndLineSeparators) {
  v1::SweepSpec spec = ValidSpec();
  spec.set_label("build\xe2\x80\xae-rc1");
  ExpectInvalid(spec, {"spec.label: bidirectional control U+202E at byte 5"});
  spec.set_label("ok\xe2\x80\xa8INFO forged log line");
  ExpectInvalid(spec, {"spec.label: line separator U+2028 at byte 2"});
}

TEST(ValidationTest, LabelMustBeUtf8) {
  v1::SweepSpec spec = ValidSpec();
  spec.set_label("ab\xff");
  ExpectInvalid(spec, {"spec.label: invalid UTF-8 at byte 2"});
}

TEST(ValidationTest, FaultInjectionNeedsTheServerFlag) {
  v1::SweepSpec spec = ValidSpec();
  spec.set_fault("missing_rank:1");
  absl::StatusOr<v1::SweepSpec> out = ValidateSpec(spec, CpuLimits());
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(out.status().message(),
            "fault injection is disabled (start colltestd with --allow-fault-injection)");

  ServerLimits allowed = CpuLimits();
  allowed.allow_fault_injection = true;
  out = ValidateSpec(spec, allowed);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->fault(), "missing_rank:1");
}

ServerLimits FaultsAllowed() {
  ServerLimits limits = CpuLimits();
  limits.allow_fault_injection = true;
  return limits;
}

TEST(ValidationTest, FaultDisabledIsAnsweredBeforeTheGrammar) {
  v1::SweepSpec spec = ValidSpec();
  spec.set_fault("foo");
  EXPECT_EQ(ValidateSpec(spec, CpuLimits()).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(ValidationTest, FaultFollowsTheGrammar) {
  v1::SweepSpec spec = ValidSpec();
  for (const char* fault :
       {"foo", "delay_rank:0:abc", "crash_rank:0:extra", "missing_rank:-1", "skip_rearm:1"}) {
    spec.set_fault(fault);
    ExpectInvalid(spec, {"spec.fault: '", fault, "expected one of missing_rank:R"},
                  FaultsAllowed());
  }
  spec.set_fault("delay_rank:1:3000000");
  EXPECT_TRUE(ValidateSpec(spec, FaultsAllowed()).ok());
}

TEST(ValidationTest, FaultRankIsCheckedAgainstTheWorld) {
  v1::SweepSpec spec = ValidSpec();  // world 4
  spec.set_fault("missing_rank:3");
  EXPECT_TRUE(ValidateSpec(spec, FaultsAllowed()).ok());
  spec.set_fault("missing_rank:9");
  ExpectInvalid(spec, {"spec.fault: 'missing_rank:9': rank 9 is out of range: the world has 4"},
                FaultsAllowed());
  // Against the world of this request, not of the server: 4 ranks exist, 2 run.
  spec.set_world_size(2);
  spec.set_fault("missing_rank:2");
  ExpectInvalid(spec, {"rank 2 is out of range: the world has 2 ranks"}, FaultsAllowed());
}

TEST(ValidationTest, FaultLength) {
  v1::SweepSpec spec = ValidSpec();
  spec.set_fault(std::string(1 << 20, 'x'));
  absl::StatusOr<v1::SweepSpec> out = ValidateSpec(spec, FaultsAllowed());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(out.status().message(), "spec.fault: 1048576 bytes, the limit is 64");
}

TEST(ValidationTest, EveryIndependentProblemIsReportedAtOnce) {
  v1::SweepSpec spec;  // no m, n or variants
  spec.set_world_size(64);
  spec.set_pattern(static_cast<v1::Pattern>(99));
  spec.set_tolerance(static_cast<v1::Tolerance>(99));
  spec.add_modes(static_cast<v1::Mode>(7));
  spec.set_iters(kMaxIters + 1);
  spec.set_eps(2.0f);
  spec.set_label("a\nb");
  absl::StatusOr<v1::SweepSpec> out = ValidateSpec(spec, CpuLimits());
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  // Each message as it is alone, in the order of the checks, on one line.
  EXPECT_EQ(
      std::string(out.status().message()),
      absl::StrJoin(
          {std::string("world_size = 64: this cpu backend has 4 ranks (colltestd --cpu-ranks)"),
           std::string("pattern = 99: unknown pattern (normal, integers, neg_zero, large, "
                       "denormal, same, amax_last_rank, quant_ties, quant_saturate, zero_rows)"),
           std::string("tolerance = 99: unknown tolerance profile (strict, aiter, trtllm)"),
           std::string("m: empty (give at least one row count)"),
           std::string("n: empty (give at least one hidden size)"),
           std::string("variants: empty (give at least one, e.g. one_stage or lamport, or a kernel "
                       "plugin)"),
           std::string("modes[0] = 7: unknown mode (eager, graph)"),
           absl::StrCat("iters = ", kMaxIters + 1, ": must be <= ", kMaxIters),
           std::string("eps = 2: must be > 0 and < 1 (or 0 for 1e-6)"),
           std::string(common::CheckLabel("spec.label", "a\nb").message())},
          "; "));
}

TEST(ValidationTest, ADependentCheckIsSkippedWhenItsPrerequisiteFailed) {
  // n = 7 breaks the pack of every dtype, but with an unknown dtype there is no pack to name.
  v1::SweepSpec spec = ValidSpec();
  spec.set_dtype(static_cast<v1::DType>(42));
  spec.set_n(0, 7);
  absl::StatusOr<v1::SweepSpec> out = ValidateSpec(spec, CpuLimits());
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(), "dtype = 42: unknown dtype (bf16, fp16, fp32)");
  // A bad world: the fault's ranks cannot be checked against it.
  ServerLimits allowed = CpuLimits();
  allowed.allow_fault_injection = true;
  v1::SweepSpec world = ValidSpec();
  world.set_world_size(64);
  world.set_fault("missing_rank:9");
  out = ValidateSpec(world, allowed);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(std::string(out.status().message()), Not(HasSubstr("spec.fault")));
  // A bad m: no case count or case size beyond it.
  v1::SweepSpec rows = ValidSpec();
  rows.clear_m();
  rows.set_n(0, 128);
  for (uint32_t m = 0; m <= 5000; ++m) rows.add_m(m);  // 5001 cases, and m = 0
  out = ValidateSpec(rows, CpuLimits());
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(), "m = 0: must be >= 1");
  rows.set_m(0, 5001);
  EXPECT_THAT(std::string(ValidateSpec(rows, CpuLimits()).status().message()),
              HasSubstr("cases = 5001"));
}

TEST(ValidationTest, TheFirstProblemsCodeIsKept) {
  v1::SweepSpec spec = ValidSpec();
  spec.set_iters(kMaxIters + 1);
  spec.set_fault("missing_rank:1");  // fault injection disabled: FAILED_PRECONDITION alone
  absl::StatusOr<v1::SweepSpec> out = ValidateSpec(spec, CpuLimits());
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("; fault injection is disabled"));
  spec.set_iters(0);
  EXPECT_EQ(ValidateSpec(spec, CpuLimits()).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(ValidationTest, RunIdIsShortPrintableAscii) {
  EXPECT_TRUE(ValidateRunId("r-0123456789abcdef0123456789abcdef").ok());
  EXPECT_EQ(ValidateRunId("").message(), "run_id: empty");
  EXPECT_EQ(ValidateRunId(std::string(65, 'r')).message(), "run_id: 65 bytes, the limit is 64");
  EXPECT_TRUE(ValidateRunId(std::string(64, 'r')).ok());
  EXPECT_EQ(ValidateRunId("r-1\n").message(),
            "run_id: byte 3 is \\x0a: a run id is printable ASCII without spaces");
  EXPECT_EQ(ValidateRunId("r 1").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateRunId("r-\xc3\xbc").code(), absl::StatusCode::kInvalidArgument);
}

// Rule (docs/plugins.md): SweepSpec.plugins names loaded kernel plugins, each once, at most 16;
// VARIANT_PLUGIN is never asked for in variants; plugins alone are a valid choice of kernels.
TEST(ValidationTest, PluginsAreLoadedOnesNamedOnce) {
  ServerLimits limits = CpuLimits();
  v1::KernelPlugin loaded;
  loaded.set_name("theirs");
  loaded.set_loaded(true);
  limits.kernel_plugins.push_back(loaded);
  v1::SweepSpec alone = ValidSpec();
  alone.clear_variants();
  alone.add_plugins("theirs");
  EXPECT_TRUE(ValidateSpec(alone, limits).ok());
  v1::SweepSpec unknown = alone;
  unknown.add_plugins("nope");
  ExpectInvalid(unknown,
                {"plugins[1] = \"nope\": no kernel plugin of that name is loaded "
                 "(loaded: theirs)"},
                limits);
  ExpectInvalid(unknown, {"(none is: colltestd --kernel-plugin)"});
  v1::SweepSpec twice = alone;
  twice.add_plugins("theirs");
  ExpectInvalid(twice, {"plugins[1] = \"theirs\": listed twice"}, limits);
  v1::SweepSpec as_variant = ValidSpec();
  as_variant.add_variants(v1::VARIANT_PLUGIN);
  ExpectInvalid(as_variant, {"variants[1] = plugin: a kernel plugin is named in plugins"}, limits);
  v1::SweepSpec many = ValidSpec();
  for (int i = 0; i < 17; ++i) many.add_plugins("theirs");
  ExpectInvalid(many, {"plugins: 17 given, at most 16"}, limits);
}

}  // namespace
}  // namespace colltest::server
