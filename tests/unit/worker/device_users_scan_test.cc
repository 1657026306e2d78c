#include "worker/device_users_scan.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "worker/pci_sysfs.h"

namespace colltest::worker {
namespace {

using ::testing::Contains;
using ::testing::Not;

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/colltest-scan-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }

  std::string Write(const std::string& relative, const std::string& text) {
    const std::string path = dir_ + "/" + relative;
    std::system(("mkdir -p $(dirname " + path + ")").c_str());
    std::ofstream(path) << text;
    return path;
  }

  std::string dir_;
};

using OpenFileScanTest = TempDir;

TEST_F(OpenFileScanTest, FindsThisProcessWhileTheFileIsOpen) {
  const std::string path = Write("device", "x");
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  auto pids = PidsWithFileOpen(path);
  ASSERT_TRUE(pids.ok()) << pids.status();
  EXPECT_THAT(*pids, Contains(getpid()));

  // Another name of the same file finds the same holder.
  const std::string alias = dir_ + "/alias";
  ASSERT_EQ(symlink(path.c_str(), alias.c_str()), 0);
  pids = PidsWithFileOpen(alias);
  ASSERT_TRUE(pids.ok()) << pids.status();
  EXPECT_THAT(*pids, Contains(getpid()));

  close(fd);
  pids = PidsWithFileOpen(path);
  ASSERT_TRUE(pids.ok()) << pids.status();
  EXPECT_THAT(*pids, Not(Contains(getpid())));
}

TEST_F(OpenFileScanTest, AnotherFileIsNotAUse) {
  const std::string held = Write("held", "x");
  const std::string other = Write("other", "y");
  const int fd = open(held.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  auto pids = PidsWithFileOpen(other);
  close(fd);
  ASSERT_TRUE(pids.ok()) << pids.status();
  EXPECT_THAT(*pids, Not(Contains(getpid())));
}

TEST_F(OpenFileScanTest, AMissingFileIsNotFound) {
  auto pids = PidsWithFileOpen(dir_ + "/missing");
  ASSERT_FALSE(pids.ok());
  EXPECT_EQ(pids.status().code(), absl::StatusCode::kNotFound);
}

TEST(ProcessNameTest, ReadsCommOrNothing) {
  std::ifstream comm("/proc/self/comm");
  std::string expected;
  std::getline(comm, expected);
  EXPECT_FALSE(expected.empty());
  EXPECT_EQ(ProcessName(getpid()), expected);
  EXPECT_EQ(ProcessName(0), "");
  EXPECT_EQ(ProcessName(int64_t{1} << 40), "");
}

TEST(DeviceUsersJsonTest, PrintsTheLineTheControllerReads) {
  const std::string line =
      DeviceUsersJson("cuda", "nvml",
                      {{.device = 1, .pid = 4242, .name = "python3", .memory_bytes = 21474836480},
                       {.device = 0, .pid = 7, .name = "bad\xff\"name"}});
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_EQ(j["backend"], "cuda");
  EXPECT_EQ(j["source"], "nvml");
  EXPECT_FALSE(j.contains("error"));
  ASSERT_EQ(j["users"].size(), 2u);
  EXPECT_EQ(j["users"][0]["device"], 1);
  EXPECT_EQ(j["users"][0]["pid"], 4242);
  EXPECT_EQ(j["users"][0]["name"], "python3");
  EXPECT_EQ(j["users"][0]["memory_bytes"], 21474836480u);
  // Bytes that are not UTF-8 are replaced, the quote escaped.
  EXPECT_EQ(j["users"][1]["name"], "bad\xEF\xBF\xBD\"name");

  const nlohmann::json none = nlohmann::json::parse(
      DeviceUsersJson("cuda", "none", {}, "libnvidia-ml.so.1: cannot open shared object file"));
  EXPECT_EQ(none["source"], "none");
  EXPECT_TRUE(none["users"].is_array());
  EXPECT_TRUE(none["users"].empty());
  EXPECT_EQ(none["error"], "libnvidia-ml.so.1: cannot open shared object file");
}

TEST(PciBusIdTest, ParsesTheRuntimesAndNvmlsForms) {
  const PciAddress want{.domain = 0, .bus = 0x19, .device = 0, .function = 0};
  EXPECT_EQ(ParsePciBusId("0000:19:00.0"), want);
  EXPECT_EQ(ParsePciBusId("00000000:19:00.0"), want);
  EXPECT_EQ(ParsePciBusId("19:00.0"), want);
  EXPECT_EQ(ParsePciBusId("0001:C1:1f.7"),
            (PciAddress{.domain = 1, .bus = 0xc1, .device = 0x1f, .function = 7}));
  for (const char* bad : {"", "0000:19:00", "0000:19:20.0", "0000:19:00.8", "0000:119:00.0",
                          "0000:19:0x.0", "0000: 19:00.0", "x:0000:19:00.0"}) {
    EXPECT_FALSE(ParsePciBusId(bad).has_value()) << bad;
  }
}

using PciSysfsTest = TempDir;

TEST_F(PciSysfsTest, FindsRenderNodeAndSerialByBusId) {
  const std::string dev = "bus/pci/devices/0000:c1:00.0";
  Write(dev + "/drm/renderD129/dev", "226:129\n");
  Write(dev + "/drm/card1/dev", "226:1\n");
  // The runtime may spell the id in upper case; sysfs does not.
  EXPECT_EQ(RenderNode("0000:C1:00.0", dir_), "/dev/dri/renderD129");
  EXPECT_EQ(RenderNode("0000:c2:00.0", dir_), "");
  EXPECT_EQ(RenderNode("not a bus id", dir_), "");

  EXPECT_EQ(PciSerialNumber("0000:c1:00.0", dir_), "");
  Write(dev + "/drm/card1/device/serial_number", "0x4e5a7b1c2d3e\n");
  EXPECT_EQ(PciSerialNumber("0000:c1:00.0", dir_), "0x4e5a7b1c2d3e");
  Write(dev + "/serial_number", "692237000321\n");
  EXPECT_EQ(PciSerialNumber("0000:c1:00.0", dir_), "692237000321");
}

}  // namespace
}  // namespace colltest::worker
