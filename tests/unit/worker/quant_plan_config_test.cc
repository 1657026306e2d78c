// QuantPlanOf (worker/case_config.h): a request's quantising epilogue resolved for the worker.
#include <cmath>

#include "gtest/gtest.h"
#include "worker/case_config.h"

namespace colltest::worker {
namespace {

colltest::worker::v1::CaseRequest Request(colltest::v1::Epilogue e) {
  colltest::worker::v1::CaseRequest req;
  req.set_epilogue(e);
  return req;
}

TEST(QuantPlanOf, UnspecifiedAndNoneQuantiseNothing) {
  for (auto e : {colltest::v1::EPILOGUE_UNSPECIFIED, colltest::v1::EPILOGUE_NONE}) {
    auto req = Request(e);
    req.set_keep_normed(false);
    const absl::StatusOr<QuantPlan> plan = QuantPlanOf(req, Fp8Format::kE4m3fn);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_FALSE(plan->scheme.has_value());
    EXPECT_TRUE(plan->writes_out());
  }
}

TEST(QuantPlanOf, DefaultsAreTheDevicesFormatTheDefaultScalesAndStrict) {
  const absl::StatusOr<QuantPlan> plan =
      QuantPlanOf(Request(colltest::v1::EPILOGUE_FP8_TOKEN), Fp8Format::kE4m3fnuz);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->scheme, QuantScheme::kFp8Token);
  EXPECT_EQ(plan->format, Fp8Format::kE4m3fnuz);
  EXPECT_EQ(plan->fp8_scale, 0.03125f);
  EXPECT_EQ(plan->nvfp4_global_scale, 256.0f);
  EXPECT_EQ(plan->tolerance, QuantTolerance::kStrict);
  EXPECT_FALSE(plan->writes_out());
}

TEST(QuantPlanOf, GivenValuesAreKept) {
  auto req = Request(colltest::v1::EPILOGUE_NVFP4);
  req.set_fp8_format(colltest::v1::FP8_FORMAT_E4M3FN);
  req.set_fp8_scale(0.5f);
  req.set_nvfp4_global_scale(3.0f);
  req.set_keep_normed(true);
  req.set_quant_tolerance(colltest::v1::QUANT_TOLERANCE_ULP);
  const absl::StatusOr<QuantPlan> plan = QuantPlanOf(req, Fp8Format::kE4m3fnuz);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->scheme, QuantScheme::kNvfp4);
  EXPECT_EQ(plan->format, Fp8Format::kE4m3fn);
  EXPECT_EQ(plan->fp8_scale, 0.5f);
  EXPECT_EQ(plan->nvfp4_global_scale, 3.0f);
  EXPECT_EQ(plan->tolerance, QuantTolerance::kUlp);
  EXPECT_TRUE(plan->writes_out());
}

TEST(QuantPlanOf, BadScalesAndUnknownValuesAreInvalid) {
  for (float bad : {-1.0f, NAN, INFINITY, 0x1p65f}) {
    auto req = Request(colltest::v1::EPILOGUE_FP8_TENSOR);
    req.set_fp8_scale(bad);
    EXPECT_EQ(QuantPlanOf(req, Fp8Format::kE4m3fn).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
    req.set_fp8_scale(0);
    req.set_nvfp4_global_scale(bad);
    EXPECT_EQ(QuantPlanOf(req, Fp8Format::kE4m3fn).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
  EXPECT_FALSE(
      QuantPlanOf(Request(static_cast<colltest::v1::Epilogue>(99)), Fp8Format::kE4m3fn).ok());
  auto req = Request(colltest::v1::EPILOGUE_FP8_TOKEN);
  req.set_fp8_format(static_cast<colltest::v1::Fp8Format>(9));
  EXPECT_FALSE(QuantPlanOf(req, Fp8Format::kE4m3fn).ok());
  req.set_fp8_format(colltest::v1::FP8_FORMAT_UNSPECIFIED);
  req.set_quant_tolerance(static_cast<colltest::v1::QuantTolerance>(9));
  EXPECT_FALSE(QuantPlanOf(req, Fp8Format::kE4m3fn).ok());
}

}  // namespace
}  // namespace colltest::worker
