#include "tests/integration/daemon.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>

#include "absl/strings/numbers.h"
#include "gtest/gtest.h"

namespace colltest::testing {

std::string BinDir() { return COLLTEST_BIN_DIR; }

std::string BreaksWorkerPath() { return BinDir() + "/colltest-worker-breaks"; }

namespace {

extern "C" char** environ;

std::vector<char*> CStrings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Reads one line from `fd` within `timeout_ms`, or returns "".
std::string ReadLine(int fd, int timeout_ms) {
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return "";
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return "";
    char c;
    if (read(fd, &c, 1) != 1) return "";
    if (c == '\n') return line;
    line.push_back(c);
  }
}

}  // namespace

std::unique_ptr<Daemon> Daemon::Start(int cpu_ranks, std::vector<std::string> extra_args,
                                      std::vector<std::string> env) {
  extra_args.insert(extra_args.begin(), {"--cpu-ranks", std::to_string(cpu_ranks)});
  return StartWithBackend("cpu", std::move(extra_args), std::move(env));
}

std::unique_ptr<Daemon> Daemon::StartWithBackend(const std::string& backend,
                                                 std::vector<std::string> extra_args,
                                                 std::vector<std::string> env,
                                                 uint64_t open_files) {
  // COLLTEST_BIN_DIR overrides the build tree's bin/ (a bundle copied to a GPU box).
  const char* dir = std::getenv("COLLTEST_BIN_DIR");
  std::vector<std::string> argv = {(dir != nullptr ? std::string(dir) : BinDir()) + "/colltestd",
                                   "--backend", backend};
  // An ephemeral loopback port unless the test asks for another --listen.
  if (std::find(extra_args.begin(), extra_args.end(), "--listen") == extra_args.end()) {
    argv.insert(argv.end(), {"--listen", "127.0.0.1:0"});
  }
  // A history of its own: tests must not share (or lock) the user's state directory.
  std::string state_dir;
  bool own_state_dir = false;
  if (auto it = std::find(extra_args.begin(), extra_args.end(), "--state-dir");
      it != extra_args.end() && it + 1 != extra_args.end()) {
    state_dir = *(it + 1);
  } else {
    std::string tmpl = (std::getenv("TMPDIR") != nullptr ? std::string(std::getenv("TMPDIR"))
                                                         : std::string("/tmp")) +
                       "/colltestd-state-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) return nullptr;
    state_dir = tmpl;
    own_state_dir = true;
    argv.insert(argv.end(), {"--state-dir", state_dir});
  }
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  std::vector<std::string> envv;
  for (char** e = environ; *e != nullptr; ++e) envv.emplace_back(*e);
  envv.insert(envv.end(), env.begin(), env.end());
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return nullptr;
  auto args = CStrings(argv);
  auto envs = CStrings(envv);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    if (open_files > 0) {
      const rlimit limit{open_files, open_files};
      if (setrlimit(RLIMIT_NOFILE, &limit) != 0) _exit(126);
    }
    execve(args[0], args.data(), envs.data());
    _exit(127);
  }
  close(out[1]);
  auto d = std::unique_ptr<Daemon>(new Daemon());
  d->pid_ = pid;
  d->state_dir_ = state_dir;
  d->own_state_dir_ = own_state_dir;
  // GPU workers take longer to start (context creation, allocation).
  const std::string line = ReadLine(out[0], 120000);
  close(out[0]);
  const std::string prefix = "colltestd listening on ";
  if (line.rfind(prefix, 0) != 0) {
    d->Stop();
    return nullptr;
  }
  const std::string rest = line.substr(prefix.size());
  d->address_ = rest.substr(0, rest.find(' '));
  if (const size_t http = rest.find(" http="); http != std::string::npos) {
    const std::string tail = rest.substr(http + 6);
    d->http_address_ = tail.substr(0, tail.find(' '));
  }
  return d;
}

Daemon::~Daemon() {
  Stop();
  if (own_state_dir_) std::filesystem::remove_all(state_dir_);
}

void Daemon::Kill() {
  if (stopped_) return;
  stopped_ = true;
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
}

