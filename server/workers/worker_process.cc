#include "server/workers/worker_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/signal_mask.h"

namespace colltest::server {
namespace {

// After a call fails with anything but a deadline, the worker's socket has closed; a worker that is
// dying closes its socket a moment before it becomes reapable, so give it this long to get there.
constexpr absl::Duration kExitAfterDisconnect = absl::Seconds(1);

class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const { return fd_; }
  void reset(int fd = -1) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

absl::Status MakePipe(UniqueFd& read_end, UniqueFd& write_end) {
  // O_CLOEXEC: other threads may fork at any moment, and their children must not hold our ends
  // (a stray write end would keep us from ever seeing EOF).
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return absl::ErrnoToStatus(errno, "pipe2");
  read_end.reset(fds[0]);
  write_end.reset(fds[1]);
  return absl::OkStatus();
}

int PollTimeoutMs(absl::Time deadline) {
  const absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return 0;
  return static_cast<int>(std::min<int64_t>(
      absl::ToInt64Milliseconds(absl::Ceil(left, absl::Milliseconds(1))), INT_MAX));
}

// Waits until `fd` is readable or `deadline` passes; false on timeout.
bool PollReadable(int fd, absl::Time deadline) {
  while (true) {
    pollfd p{fd, POLLIN, 0};
    const int n = poll(&p, 1, PollTimeoutMs(deadline));
    if (n > 0) return true;
    if (n == 0) return false;
    if (errno != EINTR) return true;  // let the following read report the error
  }
}

// Everything the child needs, prepared before fork: between fork and exec in a multithreaded
// process only async-signal-safe calls are allowed, so the child must not allocate.
struct ChildSetup {
  const char* path;
  char* const* argv;
  pid_t parent;
  int ready_fd;
  int exec_error_fd;
  int heartbeat_fd;
  int max_fd;
};

void CloseRange(int first, int last, int max_fd) {
  if (first > last) return;
  if (close_range(first, last, 0) == 0) return;
  for (int fd = first; fd <= std::min(last, max_fd); ++fd) close(fd);
}

[[noreturn]] void ExecChild(const ChildSetup& setup) {
  // SIGTERM, not SIGKILL: a worker whose controller died unlinks its own shared memory before it
  // leaves (worker/app/main.cc), and leaves within 3 s whatever it was doing.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  // The controller may have died between fork and prctl; then nobody would ever kill us.
  if (getppid() != setup.parent) _exit(127);
  // The controller may block signals for a signal-handling thread; the mask survives exec.
  common::UnblockAllSignals();
  // The worker inherits the ready pipe and the heartbeat page; the exec-error pipe stays
  // close-on-exec (its EOF tells the parent that exec succeeded). Everything else is closed.
  for (int fd : {setup.ready_fd, setup.heartbeat_fd}) {
    fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) & ~FD_CLOEXEC);
  }
  int keep[] = {setup.ready_fd, setup.exec_error_fd, setup.heartbeat_fd};
  std::sort(std::begin(keep), std::end(keep));  // in place, no allocation
  int next = 3;
  for (int fd : keep) {
    CloseRange(next, fd - 1, setup.max_fd);
    next = fd + 1;
  }
  CloseRange(next, INT_MAX, setup.max_fd);
  execv(setup.path, setup.argv);
  const int error = errno;
  (void)!write(setup.exec_error_fd, &error, sizeof(error));
  _exit(127);
}

}  // namespace

WorkerProcess::WorkerProcess(pid_t pid, uint32_t device, std::string socket_path)
    : pid_(pid), device_(device), socket_path_(std::move(socket_path)) {
  pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
}

WorkerProcess::~WorkerProcess() {
  Kill();
  if (pidfd_ >= 0) close(pidfd_);
  if (page_ != nullptr) munmap(page_, sizeof(WorkerPage));
}

uint64_t WorkerProcess::Heartbeat() const { return page_->beats.load(std::memory_order_relaxed); }

uint64_t WorkerProcess::Progress() const { return page_->progress.load(std::memory_order_relaxed); }

uint32_t WorkerProcess::PluginEntryNow(uint64_t& call) const {
  call = page_->plugin_call.load(std::memory_order_relaxed);
  return page_->plugin_entry.load(std::memory_order_relaxed);
}

int WorkerProcess::AwaitedPeer() const {
  return static_cast<int>(page_->awaiting_plus_one.load(std::memory_order_relaxed)) - 1;
}

void WorkerProcess::SetCancel(bool cancel) {
  page_->cancel.store(cancel ? 1u : 0u, std::memory_order_relaxed);
}

