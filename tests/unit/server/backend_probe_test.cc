#include "server/backend_probe.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::server {
namespace {

using ::testing::HasSubstr;

constexpr char kTwoGpus[] =
    R"({"backend":"cuda","devices":[{"index":0,"name":"NVIDIA H200","memory_bytes":150000000000},)"
    R"({"index":1,"name":"NVIDIA H200","memory_bytes":150000000000}]})";

ProbeFn Answer(absl::StatusOr<std::string> output) {
  return [output](const std::string&, const std::string&) { return output; };
}

TEST(BackendProbeTest, CpuBackendHasNamedRanks) {
  BackendInfo info = CpuBackend(3);
  EXPECT_EQ(info.backend, "cpu");
  ASSERT_EQ(info.devices.size(), 3u);
  EXPECT_EQ(info.devices[2].name(), "cpu rank 2");
  EXPECT_EQ(info.devices[2].index(), 2u);
}

TEST(BackendProbeTest, ParsesTheProbeLine) {
  auto info = ParseProbeOutput(absl::StrCat("some log line\n", kTwoGpus, "\n"));
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->backend, "cuda");
  ASSERT_EQ(info->devices.size(), 2u);
  EXPECT_EQ(info->devices[1].index(), 1u);
  EXPECT_EQ(info->devices[1].name(), "NVIDIA H200");
  EXPECT_EQ(info->devices[1].memory_bytes(), 150000000000u);
  EXPECT_EQ(info->devices[1].backend(), "cuda");
  EXPECT_FALSE(ParseProbeOutput("no json here").ok());
  EXPECT_FALSE(ParseProbeOutput(R"({"backend":"opencl"})").ok());
}

TEST(BackendProbeTest, AutoUsesGpusWhenFound) {
  auto info = ResolveBackend("auto", 4, {}, "w", Answer(std::string(kTwoGpus)));
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->backend, "cuda");
  EXPECT_EQ(info->devices.size(), 2u);
}

TEST(BackendProbeTest, AutoFallsBackToCpu) {
  for (const auto& answer :
       {Answer(absl::NotFoundError("no worker")), Answer(std::string(R"({"backend":"cpu"})")),
        Answer(std::string(R"({"backend":"cuda","devices":[]})"))}) {
    auto info = ResolveBackend("auto", 4, {}, "w", answer);
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->backend, "cpu");
    EXPECT_EQ(info->devices.size(), 4u);
    EXPECT_THAT(info->note, HasSubstr("cpu"));
  }
}

TEST(BackendProbeTest, ExplicitGpuBackendMustExist) {
  auto info = ResolveBackend("hip", 4, {}, "w", Answer(std::string(kTwoGpus)));
  ASSERT_FALSE(info.ok());
  EXPECT_THAT(std::string(info.status().message()), HasSubstr("no hip device"));
  EXPECT_FALSE(ResolveBackend("cuda", 4, {}, "w", Answer(absl::NotFoundError("x"))).ok());
  EXPECT_TRUE(ResolveBackend("cuda", 4, {}, "w", Answer(std::string(kTwoGpus))).ok());
}

TEST(BackendProbeTest, CpuNeedsNoProbe) {
  auto info = ResolveBackend("cpu", 6, {}, "w", [](const std::string&, const std::string&) {
    ADD_FAILURE() << "probed";
    return absl::StatusOr<std::string>("");
  });
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->devices.size(), 6u);
}

TEST(BackendProbeTest, DevicesFlagRestricts) {
  auto info = ResolveBackend("cpu", 4, {3, 1}, "w", nullptr);
  ASSERT_TRUE(info.ok());
  ASSERT_EQ(info->devices.size(), 2u);
  EXPECT_EQ(info->devices[0].index(), 1u);
  EXPECT_EQ(info->devices[1].index(), 3u);
  info = ResolveBackend("cpu", 4, {7}, "w", nullptr);
  ASSERT_FALSE(info.ok());
  EXPECT_THAT(std::string(info.status().message()), HasSubstr("--devices 7: no such cpu device"));
}

class RunProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/colltest-probe-XXXXXX";
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

TEST_F(RunProbeTest, ReadsTheWorkersAnswer) {
  const std::string worker =
      Script(R"(test "$1 $2 $3" = "--probe --backend auto" || exit 3; echo '{"backend":"cpu"}')");
  auto out = RunProbe(worker, "auto", absl::Seconds(10));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(*out, HasSubstr(R"({"backend":"cpu"})"));
}

TEST_F(RunProbeTest, Failures) {
  EXPECT_FALSE(RunProbe(dir_ + "/missing", "auto", absl::Seconds(10)).ok());
  auto out = RunProbe(Script("exit 4"), "auto", absl::Seconds(10));
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("exit status 4"));
  out = RunProbe(Script("exec sleep 30"), "auto", absl::Milliseconds(200));
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kDeadlineExceeded);
}

}  // namespace
}  // namespace colltest::server