std::unique_ptr<colltest::v1::CollectiveTest::Stub> Daemon::Stub() const {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  return colltest::v1::CollectiveTest::NewStub(
      grpc::CreateCustomChannel(address_, grpc::InsecureChannelCredentials(), args));
}

std::vector<pid_t> Daemon::WorkerPids() const {
  std::vector<pid_t> pids;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return pids;
  while (dirent* e = readdir(proc)) {
    const pid_t p = static_cast<pid_t>(std::atoi(e->d_name));
    if (p <= 0) continue;
    std::ifstream stat("/proc/" + std::string(e->d_name) + "/stat");
    std::string all((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t open = all.find('('), close = all.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    const std::string comm = all.substr(open + 1, close - open - 1);
    std::istringstream rest(all.substr(close + 2));
    char state;
    pid_t ppid;
    rest >> state >> ppid;
    if (ppid == pid_ && comm == "colltest-worker" && state != 'Z') pids.push_back(p);
  }
  closedir(proc);
  return pids;
}

pid_t Daemon::WorkerPidForDevice(uint32_t device) const {
  for (pid_t p : WorkerPids()) {
    std::ifstream cmdline("/proc/" + std::to_string(p) + "/cmdline");
    std::vector<std::string> args;
    for (std::string arg; std::getline(cmdline, arg, '\0');) args.push_back(arg);
    for (size_t i = 0; i + 1 < args.size(); ++i) {
      if (args[i] == "--device" && args[i + 1] == std::to_string(device)) return p;
    }
  }
  return -1;
}

std::vector<pid_t> Daemon::ChildPids() const {
  std::vector<pid_t> pids;
  // Only the main thread's children are listed there; the daemon forks from other threads too.
  DIR* tasks = opendir(("/proc/" + std::to_string(pid_) + "/task").c_str());
  if (tasks == nullptr) return pids;
  while (dirent* t = readdir(tasks)) {
    if (t->d_name[0] == '.') continue;
    std::ifstream list("/proc/" + std::to_string(pid_) + "/task/" + t->d_name + "/children");
    for (pid_t p; list >> p;) pids.push_back(p);
  }
  closedir(tasks);
  return pids;
}

size_t Daemon::OpenFds() const {
  size_t count = 0;
  DIR* fds = opendir(("/proc/" + std::to_string(pid_) + "/fd").c_str());
  if (fds == nullptr) return 0;
  while (dirent* e = readdir(fds)) {
    if (e->d_name[0] != '.') ++count;
  }
  closedir(fds);
  return count;
}

std::vector<std::string> Daemon::ShmSegments() const {
  std::vector<std::string> names;
  const std::string prefix = "colltest." + std::to_string(pid_) + ".";
  DIR* shm = opendir("/dev/shm");
  if (shm == nullptr) return names;
  while (dirent* e = readdir(shm)) {
    if (std::string(e->d_name).rfind(prefix, 0) == 0) names.emplace_back(e->d_name);
  }
  closedir(shm);
  return names;
}

int Daemon::Stop() {
  if (stopped_ || pid_ <= 0) return 0;
  stopped_ = true;
  kill(pid_, SIGTERM);
  int status = 0;
  // A pidfd becomes readable when the process exits: wait on it with a bound.
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
  pollfd p{pidfd, POLLIN, 0};
  if (pidfd < 0 || poll(&p, 1, 10000) != 1) kill(pid_, SIGKILL);
  if (pidfd >= 0) close(pidfd);
  waitpid(pid_, &status, 0);
  return status;
}

namespace {

// The machine-readable format (json or junit) a colltest command line asks for, "" for another.
std::string KeptFormat(const std::vector<std::string>& argv) {
  const bool colltest = std::any_of(argv.begin(), argv.end(), [](const std::string& a) {
    return a == "colltest" || (a.size() > 9 && a.compare(a.size() - 9, 9, "/colltest") == 0);
  });
  if (!colltest) return "";
  for (size_t i = 0; i < argv.size(); ++i) {
    std::string value;
    if (argv[i] == "--format" && i + 1 < argv.size()) value = argv[i + 1];
    if (argv[i].rfind("--format=", 0) == 0) value = argv[i].substr(9);
    if (value == "json" || value == "junit") return value;
  }
  return "";
}

std::string OutPath(const std::vector<std::string>& argv) {
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == "--out") return argv[i + 1];
  }
  return "";
}

std::string ReadAll(FILE* f) {
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  return out;
}

// A copy of a JSON or JUnit document a test's colltest command printed, named after the test, for
// the outputs.schema test to validate against the schemas (tests/outputs/check_outputs.py).
void KeepDocument(const std::string& format, const std::string& document) {
  if (document.empty()) return;
  static int counter = 0;
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = test == nullptr ? std::string("no_test")
                                     : std::string(test->test_suite_name()) + "." + test->name();
  std::replace(name.begin(), name.end(), '/', '_');
  std::error_code error;
  std::filesystem::create_directories(COLLTEST_TEST_OUTPUTS_DIR, error);
  std::ofstream(std::string(COLLTEST_TEST_OUTPUTS_DIR) + "/" + name + "." +
                std::to_string(++counter) + (format == "json" ? ".json" : ".xml"))
      << document;
}

}  // namespace

