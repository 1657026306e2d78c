// The colltest CLI when the server cannot be used (a closed port, colltestd's --http and
// --health-listen ports), with a JUnit report asked for, and its progress: on a terminal (a
// pseudo-terminal here) but not on a pipe unless --progress asks.
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/daemon.h"

namespace colltest::testing {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// A loopback port nothing listens on: bound to find a free one, then closed.
int ClosedPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

std::pair<int, std::string> Colltest(const std::string& server, std::vector<std::string> args) {
  args.insert(args.begin(), {BinDir() + "/colltest", "--server", server});
  return RunCommand(args);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// One colltestd for the suite, with the two ports that are not its API.
class CliHints : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    health_address_ = "127.0.0.1:" + std::to_string(ClosedPort());
    daemon_ = Daemon::Start(2, {"--listen", "127.0.0.1:0", "--http", "127.0.0.1:0",
                                "--health-listen", health_address_})
                  .release();
  }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(daemon_, nullptr); }

  static Daemon* daemon_;
  static std::string health_address_;
};
Daemon* CliHints::daemon_ = nullptr;
std::string CliHints::health_address_;

TEST_F(CliHints, ClosedPortSaysColltestdMayNotBeRunningThere) {
  const std::string addr = "127.0.0.1:" + std::to_string(ClosedPort());
  auto [code, out] = Colltest(addr, {"devices"});
  EXPECT_EQ(code, 3) << out;
  // The one error line scripts match on keeps its shape, now naming the address.
  EXPECT_THAT(out, StartsWith("colltest: UNAVAILABLE: server " + addr + ": "));
  EXPECT_THAT(out, HasSubstr("Connection refused"));
  EXPECT_THAT(out, HasSubstr("\nhint: colltestd may not be running at " + addr +
                             ": start it (colltestd --listen " + addr +
                             ") or point the client elsewhere with --server HOST:PORT or the "
                             "COLLTEST_SERVER environment variable\n"));
}

// colltestd's --http port answers HTTP/1.1; gRPC fails to parse that as HTTP/2.
TEST_F(CliHints, HttpPortIsNotColltestdsApi) {
  ASSERT_FALSE(daemon_->http_address().empty());
  auto [code, out] = Colltest(daemon_->http_address(), {"devices"});
  EXPECT_EQ(code, 3) << out;
  EXPECT_THAT(out, StartsWith("colltest: UNAVAILABLE: server " + daemon_->http_address() + ": "));
  EXPECT_THAT(out, HasSubstr("Failed parsing HTTP/2"));
  EXPECT_THAT(out, HasSubstr("\nhint: the server at " + daemon_->http_address() +
                             " speaks HTTP, not gRPC: it is not colltestd (maybe its --http port"));
}

// colltestd's --health-listen port serves only grpc.health.v1: the API's calls are UNIMPLEMENTED,
// with no text at all.
TEST_F(CliHints, HealthListenPortIsNotColltestdsApi) {
  for (const char* command : {"devices", "health"}) {
    auto [code, out] = Colltest(health_address_, {command});
    EXPECT_EQ(code, 3) << out;
    EXPECT_THAT(out, StartsWith("colltest: UNIMPLEMENTED: server " + health_address_ +
                                ": no such service or method\n"));
    EXPECT_THAT(out, HasSubstr("\nhint: the server at " + health_address_ +
                               " does not serve colltest.v1.CollectiveTest: it is not colltestd "
                               "(maybe its --health-listen port"));
  }
}

