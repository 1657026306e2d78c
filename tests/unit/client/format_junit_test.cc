#include <string>

#include "absl/status/status.h"
#include "client/format/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/client/sample_health.h"
#include "tests/unit/client/sample_run.h"

namespace colltest::client {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

int Count(const std::string& text, const std::string& needle) {
  int count = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos;
       pos = text.find(needle, pos + needle.size())) {
    ++count;
  }
  return count;
}

TEST(FormatRunJunitTest, OneTestcasePerCaseWithSuiteCounts) {
  const std::string xml = FormatRunJunit(testing::SampleRun());
  EXPECT_THAT(xml, StartsWith("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite "));
  EXPECT_THAT(xml, HasSubstr("tests=\"4\" failures=\"2\" errors=\"0\" skipped=\"1\""));
  EXPECT_EQ(Count(xml, "<testcase "), 4);
  EXPECT_EQ(Count(xml, "<testsuite "), 1);
  EXPECT_EQ(Count(xml, "</testsuite>"), 1);
  EXPECT_THAT(xml, HasSubstr("<property name=\"run_id\" value=\"r-42\"/>"));
}

TEST(FormatRunJunitTest, PropertiesNameTheMachineAndEveryDevice) {
  const std::string xml = FormatRunJunit(testing::SampleRun());
  EXPECT_THAT(xml, HasSubstr("<property name=\"label\" value=\"nightly\"/>\n"
                             "    <property name=\"ranks_per_gpu\" value=\"1\"/>\n"
                             "    <property name=\"shared_gpu\" value=\"false\"/>\n"
                             "    <property name=\"time_sliced\" value=\"false\"/>\n"
                             "    <property name=\"hostname\" value=\"node-7\"/>\n"
                             "    <property name=\"machine_key\" value=\"70f239823b92f8b4\"/>\n"
                             "    <property name=\"driver\" value=\"580.159.04 (CUDA 13.0)\"/>\n"
                             "    <property name=\"device.0.name\" value=\"NVIDIA H200\"/>\n"
                             "    <property name=\"device.0.uuid\" "
                             "value=\"GPU-8d1f0000-0000-0000-0000-000000000000\"/>\n"
                             "    <property name=\"device.0.pci_bus_id\" value=\"0000:19:00.0\"/>\n"
                             "    <property name=\"device.0.serial\" value=\"1654922012345\"/>\n"
                             "    <property name=\"device.1.name\" value=\"NVIDIA H200\"/>\n"
                             "    <property name=\"device.1.uuid\" "
                             "value=\"GPU-8d1f1111-1111-1111-1111-111111111111\"/>\n"
                             "    <property name=\"device.1.pci_bus_id\" value=\"0000:3b:00.0\"/>\n"
                             "  </properties>"));
  v1::RunResult bare = testing::SampleRun();
  bare.clear_machine();
  EXPECT_THAT(FormatRunJunit(bare), Not(HasSubstr("device.")));
}

// A CI reader of a suite whose ranks shared a GPU learns that its timings are no link's.
TEST(FormatRunJunitTest, SharedGpuRunSaysSoInItsProperties) {
  v1::RunResult run = testing::SampleRun();
  run.set_ranks_per_gpu(4);
  const std::string xml = FormatRunJunit(run);
  EXPECT_THAT(xml,
              HasSubstr("<property name=\"ranks_per_gpu\" value=\"4\"/>\n"
                        "    <property name=\"shared_gpu\" value=\"true\"/>\n"
                        "    <property name=\"time_sliced\" value=\"false\"/>\n"
                        "    <property name=\"timing_note\" value=\"ranks share a GPU (4 per "
                        "GPU): times are kernel overhead, not a link measurement; busbw is not "
                        "a link figure\"/>"));
  EXPECT_THAT(FormatRunJunit(testing::SampleRun()), Not(HasSubstr("timing_note")));
}

TEST(FormatRunJunitTest, OkCaseIsAnEmptyTestcase) {
  const std::string xml = FormatRunJunit(testing::SampleRun());
  EXPECT_THAT(xml, HasSubstr("<testcase classname=\"colltest.lamport\" "
                             "name=\"eager w=2 m=64 n=7168 bf16\" time=\"0.250\"/>"));
}