std::pair<int, std::string> RunCommand(const std::vector<std::string>& argv) {
  const std::string format = KeptFormat(argv);
  std::string cmd;
  for (const auto& a : argv) cmd += "'" + a + "' ";
  // A document to keep is read from stdout alone; stderr follows it in the returned text.
  const std::string err_path =
      format.empty() ? "" : ::testing::TempDir() + "/run_command_" + std::to_string(getpid());
  cmd += format.empty() ? "2>&1" : "2>'" + err_path + "'";
  FILE* f = popen(cmd.c_str(), "r");
  if (f == nullptr) return {-1, ""};
  std::string out = ReadAll(f);
  const int status = pclose(f);
  if (!format.empty()) {
    const std::string out_path = OutPath(argv);
    if (out_path.empty()) {
      KeepDocument(format, out);
    } else {
      std::ifstream file(out_path);
      KeepDocument(format, std::string(std::istreambuf_iterator<char>(file), {}));
    }
    if (FILE* err = fopen(err_path.c_str(), "r"); err != nullptr) {
      out += ReadAll(err);
      fclose(err);
    }
    std::remove(err_path.c_str());
  }
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

colltest::v1::RunRequest LamportRun(uint32_t world, uint32_t m, uint32_t n) {
  colltest::v1::RunRequest request;
  colltest::v1::SweepSpec* spec = request.mutable_spec();
  spec->set_world_size(world);
  spec->add_m(m);
  spec->add_n(n);
  spec->add_variants(colltest::v1::VARIANT_LAMPORT);
  return request;
}

std::string WriteTokenFile(const std::string& name, const std::string& contents) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << contents;
  chmod(path.c_str(), 0600);
  return path;
}

HttpReply Http(const std::string& address, const std::string& method, const std::string& path,
               const std::string& body, const std::string& token) {
  HttpReply reply;
  const size_t colon = address.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port)) {
    return reply;
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval timeout{60, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, address.substr(0, colon).c_str(), &addr.sin_addr);
  std::string raw;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    sockaddr_in local{};
    socklen_t size = sizeof(local);
    getsockname(fd, reinterpret_cast<sockaddr*>(&local), &size);
    reply.local_port = ntohs(local.sin_port);
    // Host names the port, and a POST is JSON: with authentication off the gateway refuses
    // others as a browser's cross-site requests (http/origin_check.h).
    std::string request = method + " " + path + " HTTP/1.0\r\nHost: " + address + "\r\n";
    if (method == "POST") request += "Content-Type: application/json\r\n";
    if (!token.empty()) request += "Authorization: Bearer " + token + "\r\n";
    request += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    if (write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
      char buf[8192];
      for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) raw.append(buf, n);
    }
  }
  close(fd);
  const size_t head_end = raw.find("\r\n\r\n");
  if (raw.size() > 12 && head_end != std::string::npos) {
    (void)absl::SimpleAtoi(raw.substr(9, 3), &reply.status);
    reply.body = raw.substr(head_end + 4);
  }
  return reply;
}

}  // namespace colltest::testing