// The real API port still answers, without a hint.
TEST_F(CliHints, TheListenPortAnswers) {
  auto [code, out] = Colltest(daemon_->address(), {"devices"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_THAT(out, Not(HasSubstr("hint:")));
}

// CI asked for a JUnit file: it exists and holds the error even though nothing ran.
TEST(CliUnreachable, JunitOutHoldsTheError) {
  const std::string addr = "127.0.0.1:" + std::to_string(ClosedPort());
  const std::string path = ::testing::TempDir() + "/cli_unreachable.xml";
  const std::vector<std::vector<std::string>> commands = {
      {"health"}, {"run", "--variants", "lamport"}, {"sweep", "--variants", "lamport"}};
  for (std::vector<std::string> args : commands) {
    std::remove(path.c_str());
    const std::string command = args[0];
    args.insert(args.end(), {"--format", "junit", "--out", path});
    auto [code, out] = Colltest(addr, args);
    EXPECT_EQ(code, 3) << command << ": " << out;
    EXPECT_THAT(out, StartsWith("colltest: UNAVAILABLE: ")) << command;
    const std::string xml = ReadFile(path);
    EXPECT_THAT(xml, HasSubstr("<error")) << command << ": " << xml;
    EXPECT_THAT(xml, HasSubstr(addr)) << command;
  }
}

// Runs argv with stdout and stderr on a pseudo-terminal (as an interactive shell would) and
// returns the exit code and everything written. The terminal turns "\n" into "\r\n".
std::pair<int, std::string> RunOnTerminal(const std::vector<std::string>& argv) {
  const int master = posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) return {-1, ""};
  const std::string slave_name = ptsname(master);
  const pid_t pid = fork();
  if (pid == 0) {
    setsid();
    const int slave = open(slave_name.c_str(), O_RDWR);
    dup2(slave, STDOUT_FILENO);
    dup2(slave, STDERR_FILENO);
    close(master);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  std::string out;
  char buf[4096];
  // Read until the child has closed its side (EIO on Linux), at most 120 s.
  pollfd p{master, POLLIN, 0};
  while (poll(&p, 1, 120000) == 1) {
    const ssize_t n = read(master, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(master);
  int status = 0;
  waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

class CliProgress : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { daemon_ = Daemon::Start(2).release(); }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(daemon_, nullptr); }
  std::vector<std::string> Args(std::vector<std::string> args) {
    args.insert(args.begin(), {BinDir() + "/colltest", "--server", daemon_->address()});
    return args;
  }
  static Daemon* daemon_;
};
Daemon* CliProgress::daemon_ = nullptr;

const std::vector<std::string> kSmallRun = {"--world", "2",       "--m",   "1,8",        "--n",
                                            "64",      "--modes", "eager", "--variants", "lamport"};

std::vector<std::string> With(std::vector<std::string> head, const std::vector<std::string>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

TEST_F(CliProgress, RunRedrawsOneStatusLineOnATerminal) {
  auto [code, out] = RunOnTerminal(Args(With({"run", "--color", "never"}, kSmallRun)));
  EXPECT_EQ(code, 0) << out;
  EXPECT_THAT(out, ContainsRegex("\r\\[1/2\\] 50% elapsed [0-9.]+s ETA [0-9]+s"));
  // The last redraw is ended before the report starts.
  EXPECT_THAT(out, ContainsRegex("\r\\[2/2\\] 100% elapsed [0-9.]+s ETA 0s *\r\n"));
  EXPECT_THAT(out, HasSubstr("2 cases: 2 OK"));
}

// On a terminal the verdicts of the table and of the progress lines are coloured, unless NO_COLOR
// is set (to anything but "") or TERM is dumb; never on a pipe.
TEST_F(CliProgress, VerdictsColouredOnATerminalUnlessNoColorOrDumb) {
  auto on_terminal = [&](std::vector<std::string> env) {
    std::vector<std::string> argv = {"/usr/bin/env", "-u", "NO_COLOR"};
    argv.insert(argv.end(), env.begin(), env.end());
    const std::vector<std::string> colltest = Args(With({"sweep"}, kSmallRun));
    argv.insert(argv.end(), colltest.begin(), colltest.end());
    return RunOnTerminal(argv);
  };
  auto [code, out] = on_terminal({"TERM=xterm"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_THAT(out, HasSubstr("2 cases: 2 \x1B[32mOK\x1B[0m"));
  EXPECT_THAT(out, ContainsRegex("lamport eager m=1 n=64: \x1B\\[32mOK\x1B\\[0m"));
  for (const std::vector<std::string>& env :
       {std::vector<std::string>{"TERM=xterm", "NO_COLOR=1"}, {"TERM=dumb"}}) {
    auto [plain_code, plain] = on_terminal(env);
    EXPECT_EQ(plain_code, 0) << plain;
    EXPECT_THAT(plain, HasSubstr("2 cases: 2 OK")) << env.back();
    EXPECT_THAT(plain, Not(HasSubstr("\x1B["))) << env.back();
  }
  auto [pipe_code, pipe] = RunCommand(Args(With({"sweep", "--progress"}, kSmallRun)));
  EXPECT_EQ(pipe_code, 0) << pipe;
  EXPECT_THAT(pipe, Not(HasSubstr("\x1B[")));
}

TEST_F(CliProgress, NothingOnAPipeUnlessAskedAndNeverWhenQuiet) {
  for (const char* command : {"run", "sweep"}) {
    auto [code, out] = RunCommand(Args(With({command}, kSmallRun)));
    EXPECT_EQ(code, 0) << out;
    EXPECT_THAT(out, Not(HasSubstr("elapsed"))) << command;
    EXPECT_THAT(out, Not(HasSubstr("running\n"))) << command;
    EXPECT_THAT(out, Not(HasSubstr("[1/2]"))) << command;
  }
  auto [quiet_code, quiet] = RunOnTerminal(Args(With({"run", "--quiet"}, kSmallRun)));
  EXPECT_EQ(quiet_code, 0) << quiet;
  EXPECT_THAT(quiet, Not(HasSubstr("elapsed")));
}

TEST_F(CliProgress, ProgressOnAPipeIsALinePerCase) {
  auto [run_code, run] = RunCommand(Args(With({"run", "--progress"}, kSmallRun)));
  EXPECT_EQ(run_code, 0) << run;
  EXPECT_THAT(run, ContainsRegex("\n\\[1/2\\] 50% elapsed [0-9.]+s ETA [0-9]+s\n"));
  EXPECT_THAT(run, Not(HasSubstr("\r")));
  auto [sweep_code, sweep] = RunCommand(Args(With({"sweep", "--progress"}, kSmallRun)));
  EXPECT_EQ(sweep_code, 0) << sweep;
  EXPECT_THAT(sweep, ContainsRegex("\n\\[1/2\\] lamport eager m=1 n=64: OK [0-9.]+ us \\(elapsed "
                                   "[0-9.]+s, ETA [0-9]+s\\)\n"));
  // The status counts once, in the table.
  const size_t counts = sweep.find("2 cases: 2 OK");
  ASSERT_NE(counts, std::string::npos) << sweep;
  EXPECT_EQ(sweep.find("2 cases: 2 OK", counts + 1), std::string::npos) << sweep;
}

TEST_F(CliProgress, HealthShowsItsWaitOnATerminalOnly) {
  auto [code, out] = RunOnTerminal(Args({"health"}));
  EXPECT_EQ(code, 0) << out;
  EXPECT_THAT(out, ContainsRegex("\rhealth: level quick, [0-9.]+ s elapsed, deadline 200 s *\r\n"));
  auto [pipe_code, piped] = RunCommand(Args({"health"}));
  EXPECT_EQ(pipe_code, 0) << piped;
  EXPECT_THAT(piped, Not(HasSubstr("elapsed")));
}

}  // namespace
}  // namespace colltest::testing