TEST(FormatRunJunitTest, WrongAndHangAreFailuresWithEscapedMessages) {
  const std::string xml = FormatRunJunit(testing::SampleRun());
  EXPECT_THAT(xml, HasSubstr("<testcase classname=\"colltest.auto(lamport_tb)\" "
                             "name=\"graph w=2 m=8 n=7168 fp16\""));
  EXPECT_THAT(xml, HasSubstr("<failure type=\"WRONG\" message=\"3 mismatches, &quot;out&quot; "
                             "&lt;rank 1&gt; &amp; more\">"));
  EXPECT_THAT(xml, HasSubstr("first bad: out[3,17] got 1.5 want 1.25 (call 4)"));
  EXPECT_THAT(xml, HasSubstr("<failure type=\"HANG\" message=\"rank 1 waited for rank 0 in "
                             "start_sync\">"));
  EXPECT_THAT(xml, HasSubstr("rank 1 (device 1): HANG waited for rank 0 in start_sync"));
  EXPECT_EQ(Count(xml, "<failure "), 2);
  EXPECT_EQ(Count(xml, "</failure>"), 2);
  // The raw message must not leak unescaped into the document.
  EXPECT_THAT(xml, Not(HasSubstr("<rank 1>")));
}

TEST(FormatRunJunitTest, UnsupportedIsSkipped) {
  const std::string xml = FormatRunJunit(testing::SampleRun());
  EXPECT_THAT(xml, HasSubstr("<testcase classname=\"colltest.nccl\" name=\"eager w=2 m=1 n=7168 "
                             "bf16\" time=\"0.000\">\n    <skipped message=\"nccl: not built into "
                             "the cpu backend\"/>\n  </testcase>"));
  EXPECT_EQ(Count(xml, "<skipped "), 1);
}

TEST(FormatRunJunitTest, ErrorCaseIsAnError) {
  v1::RunResult run;
  v1::CaseResult c = testing::MakeCase(v1::VARIANT_TWO_KERNEL, v1::CASE_STATUS_ERROR);
  c.set_message("worker 2 crashed");
  *run.add_cases() = c;
  const std::string xml = FormatRunJunit(run);
  EXPECT_THAT(xml, HasSubstr("<error type=\"ERROR\" message=\"worker 2 crashed\">"));
  EXPECT_THAT(xml, HasSubstr("tests=\"1\" failures=\"0\" errors=\"1\""));
}

TEST(FormatRunJunitTest, FailedRunWithoutCasesIsNotAGreenEmptySuite) {
  v1::RunResult run;
  run.set_state(v1::RUN_STATE_FAILED);
  run.set_message("workers failed to start");
  const std::string xml = FormatRunJunit(run);
  EXPECT_THAT(xml, HasSubstr("tests=\"1\" failures=\"0\" errors=\"1\""));
  EXPECT_THAT(xml, HasSubstr("<error type=\"FAILED\" message=\"workers failed to start\">"));
}

TEST(FormatRunJunitTest, DropsControlCharactersXmlCannotHold) {
  v1::RunResult run;
  v1::CaseResult c = testing::MakeCase(v1::VARIANT_LAMPORT, v1::CASE_STATUS_WRONG);
  c.set_message(
      std::string("bad\x01"
                  "byte"));
  *run.add_cases() = c;
  const std::string xml = FormatRunJunit(run);
  EXPECT_THAT(xml, HasSubstr("message=\"badbyte\""));
  EXPECT_EQ(xml.find('\x01'), std::string::npos);
}

TEST(FormatHealthJunitTest, OneTestcasePerRankAndPairSlowOneStillPasses) {
  const std::string xml = FormatHealthJunit(testing::SampleHealthOk());
  EXPECT_THAT(xml, StartsWith("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite "
                              "name=\"colltest.health\" tests=\"6\" failures=\"0\" errors=\"0\" "
                              "skipped=\"0\" time=\"4.321\" timestamp=\""));
  EXPECT_EQ(Count(xml, "<testcase "), 6);
  EXPECT_EQ(Count(xml, "<failure "), 0);
  EXPECT_THAT(xml, HasSubstr("<testcase classname=\"colltest.health.rank\" name=\"device 0\"/>"));
  EXPECT_THAT(xml,
              HasSubstr("<testcase classname=\"colltest.health.pair\" name=\"devices 0-1\"/>"));
  EXPECT_THAT(xml, HasSubstr("<testcase classname=\"colltest.health.pair\" name=\"devices 0-2\">\n"
                             "    <system-out>WARN: 16.8 us, 2.10 x the median</system-out>\n"
                             "  </testcase>"));
  EXPECT_THAT(xml, HasSubstr("<property name=\"run_ids\" value=\"r-7,r-8\"/>"));
  EXPECT_THAT(xml, HasSubstr("<property name=\"status\" value=\"OK\"/>"));
}

