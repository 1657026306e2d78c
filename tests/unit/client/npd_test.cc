#include "client/fleet/npd.h"

#include <grpcpp/grpcpp.h>

#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/app.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::client {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

const absl::Time kNow = absl::FromUnixSeconds(1800000000);

v1::HealthResponse Answer(v1::CaseStatus status, const std::string& message) {
  v1::HealthResponse h;
  h.set_status(status);
  h.set_message(message);
  h.set_verdict_unix_ms(absl::ToUnixMillis(kNow - absl::Seconds(45)));
  return h;
}

NpdResult Hang(const absl::StatusOr<v1::HealthResponse>& answer) {
  return NpdVerdict(NpdCondition::kCollectiveHang, answer, kNow);
}
NpdResult Wrong(const absl::StatusOr<v1::HealthResponse>& answer) {
  return NpdVerdict(NpdCondition::kCollectiveWrong, answer, kNow);
}

TEST(NpdTest, ParsesTheTwoConditions) {
  EXPECT_EQ(*ParseNpdCondition("CollectiveHang"), NpdCondition::kCollectiveHang);
  EXPECT_EQ(*ParseNpdCondition("CollectiveWrong"), NpdCondition::kCollectiveWrong);
  EXPECT_THAT(ParseNpdCondition("collectivehang").status().message(),
              HasSubstr("--npd: unknown condition 'collectivehang'"));
}

TEST(NpdTest, HealthyIsFalseForBoth) {
  const v1::HealthResponse ok = Answer(v1::CASE_STATUS_OK, "healthy: 8 ranks");
  EXPECT_EQ(Hang(ok).exit_code, kNpdFalse);
  EXPECT_EQ(Hang(ok).line, "no collective hang: OK: healthy: 8 ranks");
  EXPECT_EQ(Wrong(ok).exit_code, kNpdFalse);
  EXPECT_EQ(Wrong(ok).line, "no wrong collective result: OK: healthy: 8 ranks");
}

TEST(NpdTest, EachConditionIsTrueForItsVerdictOnly) {
  v1::HealthResponse hang = Answer(v1::CASE_STATUS_HANG, "HANG: rank 1 never arrived");
  v1::HealthTarget* rank = hang.add_ranks();
  rank->add_devices(0);
  rank->set_status(v1::CASE_STATUS_HANG);
  rank->set_suspect_peer(1);
  v1::Device* device = hang.mutable_machine()->add_devices();
  device->set_index(1);
  device->set_uuid("GPU-8d1f");
  EXPECT_EQ(Hang(hang).exit_code, kNpdTrue);
  EXPECT_EQ(Hang(hang).line, "HANG on device 1 (GPU-8d1f): rank 1 never arrived");
  EXPECT_EQ(Wrong(hang).exit_code, kNpdFalse);

  const v1::HealthResponse wrong = Answer(v1::CASE_STATUS_WRONG, "WRONG: 3 mismatches");
  EXPECT_EQ(Wrong(wrong).exit_code, kNpdTrue);
  EXPECT_EQ(Wrong(wrong).line, "WRONG: 3 mismatches");
  EXPECT_EQ(Hang(wrong).exit_code, kNpdFalse);
}

TEST(NpdTest, ErrorsAndMissingAnswersAreUnknown) {
  const NpdResult down = Hang(absl::UnavailableError("failed to connect"));
  EXPECT_EQ(down.exit_code, kNpdUnknown);
  EXPECT_EQ(down.line, "unknown: no answer: UNAVAILABLE: failed to connect");
  EXPECT_EQ(Wrong(absl::UnauthenticatedError("no token")).exit_code, kNpdUnknown);
  const v1::HealthResponse error = Answer(v1::CASE_STATUS_ERROR, "worker died");
  EXPECT_EQ(Hang(error).exit_code, kNpdUnknown);
  EXPECT_THAT(Hang(error).line, StartsWith("unknown: the check did not finish: ERROR"));
  EXPECT_EQ(Wrong(v1::HealthResponse{}).exit_code, kNpdUnknown);
  // An ERROR after a rank hung still saw the hang.
  v1::HealthResponse hung_then_error = error;
  hung_then_error.add_cases()->set_status(v1::CASE_STATUS_HANG);
  EXPECT_EQ(Hang(hung_then_error).exit_code, kNpdTrue);
  EXPECT_EQ(Wrong(hung_then_error).exit_code, kNpdUnknown);
}

