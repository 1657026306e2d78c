#include "client/exit_code.h"

#include <initializer_list>

#include "gtest/gtest.h"
#include "tests/unit/client/sample_run.h"

namespace colltest::client {
namespace {

v1::RunResult RunWith(std::initializer_list<v1::CaseStatus> statuses,
                      v1::RunState state = v1::RUN_STATE_DONE) {
  v1::RunResult run;
  run.set_state(state);
  for (v1::CaseStatus status : statuses) {
    *run.add_cases() = testing::MakeCase(v1::VARIANT_LAMPORT, status);
  }
  return run;
}

TEST(ExitCodeForRunTest, DocumentedValues) {
  EXPECT_EQ(kExitOk, 0);
  EXPECT_EQ(kExitWrong, 1);
  EXPECT_EQ(kExitHang, 2);
  EXPECT_EQ(kExitError, 3);
}

TEST(ExitCodeForRunTest, OkAndUnsupportedAreSuccess) {
  EXPECT_EQ(ExitCodeForRun(RunWith({})), kExitOk);
  EXPECT_EQ(ExitCodeForRun(RunWith({v1::CASE_STATUS_OK})), kExitOk);
  EXPECT_EQ(ExitCodeForRun(RunWith({v1::CASE_STATUS_OK, v1::CASE_STATUS_UNSUPPORTED})), kExitOk);
  EXPECT_EQ(ExitCodeForRun(RunWith({v1::CASE_STATUS_UNSUPPORTED})), kExitOk);
}

TEST(ExitCodeForRunTest, WrongIsOne) {
  EXPECT_EQ(ExitCodeForRun(RunWith({v1::CASE_STATUS_OK, v1::CASE_STATUS_WRONG})), kExitWrong);
}

TEST(ExitCodeForRunTest, HangWinsOverWrongInAnyOrder) {
  EXPECT_EQ(ExitCodeForRun(RunWith({v1::CASE_STATUS_WRONG, v1::CASE_STATUS_HANG})), kExitHang);
  EXPECT_EQ(ExitCodeForRun(RunWith({v1::CASE_STATUS_HANG, v1::CASE_STATUS_WRONG})), kExitHang);
}

TEST(ExitCodeForRunTest, ErrorCaseIsThreeEvenWithHangs) {
  EXPECT_EQ(ExitCodeForRun(RunWith({v1::CASE_STATUS_ERROR})), kExitError);
  EXPECT_EQ(
      ExitCodeForRun(RunWith({v1::CASE_STATUS_HANG, v1::CASE_STATUS_ERROR, v1::CASE_STATUS_WRONG})),
      kExitError);
}

TEST(ExitCodeForRunTest, UnsetCaseStatusIsAnErrorNotASuccess) {
  EXPECT_EQ(ExitCodeForRun(RunWith({v1::CASE_STATUS_UNSPECIFIED})), kExitError);
}

TEST(ExitCodeForRunTest, CancelledOrFailedRunIsThree) {
  EXPECT_EQ(ExitCodeForRun(RunWith({v1::CASE_STATUS_OK}, v1::RUN_STATE_CANCELLED)), kExitError);
  EXPECT_EQ(ExitCodeForRun(RunWith({}, v1::RUN_STATE_FAILED)), kExitError);
}

TEST(ExitCodeForRunTest, SampleRunIsAHang) {
  EXPECT_EQ(ExitCodeForRun(testing::SampleRun()), kExitHang);
}

}  // namespace
}  // namespace colltest::client