TEST(FormatHealthJunitTest, HangIsAFailureNamingTheSuspectAndPhase) {
  const std::string xml = FormatHealthJunit(testing::SampleHealthHang());
  EXPECT_THAT(xml, HasSubstr("tests=\"2\" failures=\"1\" errors=\"0\" skipped=\"0\""));
  EXPECT_THAT(xml, HasSubstr("<testcase classname=\"colltest.health.rank\" name=\"device 1\">\n"
                             "    <failure type=\"HANG\" message=\"timed out after 5000 ms\">"
                             "timed out after 5000 ms\ndevice 1: HANG waited for device 0 in "
                             "lamport phase B</failure>\n"));
  EXPECT_EQ(Count(xml, "<failure "), 1);
}

// The index is only the server's numbering; the testcase names the boards themselves.
TEST(FormatHealthJunitTest, EachTestcaseNamesItsDevicesUuids) {
  const std::string xml = FormatHealthJunit(testing::SampleHealthHang());
  EXPECT_THAT(xml, HasSubstr("<testcase classname=\"colltest.health.rank\" name=\"device 0\">\n"
                             "    <system-out>device 0: uuid GPU-8d1f0000-0000-0000-0000-"
                             "000000000000, pci bus id 0000:19:00.0, serial 1654922012345"
                             "</system-out>\n  </testcase>"));
  // After the failure, and without a serial the driver did not give.
  EXPECT_THAT(xml, HasSubstr("lamport phase B</failure>\n    <system-out>device 1: uuid "
                             "GPU-8d1f1111-1111-1111-1111-111111111111, pci bus id 0000:3b:00.0"
                             "</system-out>\n  </testcase>"));
  const std::string pair = FormatHealthJunit(testing::SampleHealthLong());
  EXPECT_THAT(pair, HasSubstr("name=\"devices 0-1\">\n    <system-out>device 0: uuid "
                              "GPU-8d1f0000-0000-0000-0000-000000000000, pci bus id 0000:19:00.0, "
                              "serial 1654922012345\ndevice 1: uuid "
                              "GPU-8d1f1111-1111-1111-1111-111111111111"));
}

TEST(FormatHealthJunitTest, PropertiesNameTheMachineAndEveryDevice) {
  const std::string xml = FormatHealthJunit(testing::SampleHealthHang());
  for (const char* property :
       {"<property name=\"hostname\" value=\"node-7\"/>",
        "<property name=\"machine_key\" value=\"70f239823b92f8b4\"/>",
        "<property name=\"driver\" value=\"580.159.04 (CUDA 13.0)\"/>",
        "<property name=\"device.0.uuid\" value=\"GPU-8d1f0000-0000-0000-0000-000000000000\"/>",
        "<property name=\"device.0.pci_bus_id\" value=\"0000:19:00.0\"/>",
        "<property name=\"device.0.serial\" value=\"1654922012345\"/>",
        "<property name=\"device.1.uuid\" value=\"GPU-8d1f1111-1111-1111-1111-111111111111\"/>",
        "<property name=\"device.1.pci_bus_id\" value=\"0000:3b:00.0\"/>",
        "<property name=\"level\" value=\"quick\"/>",
        "<property name=\"busy\" value=\"false\"/>"}) {
    EXPECT_THAT(xml, HasSubstr(property));
  }
  // Only where the driver gave one.
  EXPECT_THAT(xml, Not(HasSubstr("device.1.serial")));
  // An older server sends no machine: no empty identity properties.
  EXPECT_THAT(FormatHealthJunit(testing::SampleHealthOk()), Not(HasSubstr("property name=\"host")));
}

