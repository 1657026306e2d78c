// Without authentication a run belongs to "peer:<address>". colltestd hands its plaintext
// connections to gRPC by descriptor, which gRPC would name "fd:N"; the owner must name the client's
// real address instead, exactly: the test opens the client's socket itself to know its port.
#include <arpa/inet.h>
#include <grpcpp/create_channel_posix.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "tests/integration/daemon.h"

namespace colltest::testing {
namespace {

namespace v1 = ::colltest::v1;

v1::RunRequest SmallRun() { return LamportRun(2, 1, 1024); }

// A Run over `channel`; the run's owner as the reply and GetRun both report it.
std::string RunOwner(const std::shared_ptr<grpc::Channel>& channel) {
  auto stub = v1::CollectiveTest::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  v1::RunResult run;
  const grpc::Status status = stub->Run(&context, SmallRun(), &run);
  EXPECT_TRUE(status.ok()) << status.error_message();
  grpc::ClientContext get_context;
  v1::GetRunRequest get;
  get.set_run_id(run.run_id());
  v1::RunResult stored;
  EXPECT_TRUE(stub->GetRun(&get_context, get, &stored).ok());
  EXPECT_EQ(stored.owner(), run.owner());
  return run.owner();
}

// A TCP connection to "127.0.0.1:PORT" and its local port; fd -1 on failure.
std::pair<int, uint16_t> ConnectIpv4(const std::string& address) {
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1))));
  inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in local{};
  socklen_t size = sizeof(local);
  if (connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&local), &size) != 0) {
    close(fd);
    return {-1, 0};
  }
  return {fd, ntohs(local.sin_port)};
}

TEST(PeerTest, ARunIsOwnedByTheClientsAddressNotItsDescriptor) {
  auto d = Daemon::Start(2);
  ASSERT_NE(d, nullptr);
  const auto [fd, port] = ConnectIpv4(d->address());
  ASSERT_GE(fd, 0);
  // The channel owns `fd` from here.
  EXPECT_EQ(RunOwner(grpc::CreateInsecureChannelFromFd("colltestd", fd)),
            "peer:ipv4:127.0.0.1:" + std::to_string(port));

  // An ordinary client, whose port gRPC picks.
  const std::string owner =
      RunOwner(grpc::CreateChannel(d->address(), grpc::InsecureChannelCredentials()));
  EXPECT_EQ(owner.rfind("peer:ipv4:127.0.0.1:", 0), 0u) << owner;
  EXPECT_EQ(owner.find("fd:"), std::string::npos) << owner;
}

TEST(PeerTest, AUnixSocketClientIsNamedByItsCredentials) {
  const std::string path = "/tmp/colltest-peer-" + std::to_string(getpid()) + ".sock";
  auto d = Daemon::StartWithBackend("cpu", {"--cpu-ranks", "2", "--listen", "unix:" + path});
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(RunOwner(grpc::CreateChannel(d->address(), grpc::InsecureChannelCredentials())),
            "peer:unix:uid=" + std::to_string(getuid()) + ",pid=" + std::to_string(getpid()));
}

}  // namespace
}  // namespace colltest::testing
