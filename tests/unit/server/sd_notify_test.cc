#include "server/net/sd_notify.h"

#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/unique_fd.h"
#include "gtest/gtest.h"

namespace colltest::server {
namespace {

// A datagram socket bound where systemd's manager would listen: a path in a fresh temporary
// directory, or an abstract name when `abstract`.
class FakeManager {
 public:
  explicit FakeManager(bool abstract) {
    std::string dir_template = ::testing::TempDir() + "sd_notify_test.XXXXXX";
    if (!abstract && mkdtemp(dir_template.data()) != nullptr) dir_ = dir_template;
    address_ = abstract ? absl::StrCat("@sd_notify_test.", getpid(), ".", counter_++)
                        : absl::StrCat(dir_, "/notify");
    fd_.reset(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    sockaddr_un sun{};
    sun.sun_family = AF_UNIX;
    std::memcpy(sun.sun_path, address_.data(), address_.size());
    if (abstract) sun.sun_path[0] = '\0';
    const socklen_t length = offsetof(sockaddr_un, sun_path) + address_.size() + (abstract ? 0 : 1);
    bound_ = bind(fd_.get(), reinterpret_cast<sockaddr*>(&sun), length) == 0;
    // Nothing arrives in a failing test: a receive times out instead of hanging the suite.
    timeval timeout{.tv_sec = 2, .tv_usec = 0};
    setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  }
  ~FakeManager() {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  bool bound() const { return bound_; }
  const std::string& address() const { return address_; }
  std::optional<std::string> Receive() {
    char buffer[4096];
    const ssize_t n = recv(fd_.get(), buffer, sizeof(buffer), 0);
    if (n < 0) return std::nullopt;
    return std::string(buffer, n);
  }

 private:
  static inline int counter_ = 0;
  std::string dir_;
  std::string address_;
  UniqueFd fd_;
  bool bound_ = false;
};

// Sets $NOTIFY_SOCKET for one test and restores its absence afterwards.
class NotifySocketEnv {
 public:
  explicit NotifySocketEnv(const std::string& value) { setenv("NOTIFY_SOCKET", value.c_str(), 1); }
  ~NotifySocketEnv() { unsetenv("NOTIFY_SOCKET"); }
};

TEST(SdNotifyTest, SendsReadyStatusAndStoppingToAPathSocket) {
  FakeManager manager(/*abstract=*/false);
  ASSERT_TRUE(manager.bound());
  NotifySocketEnv env(manager.address());
  ASSERT_TRUE(NotifyReady().ok());
  EXPECT_EQ(manager.Receive(), "READY=1");
  ASSERT_TRUE(NotifyReady("listening on 127.0.0.1:50051").ok());
  EXPECT_EQ(manager.Receive(), "READY=1\nSTATUS=listening on 127.0.0.1:50051");
  ASSERT_TRUE(NotifyStatus("probing\nREADY=1").ok());
  EXPECT_EQ(manager.Receive(), "STATUS=probing READY=1");  // no forged second assignment
  ASSERT_TRUE(NotifyStopping().ok());
  EXPECT_EQ(manager.Receive(), "STOPPING=1");
}

TEST(SdNotifyTest, SendsToAnAbstractSocket) {
  FakeManager manager(/*abstract=*/true);
  ASSERT_TRUE(manager.bound());
  NotifySocketEnv env(manager.address());
  ASSERT_TRUE(NotifyReady().ok());
  EXPECT_EQ(manager.Receive(), "READY=1");
}

TEST(SdNotifyTest, IsANoOpWithoutNotifySocket) {
  unsetenv("NOTIFY_SOCKET");
  EXPECT_TRUE(NotifyReady().ok());
  EXPECT_TRUE(NotifyStatus("x").ok());
  EXPECT_TRUE(NotifyStopping().ok());
}

TEST(SdNotifyTest, ReportsWhatCannotBeSent) {
  EXPECT_EQ(SendNotification("relative/path", "READY=1").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SendNotification("/" + std::string(200, 'x'), "READY=1").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SendNotification("/nonexistent-dir/notify", "READY=1").code(),
            absl::StatusCode::kUnavailable);
  NotifySocketEnv env("/nonexistent-dir/notify");
  EXPECT_FALSE(NotifyReady().ok());
}

}  // namespace
}  // namespace colltest::server