TEST(FormatHealthJunitTest, LongLevelSelfTestAndBandwidthWarn) {
  const std::string xml = FormatHealthJunit(testing::SampleHealthLong());
  EXPECT_THAT(xml, HasSubstr("tests=\"4\" failures=\"0\" errors=\"0\" skipped=\"0\""));
  EXPECT_THAT(xml, HasSubstr("<property name=\"level\" value=\"long\"/>"));
  EXPECT_THAT(xml, HasSubstr("<testcase classname=\"colltest.health\" name=\"self test "
                             "hang_end_sync:1\">\n    <system-out>HANG found naming rank 1"
                             "</system-out>\n  </testcase>"));
  EXPECT_THAT(xml, HasSubstr("\nWARN: bus bandwidth 180.0 GB/s, expected 350.0 GB/s</system-out>"));
}

TEST(FormatHealthJunitTest, SelfTestFailedIsAFailureNotRunIsSkipped) {
  v1::HealthResponse failed = testing::SampleHealthLong();
  failed.mutable_self_test()->set_passed(false);
  failed.mutable_self_test()->set_message("no HANG: the planted fault went unnoticed");
  const std::string xml = FormatHealthJunit(failed);
  EXPECT_THAT(xml, HasSubstr("tests=\"4\" failures=\"1\""));
  EXPECT_THAT(xml, HasSubstr("name=\"self test hang_end_sync:1\">\n    <failure type=\"SELF_TEST\" "
                             "message=\"no HANG: the planted fault went unnoticed\">"));

  v1::HealthResponse not_run = testing::SampleHealthLong();
  not_run.clear_self_test();
  not_run.mutable_self_test()->set_message("fault injection is not allowed on this server");
  const std::string skipped = FormatHealthJunit(not_run);
  EXPECT_THAT(skipped, HasSubstr("tests=\"4\" failures=\"0\" errors=\"0\" skipped=\"1\""));
  EXPECT_THAT(skipped, HasSubstr("name=\"self test\">\n    <skipped message=\"fault injection is "
                                 "not allowed on this server\"/>"));

  // A level without a self test has no testcase for it.
  EXPECT_THAT(FormatHealthJunit(testing::SampleHealthOk()), Not(HasSubstr("self test")));
}

TEST(FormatHealthJunitTest, BusyIsAnErrorTestcaseWhateverTheEarlierVerdict) {
  const std::string xml = FormatHealthJunit(testing::SampleHealthBusy());
  EXPECT_THAT(xml, HasSubstr("tests=\"3\" failures=\"1\" errors=\"1\""));
  EXPECT_THAT(xml, HasSubstr("<testcase classname=\"colltest.health\" name=\"busy\">\n"
                             "    <error type=\"BUSY\" message=\"devices 0,1 in use by pid 4242 "
                             "(python3)\">devices 0,1 in use by pid 4242 (python3)</error>\n"
                             "  </testcase>"));
  EXPECT_THAT(xml, HasSubstr("<property name=\"busy\" value=\"true\"/>"));
  EXPECT_THAT(xml, HasSubstr("<property name=\"busy_reason\" value=\"devices 0,1 in use"));
  EXPECT_THAT(xml, HasSubstr("<property name=\"verdict_unix_ms\" value=\"1700000000000\"/>"));

  // Nothing to fall back on: the busy testcase alone, not an UNSPECIFIED verdict failure.
  v1::HealthResponse none;
  none.set_busy(true);
  none.set_busy_reason("3 runs of other clients ahead");
  const std::string alone = FormatHealthJunit(none);
  EXPECT_THAT(alone, HasSubstr("tests=\"1\" failures=\"0\" errors=\"1\""));
  EXPECT_THAT(alone, Not(HasSubstr("name=\"verdict\"")));
}

