#include "server/devices/device_users.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::server {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kTwoUsers[] =
    R"({"backend":"cuda","source":"nvml","users":[{"device":1,"pid":4242,"name":"python3",)"
    R"("memory_bytes":21474836480},{"device":0,"pid":77}]})";

// Answers with what the test set, and records what it was asked.
class FakeProbe final : public DeviceUsersProbe {
 public:
  explicit FakeProbe(absl::StatusOr<DeviceUsers> answer) : answer_(std::move(answer)) {}
  absl::StatusOr<DeviceUsers> Users(absl::Span<const uint32_t> devices) override {
    asked_.assign(devices.begin(), devices.end());
    return answer_;
  }
  const std::vector<uint32_t>& asked() const { return asked_; }

 private:
  absl::StatusOr<DeviceUsers> answer_;
  std::vector<uint32_t> asked_;
};

DeviceUsers Nvml(std::vector<DeviceUser> users) { return DeviceUsers{"nvml", std::move(users)}; }

std::string ParseError(const std::string& line) {
  absl::StatusOr<DeviceUsers> parsed = ParseDeviceUsers(line);
  EXPECT_FALSE(parsed.ok()) << line;
  if (parsed.ok()) return "";
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(parsed.status().message());
}

TEST(DeviceUsersTest, ParsesTheWorkersLine) {
  auto parsed = ParseDeviceUsers(std::string("a runtime's log line\n") + kTwoUsers + "\n");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->source, "nvml");
  ASSERT_EQ(parsed->users.size(), 2u);
  EXPECT_EQ(parsed->users[0].device, 1u);
  EXPECT_EQ(parsed->users[0].pid, 4242);
  EXPECT_EQ(parsed->users[0].name, "python3");
  EXPECT_EQ(parsed->users[0].memory_bytes, 21474836480u);
  // Name and memory are what the worker could learn: absent reads as unknown.
  EXPECT_EQ(parsed->users[1].name, "");
  EXPECT_EQ(parsed->users[1].memory_bytes, 0u);

  parsed = ParseDeviceUsers(R"({"backend":"cpu","source":"none","users":[]})");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->source, "none");
  EXPECT_TRUE(parsed->users.empty());
}

TEST(DeviceUsersTest, ParseErrorsNameTheField) {
  EXPECT_THAT(ParseError("no json"), HasSubstr("no JSON"));
  EXPECT_THAT(ParseError(R"({"users":[]})"), HasSubstr("source"));
  EXPECT_THAT(ParseError(R"({"source":7,"users":[]})"), HasSubstr("source"));
  EXPECT_THAT(ParseError(R"({"source":"nvml"})"), HasSubstr("users"));
  EXPECT_THAT(ParseError(R"({"source":"nvml","users":{}})"), HasSubstr("users"));
  EXPECT_THAT(ParseError(R"({"source":"nvml","users":[3]})"), HasSubstr("users[0]"));
  EXPECT_THAT(ParseError(R"({"source":"nvml","users":[{"pid":1}]})"), HasSubstr("users[0].device"));
  EXPECT_THAT(ParseError(R"({"source":"nvml","users":[{"device":0,"pid":1},{"device":0}]})"),
              HasSubstr("users[1].pid"));
  EXPECT_THAT(ParseError(R"({"source":"nvml","users":[{"device":0,"pid":-4}]})"),
              HasSubstr("users[0].pid"));
  EXPECT_THAT(ParseError(R"({"source":"nvml","users":[{"device":"0","pid":4}]})"),
              HasSubstr("users[0].device"));
  EXPECT_THAT(ParseError(R"({"source":"nvml","users":[{"device":0,"pid":4,"name":5}]})"),
              HasSubstr("users[0].name"));
  EXPECT_THAT(ParseError(R"({"source":"nvml","users":[{"device":0,"pid":4,"memory_bytes":-1}]})"),
              HasSubstr("users[0].memory_bytes"));
}