absl::StatusOr<std::unique_ptr<WorkerProcess>> WorkerProcess::Spawn(const WorkerSpawnSpec& spec,
                                                                    ForkThread& fork_thread) {
  const absl::Time deadline = absl::Now() + spec.timeout;
  if (spec.socket_path.size() >= sizeof(sockaddr_un{}.sun_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("socket path ", spec.socket_path, " is longer than ",
                     sizeof(sockaddr_un{}.sun_path) - 1, " bytes; choose a shorter runtime_dir"));
  }
  unlink(spec.socket_path.c_str());  // left by an earlier worker on this device

  UniqueFd ready_read, ready_write, exec_error_read, exec_error_write;
  if (absl::Status s = MakePipe(ready_read, ready_write); !s.ok()) return s;
  if (absl::Status s = MakePipe(exec_error_read, exec_error_write); !s.ok()) return s;
  UniqueFd heartbeat_fd(memfd_create("colltest-heartbeat", MFD_CLOEXEC));
  if (heartbeat_fd.get() < 0) return absl::ErrnoToStatus(errno, "memfd_create (heartbeat)");
  if (ftruncate(heartbeat_fd.get(), sizeof(WorkerPage)) != 0) {
    return absl::ErrnoToStatus(errno, "ftruncate (heartbeat)");
  }
  void* heartbeat =
      mmap(nullptr, sizeof(WorkerPage), PROT_READ | PROT_WRITE, MAP_SHARED, heartbeat_fd.get(), 0);
  if (heartbeat == MAP_FAILED) return absl::ErrnoToStatus(errno, "mmap (heartbeat)");
  // Owned by the process object from here on (it unmaps it), or unmapped on the failures below.
  std::unique_ptr<void, void (*)(void*)> heartbeat_page(
      heartbeat, [](void* page) { munmap(page, sizeof(WorkerPage)); });

  std::vector<std::string> args = {spec.worker_binary,
                                   "--socket",
                                   spec.socket_path,
                                   "--backend",
                                   spec.backend,
                                   "--device",
                                   absl::StrCat(spec.physical_device),
                                   "--ready-fd",
                                   absl::StrCat(ready_write.get()),
                                   "--heartbeat-fd",
                                   absl::StrCat(heartbeat_fd.get())};
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const long open_max = sysconf(_SC_OPEN_MAX);
  const ChildSetup setup{spec.worker_binary.c_str(),
                         argv.data(),
                         getpid(),
                         ready_write.get(),
                         exec_error_write.get(),
                         heartbeat_fd.get(),
                         static_cast<int>(std::clamp<long>(open_max, 1024, 1 << 20))};

  pid_t pid = -1;
  int fork_errno = 0;
  fork_thread.Run([&] {
    pid = fork();
    if (pid == 0) ExecChild(setup);
    fork_errno = errno;
  });
  if (pid < 0) return absl::ErrnoToStatus(fork_errno, "fork");
  // From here on the destructor kills and reaps the child on every early return.
  std::unique_ptr<WorkerProcess> process(new WorkerProcess(pid, spec.device, spec.socket_path));
  process->page_ = static_cast<WorkerPage*>(heartbeat_page.release());
  ready_write.reset();
  exec_error_write.reset();
  heartbeat_fd.reset();  // the mapping stays

  // exec either succeeds (the CLOEXEC pipe closes: EOF) or the child reports its errno.
  if (!PollReadable(exec_error_read.get(), deadline)) {
    return absl::DeadlineExceededError(absl::StrCat("worker for device ", spec.device, " (pid ",
                                                    pid, ") did not exec within ",
                                                    absl::FormatDuration(spec.timeout)));
  }
  int exec_errno = 0;
  if (read(exec_error_read.get(), &exec_errno, sizeof(exec_errno)) ==
      static_cast<ssize_t>(sizeof(exec_errno))) {
    return absl::ErrnoToStatus(exec_errno, absl::StrCat("cannot execute ", spec.worker_binary));
  }

  const absl::Status ready = process->WaitForReadyLine(ready_read.get(), deadline, spec.timeout);
  if (!ready.ok()) return ready;

  // A private subchannel: gRPC otherwise shares one connection among channels to the same target,
  // and a respawned worker on the same socket path would inherit its dead predecessor's connection.
  grpc::ChannelArguments channel_args;
  channel_args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  process->channel_ = grpc::CreateCustomChannel(absl::StrCat("unix:", spec.socket_path),
                                                grpc::InsecureChannelCredentials(), channel_args);
  process->stub_ = colltest::worker::v1::Worker::NewStub(process->channel_);
  if (!process->channel_->WaitForConnected(absl::ToChronoTime(deadline))) {
    return absl::UnavailableError(absl::StrCat("worker for device ", spec.device, " (pid ", pid,
                                               ") is ready but ", spec.socket_path,
                                               " does not accept connections"));
  }
  return process;
}