TEST(NpdTest, BusyUsesTheEarlierVerdictWithItsAge) {
  v1::HealthResponse busy;
  busy.set_busy(true);
  busy.set_busy_reason("a training job uses every device");
  EXPECT_EQ(Hang(busy).exit_code, kNpdUnknown);
  EXPECT_EQ(Hang(busy).line,
            "unknown: busy and no earlier verdict: a training job uses every device");

  v1::HealthResponse earlier = Answer(v1::CASE_STATUS_HANG, "HANG: rank 3 never arrived");
  earlier.set_busy(true);
  earlier.set_busy_reason("a training job uses every device");
  EXPECT_EQ(Hang(earlier).exit_code, kNpdTrue);
  EXPECT_EQ(Hang(earlier).line,
            "(busy: a training job uses every device; verdict of 45s ago) HANG: rank 3 never "
            "arrived");
  // An earlier ERROR says nothing of either condition.
  v1::HealthResponse earlier_error = Answer(v1::CASE_STATUS_ERROR, "worker died");
  earlier_error.set_busy(true);
  EXPECT_EQ(Wrong(earlier_error).exit_code, kNpdUnknown);
  v1::HealthResponse cached = Answer(v1::CASE_STATUS_OK, "healthy");
  cached.set_cached(true);
  EXPECT_EQ(Wrong(cached).line, "(cached, 45s old) no wrong collective result: OK: healthy");
}

TEST(NpdTest, TheLineIsOnePrintableLine) {
  const NpdResult r = Hang(Answer(v1::CASE_STATUS_HANG, "HANG: first\nsecond\r\n\x1b[31mred"));
  EXPECT_THAT(r.line, Not(HasSubstr("\n")));
  EXPECT_THAT(r.line, Not(HasSubstr("\x1b")));
  EXPECT_EQ(r.line, "HANG: first second  \\x1b[31mred");
}

// A colltestd that only answers Health, with what the test set.
class HealthOnly final : public v1::CollectiveTest::Service {
 public:
  grpc::Status Health(grpc::ServerContext*, const v1::HealthRequest*,
                      v1::HealthResponse* response) override {
    std::lock_guard<std::mutex> lock(mu_);
    *response = answer_;
    return grpc::Status::OK;
  }
  void Set(v1::HealthResponse answer) {
    std::lock_guard<std::mutex> lock(mu_);
    answer_ = std::move(answer);
  }

 private:
  std::mutex mu_;
  v1::HealthResponse answer_;
};

class NpdCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    address_ = absl::StrCat("127.0.0.1:", port);
  }
  void TearDown() override { server_->Shutdown(); }

  int Cli(std::vector<std::string> args) {
    args.insert(args.begin(), {"colltest", "--server", address_, "health"});
    std::ostringstream out, err;
    const int code = RunCli(args, out, err);
    out_ = out.str();
    err_ = err.str();
    return code;
  }

  HealthOnly service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  std::string out_;
  std::string err_;
};

TEST_F(NpdCliTest, PrintsOneLineAndTheConditionsExitCode) {
  service_.Set(Answer(v1::CASE_STATUS_WRONG, "WRONG: pair 0-1\nsecond line"));
  EXPECT_EQ(Cli({"--npd", "CollectiveWrong"}), kNpdTrue) << err_;
  EXPECT_EQ(out_, "WRONG: pair 0-1 second line\n");
  EXPECT_EQ(Cli({"--npd", "CollectiveHang"}), kNpdFalse) << err_;
  EXPECT_EQ(out_, "no collective hang: WRONG: pair 0-1 second line\n");
}

TEST_F(NpdCliTest, AnUnreachableServerIsUnknownOnOneLine) {
  server_->Shutdown();
  EXPECT_EQ(Cli({"--npd", "CollectiveHang"}), kNpdUnknown);
  EXPECT_THAT(out_, StartsWith("unknown: no answer: UNAVAILABLE"));
  EXPECT_EQ(std::count(out_.begin(), out_.end(), '\n'), 1) << out_;
}

TEST_F(NpdCliTest, RefusesFlagsThatBreakThePluginProtocol) {
  EXPECT_EQ(Cli({"--npd", "CollectiveHang", "--targets", "127.0.0.1:1"}), 3);
  EXPECT_THAT(err_, HasSubstr("--npd with --targets"));
  EXPECT_EQ(Cli({"--npd", "CollectiveHang", "--targets-file", "/dev/null"}), 3);
  EXPECT_THAT(err_, HasSubstr("--npd with --targets-file"));
  EXPECT_EQ(Cli({"--npd", "CollectiveHang", "--format", "json"}), 3);
  EXPECT_THAT(err_, HasSubstr("--npd with --format json"));
  EXPECT_EQ(Cli({"--npd", "CollectiveHang", "--out", "/tmp/x"}), 3);
  EXPECT_THAT(err_, HasSubstr("--npd with --out"));
  EXPECT_EQ(Cli({"--npd", "Hang"}), 3);
  EXPECT_THAT(err_, HasSubstr("--npd: unknown condition 'Hang'"));
  EXPECT_EQ(Cli({"--npd", "CollectiveHang", "--parallel", "4"}), 3);
  EXPECT_THAT(err_, HasSubstr("--parallel: only for a fleet check"));
  EXPECT_EQ(out_, "");
}

}  // namespace
}  // namespace colltest::client