TEST(DeviceUsersTest, FreeWhenOnlyOwnProcessesUseTheDevices) {
  FakeProbe probe(Nvml({{.device = 0, .pid = 100, .name = "colltest-worker"},
                        {.device = 1, .pid = 101, .name = "colltest-worker"}}));
  const std::vector<uint32_t> devices = {0, 1};
  EXPECT_TRUE(CheckDevicesFree(probe, devices, {100, 101, 99}).ok());
  EXPECT_THAT(probe.asked(), ElementsAre(0u, 1u));
}

TEST(DeviceUsersTest, BusyNamesDevicePidNameAndMemory) {
  FakeProbe probe(Nvml({{.device = 1, .pid = 4242, .name = "python3", .memory_bytes = 21474836480},
                        {.device = 0, .pid = 100, .name = "colltest-worker"},
                        {.device = 0, .pid = 77},
                        {.device = 2, .pid = 55, .name = "elsewhere"}}));
  const std::vector<uint32_t> devices = {0, 1};
  const absl::Status s = CheckDevicesFree(probe, devices, {100});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  // Device 2 is not asked about; pid 100 is the server's own.
  EXPECT_EQ(s.message(),
            "BUSY: device 0 is used by pid 77, device 1 is used by pid 4242 (python3, 20.0 GiB); "
            "--force runs anyway");
  EXPECT_TRUE(IsBusy(s));
}

TEST(DeviceUsersTest, AProcessListedTwiceIsNamedOnce) {
  FakeProbe probe(Nvml({{.device = 0, .pid = 9, .name = "viz", .memory_bytes = 1 << 30},
                        {.device = 0, .pid = 9, .name = "viz", .memory_bytes = 1 << 30}}));
  const std::vector<uint32_t> devices = {0};
  EXPECT_EQ(CheckDevicesFree(probe, devices, {}).message(),
            "BUSY: device 0 is used by pid 9 (viz, 1.0 GiB); --force runs anyway");
}

TEST(DeviceUsersTest, NoSourceOrNoProbeRefusesNothing) {
  const std::vector<uint32_t> devices = {0};
  FakeProbe none(DeviceUsers{"none", {{.device = 0, .pid = 5}}});
  EXPECT_TRUE(CheckDevicesFree(none, devices, {}).ok());
  FakeProbe failed(absl::UnavailableError("worker exited with status 1"));
  EXPECT_TRUE(CheckDevicesFree(failed, devices, {}).ok());
}

TEST(DeviceUsersTest, IsBusyOnlyForTheRefusal) {
  EXPECT_FALSE(IsBusy(absl::OkStatus()));
  EXPECT_FALSE(IsBusy(absl::FailedPreconditionError("--backend cuda: no cuda device found")));
  EXPECT_FALSE(IsBusy(absl::UnavailableError("BUSY: not this code")));
}

class WorkerUsersProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/colltest-users-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }

  std::string Script(const std::string& body) {
    const std::string path = dir_ + "/worker";
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    chmod(path.c_str(), 0755);
    return path;
  }

  std::string dir_;
};

TEST_F(WorkerUsersProbeTest, RunsTheWorkersUsersMode) {
  const std::string worker =
      Script(std::string(R"(test "$*" = "--users --backend cuda --devices 0,2")"
                         " || exit 3; echo '") +
             kTwoUsers + "'");
  auto probe = CreateWorkerUsersProbe(worker, "cuda");
  const std::vector<uint32_t> devices = {0, 2};
  auto users = probe->Users(devices);
  ASSERT_TRUE(users.ok()) << users.status();
  EXPECT_EQ(users->source, "nvml");
  EXPECT_EQ(users->users.size(), 2u);
}

TEST_F(WorkerUsersProbeTest, AWorkerThatHangsIsKilled) {
  auto probe = CreateWorkerUsersProbe(Script("exec sleep 30"), "hip", absl::Milliseconds(200));
  const std::vector<uint32_t> devices = {0};
  auto users = probe->Users(devices);
  ASSERT_FALSE(users.ok());
  EXPECT_EQ(users.status().code(), absl::StatusCode::kDeadlineExceeded);
  // And the check it feeds refuses nothing.
  EXPECT_TRUE(CheckDevicesFree(*probe, devices, {}).ok());
}

}  // namespace
}  // namespace colltest::server