absl::Status WorkerProcess::WaitForReadyLine(int ready_fd, absl::Time deadline,
                                             absl::Duration timeout) {
  const std::string who = absl::StrCat("worker for device ", device_, " (pid ", pid_, ")");
  std::string line;
  while (line.find('\n') == std::string::npos) {
    if (line.size() > 64) {
      return absl::InternalError(absl::StrCat(who, " wrote an overlong ready line"));
    }
    if (!PollReadable(ready_fd, deadline)) {
      return absl::DeadlineExceededError(
          absl::StrCat(who, " was not ready within ", absl::FormatDuration(timeout)));
    }
    char buf[64];
    const ssize_t n = read(ready_fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::ErrnoToStatus(errno, absl::StrCat("reading the ready line of ", who));
    if (n == 0) {
      if (WaitForExit(std::min(kExitAfterDisconnect,
                               std::max(deadline - absl::Now(), absl::ZeroDuration())))) {
        return absl::UnavailableError(
            absl::StrCat(who, " exited before it was ready: ", ExitDescription()));
      }
      return absl::UnavailableError(absl::StrCat(who, " closed its ready fd without a ready line"));
    }
    line.append(buf, static_cast<size_t>(n));
  }
  absl::string_view view(line);
  view = view.substr(0, view.find('\n'));
  int reported = 0;
  if (!absl::ConsumePrefix(&view, "ready ") || !absl::SimpleAtoi(view, &reported)) {
    return absl::InternalError(
        absl::StrCat(who, " wrote \"", line.substr(0, line.find('\n')), "\", not \"ready <pid>\""));
  }
  if (reported != pid_) {
    return absl::FailedPreconditionError(
        absl::StrCat(who, " reported pid ", reported,
                     "; a wrapper must exec the worker so that the controller can kill it"));
  }
  return absl::OkStatus();
}

void WorkerProcess::RecordExit(std::optional<int> wait_status) {
  wait_status_ = wait_status;
  reaped_ = true;
  unlink(socket_path_.c_str());
}

bool WorkerProcess::IsAlive() {
  absl::MutexLock lock(&mu_);
  if (reaped_) return false;
  int status = 0;
  const pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == 0) return true;
  // ECHILD (r < 0) would mean it was reaped elsewhere: nothing left to wait for either way.
  RecordExit(r == pid_ ? std::optional<int>(status) : std::nullopt);
  return false;
}

bool WorkerProcess::WaitForExit(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  if (!IsAlive()) return true;
  if (pidfd_ >= 0) {
    PollReadable(pidfd_, deadline);
    return !IsAlive();
  }
  // Kernels before 5.3 have no pidfd to wait on.
  while (absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
    if (!IsAlive()) return true;
  }
  return false;
}

void WorkerProcess::SendKill() {
  absl::MutexLock lock(&mu_);
  if (reaped_) return;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) {
    RecordExit(status);  // it died on its own; keep that, not our kill, as its cause
    return;
  }
  if (kill(pid_, SIGKILL) == 0) killed_by_us_ = true;
}

void WorkerProcess::Reap() {
  absl::MutexLock lock(&mu_);
  if (reaped_) return;
  if (!killed_by_us_) {
    if (kill(pid_, SIGKILL) == 0) killed_by_us_ = true;
  }
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &status, 0);
  } while (r < 0 && errno == EINTR);
  RecordExit(r == pid_ ? std::optional<int>(status) : std::nullopt);
}

std::string WorkerProcess::ExitDescription() const {
  absl::MutexLock lock(&mu_);
  if (!reaped_) return "still running";
  if (!wait_status_.has_value()) return "exit status unknown";
  const int status = *wait_status_;
  if (WIFEXITED(status)) return absl::StrCat("exited with status ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return absl::StrCat("killed by signal ", WTERMSIG(status),
                        WCOREDUMP(status) ? " (core dumped)" : "");
  }
  return absl::StrCat("wait status ", status);
}

CallFailure WorkerProcess::ClassifyFailedCall(const grpc::Status& status) {
  const bool exited = status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED
                          ? !IsAlive()
                          : WaitForExit(kExitAfterDisconnect);
  if (!exited) {
    return status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ? CallFailure::kLate
                                                                      : CallFailure::kError;
  }
  absl::MutexLock lock(&mu_);
  // A worker that died by itself in the instant before our SIGKILL still shows its own cause.
  const bool our_kill = killed_by_us_ && wait_status_.has_value() && WIFSIGNALED(*wait_status_) &&
                        WTERMSIG(*wait_status_) == SIGKILL;
  return our_kill ? CallFailure::kKilledByUs : CallFailure::kDied;
}

std::string RankDiedMessage(uint32_t rank, const WorkerProcess& process) {
  return absl::StrCat("rank ", rank, " (pid ", process.pid(),
                      ") died: ", process.ExitDescription());
}

}  // namespace colltest::server
