#include "server/net/token_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <future>
#include <iostream>
#include <memory>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::server {
namespace {

using ::testing::HasSubstr;

constexpr char kFile[] = R"(# colltestd identities
grafana  viewer  viewer-token-0000000001

ci-a     runner  runner-token-000000000a
ci-b	runner	runner-token-000000000b
oncall   admin   cn:oncall.example.com
)";

std::string ErrorOf(const std::string& text) {
  absl::StatusOr<std::vector<Principal>> parsed = ParseTokenFile(text, "/etc/t");
  EXPECT_FALSE(parsed.ok()) << text;
  return std::string(parsed.status().message());
}

TEST(TokenFileTest, ParsesNamesRolesTokensAndCommonNames) {
  absl::StatusOr<std::vector<Principal>> parsed = ParseTokenFile(kFile, "/etc/t");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), 4u);
  EXPECT_EQ((*parsed)[0].name, "grafana");
  EXPECT_EQ((*parsed)[0].role, Role::kViewer);
  EXPECT_EQ((*parsed)[0].token, "viewer-token-0000000001");
  EXPECT_EQ((*parsed)[2].name, "ci-b");  // tabs separate too
  EXPECT_EQ((*parsed)[2].role, Role::kRunner);
  EXPECT_EQ((*parsed)[3].role, Role::kAdmin);
  EXPECT_EQ((*parsed)[3].token, "");
  EXPECT_EQ((*parsed)[3].common_name, "oncall.example.com");
}

TEST(TokenFileTest, OneBareTokenIsTheDefaultAdmin) {
  absl::StatusOr<std::vector<Principal>> parsed =
      ParseTokenFile("# old format\n  0123456789abcdef0123 \r\n", "/etc/t");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), 1u);
  EXPECT_EQ((*parsed)[0].name, "default");
  EXPECT_EQ((*parsed)[0].role, Role::kAdmin);
  EXPECT_EQ((*parsed)[0].token, "0123456789abcdef0123");
}

TEST(TokenFileTest, RefusesBadLinesNamingTheLine) {
  EXPECT_THAT(ErrorOf("a viewer aaaaaaaaaaaaaaaaaaaa\nb viewer bbbbbbbbbbbbbbbbbbbb\n"
                      "a runner cccccccccccccccccccc\n"),
              HasSubstr("/etc/t line 3: name \"a\" is also on line 1"));
  EXPECT_THAT(ErrorOf("a viewer aaaaaaaaaaaaaaaaaaaa\n\n# x\nb admin aaaaaaaaaaaaaaaaaaaa\n"),
              HasSubstr("line 4: the token of b is also on line 1"));
  EXPECT_THAT(ErrorOf("a viewer cn:x\nb admin cn:x\n"),
              HasSubstr("line 2: cn:x is also on line 1"));
  EXPECT_THAT(ErrorOf("a superuser aaaaaaaaaaaaaaaaaaaa\n"),
              HasSubstr("line 1: role \"superuser\": unknown (viewer, runner, admin)"));
  EXPECT_THAT(ErrorOf("a viewer aaaaaaaaaaaaaaaaaaaa\nb runner 123456789012345\n"),
              HasSubstr("line 2: the token has 15 characters, must have >= 16"));
  EXPECT_THAT(ErrorOf("short-token\n"),
              HasSubstr("line 1: the token has 11 characters, must have >= 16"));
  EXPECT_THAT(ErrorOf("a viewer\n"), HasSubstr("line 1: expected NAME ROLE TOKEN"));
  EXPECT_THAT(ErrorOf("a:b viewer aaaaaaaaaaaaaaaaaaaa\n"), HasSubstr("line 1: name \"a:b\""));
  EXPECT_THAT(ErrorOf("a viewer cn:\n"), HasSubstr("line 1: cn: needs"));
  EXPECT_THAT(ErrorOf("# nothing\n\n"), HasSubstr("/etc/t: no token"));
}

TEST(TokenFileTest, LooseModesWarn) {
  EXPECT_EQ(LooseModeWarning("/t", 0100600), "");
  EXPECT_EQ(LooseModeWarning("/t", 0100400), "");
  EXPECT_THAT(LooseModeWarning("/t", 0100644), HasSubstr("/t: mode 0644"));
  EXPECT_THAT(LooseModeWarning("/t", 0100640), HasSubstr("chmod 600"));
  EXPECT_NE(LooseModeWarning("/t", 0100602), "");
}

TEST(TokenFileTest, CommonNamesNeedMutualTls) {
  const std::string path = ::testing::TempDir() + "/colltestd_tokens";
  std::ofstream(path) << "oncall admin cn:oncall.example.com\n";
  chmod(path.c_str(), 0600);
  absl::StatusOr<std::vector<Principal>> loaded = LoadTokenFile(path, /*mutual_tls=*/false);
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(loaded.status().message()), HasSubstr("--tls-client-ca"));
  EXPECT_TRUE(LoadTokenFile(path, /*mutual_tls=*/true).ok());
  EXPECT_EQ(LoadTokenFile(path + ".missing", true).status().code(), absl::StatusCode::kNotFound);
}

// A FIFO given as --token-file made open() wait for a writer: colltestd hung before serving, deaf
// to SIGTERM. It must be refused at once, naming the flag and the file's type.
TEST(TokenFileTest, RefusesAFifoWithoutBlocking) {
  const std::string path = ::testing::TempDir() + "/colltestd_tokens_fifo";
  unlink(path.c_str());
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0) << std::strerror(errno);
  auto outcome = std::make_shared<std::promise<absl::Status>>();
  std::future<absl::Status> loaded = outcome->get_future();
  const auto start = std::chrono::steady_clock::now();
  std::thread([path, outcome] {
    outcome->set_value(LoadTokenFile(path, false).status());
  }).detach();
  const bool returned = loaded.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "LoadTokenFile(FIFO) " << (returned ? "returned after " : "still blocked after ")
            << seconds << " s\n";
  if (!returned) {
    // Be the writer it waits for, so that its thread can end.
    const int writer = open(path.c_str(), O_WRONLY | O_NONBLOCK);
    if (writer >= 0) close(writer);
  }
  EXPECT_TRUE(returned) << "LoadTokenFile blocked on a FIFO";
  const absl::Status status = loaded.get();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("--token-file " + path + ": is a FIFO, not a regular file"));
  unlink(path.c_str());
}

TEST(TokenFileTest, RefusesDevicesAndDirectoriesNamingTheFlag) {
  EXPECT_THAT(std::string(LoadTokenFile("/dev/null", false).status().message()),
              HasSubstr("--token-file /dev/null: is a character device, not a regular file"));
  EXPECT_THAT(std::string(LoadTokenFile("/", false).status().message()),
              HasSubstr("--token-file /: is a directory, not a regular file"));
}

TEST(TokenFileTest, FollowsSymlinksToRegularFiles) {
  const std::string path = ::testing::TempDir() + "/colltestd_tokens_target";
  const std::string link = ::testing::TempDir() + "/colltestd_tokens_link";
  std::ofstream(path) << "ci runner runner-token-000000000a\n";
  chmod(path.c_str(), 0600);
  unlink(link.c_str());
  ASSERT_EQ(symlink(path.c_str(), link.c_str()), 0);
  EXPECT_TRUE(LoadTokenFile(link, false).ok());
  unlink(link.c_str());
}

}  // namespace
}  // namespace colltest::server