TEST(FormatHealthJunitTest, WrongPairIsAFailureWithEscapedMessage) {
  v1::HealthResponse health = testing::SampleHealthOk();
  health.set_status(v1::CASE_STATUS_WRONG);
  v1::HealthTarget* pair = health.mutable_pairs(2);
  pair->set_status(v1::CASE_STATUS_WRONG);
  pair->set_message("3 mismatches <out> & \"more\"");
  const std::string xml = FormatHealthJunit(health);
  EXPECT_THAT(xml, HasSubstr("tests=\"6\" failures=\"1\""));
  EXPECT_THAT(xml, HasSubstr("name=\"devices 1-2\">\n    <failure type=\"WRONG\" message=\"3 "
                             "mismatches &lt;out&gt; &amp; &quot;more&quot;\">"));
  EXPECT_THAT(xml, Not(HasSubstr("<out>")));
}

TEST(FormatHealthJunitTest, ErrorWithoutTargetsIsNotAGreenEmptySuite) {
  const std::string xml = FormatHealthJunit(testing::SampleHealthError());
  EXPECT_THAT(xml, HasSubstr("tests=\"1\" failures=\"0\" errors=\"1\""));
  EXPECT_THAT(xml, HasSubstr("<testcase classname=\"colltest.health\" name=\"verdict\">\n"
                             "    <error type=\"ERROR\" message=\"ERROR: workers for devices 0,1 "
                             "failed to start (lamport eager m=1)\">"));
}

TEST(FormatRunJunitTest, HangOfADeadWorkerIsAnErrorOtherHangsAreFailures) {
  v1::RunResult run;
  v1::CaseResult hang = testing::MakeCase(v1::VARIANT_LAMPORT, v1::CASE_STATUS_HANG);
  hang.set_message("rank 1 waited for rank 0 in lamport phase B");
  *run.add_cases() = hang;
  v1::CaseResult died = hang;
  v1::RankResult* rank = died.add_ranks();
  rank->set_status(v1::CASE_STATUS_HANG);
  rank->set_message("rank 0 (pid 77) died: killed by signal 9");
  *run.add_cases() = died;
  const std::string xml = FormatRunJunit(run);
  EXPECT_THAT(xml, HasSubstr("tests=\"2\" failures=\"1\" errors=\"1\""));
  EXPECT_EQ(Count(xml, "<failure type=\"HANG\""), 1);
  EXPECT_EQ(Count(xml, "<error type=\"HANG\""), 1);
}

TEST(FormatRunJunitTest, FirstBadNamesItsCallOnce) {
  v1::RunResult run;
  v1::CaseResult c = testing::MakeCase(v1::VARIANT_LAMPORT, v1::CASE_STATUS_WRONG);
  c.mutable_diff()->set_first_bad("out[3,17] got 1.5 want 1.25 (call 1)");
  c.mutable_diff()->set_first_bad_call(1);
  *run.add_cases() = c;
  const std::string xml = FormatRunJunit(run);
  EXPECT_THAT(xml, HasSubstr("first bad: out[3,17] got 1.5 want 1.25 (call 1)"));
  EXPECT_THAT(xml, Not(HasSubstr("(call 1) (call 1)")));
}

TEST(FormatRunJunitTest, SuiteHasTheRunsTimestampAndHost) {
  v1::RunResult run = testing::SampleRun();
  run.set_created_unix_ms(1'700'000'000'000);
  const std::string xml = FormatRunJunit(run);
  EXPECT_THAT(xml, HasSubstr("timestamp=\"2023-11-14T22:13:20\" hostname=\"node-7\">"));
  run.clear_machine();
  EXPECT_THAT(FormatRunJunit(run), Not(HasSubstr("hostname=\"\"")));
}

TEST(FormatFailureJunitTest, OneErrorTestcaseNamingCommandServerAndStatus) {
  const std::string xml =
      FormatFailureJunit(absl::UnavailableError("connection refused"), "health", "node-3:50051");
  EXPECT_THAT(xml, StartsWith("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite "
                              "name=\"health\" tests=\"1\" failures=\"0\" errors=\"1\" "));
  EXPECT_THAT(xml, HasSubstr("<testcase classname=\"colltest.health\" name=\"health on "
                             "node-3:50051\" time=\"0\">\n    <error type=\"UNAVAILABLE\" "
                             "message=\"UNAVAILABLE: connection refused\">"));
  EXPECT_EQ(Count(xml, "<testcase "), 1);
  EXPECT_THAT(xml, HasSubstr(" timestamp=\""));
}

}  // namespace
}  // namespace colltest::client
