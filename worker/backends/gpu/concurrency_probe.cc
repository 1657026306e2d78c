// The host side of the concurrency probe (concurrency_probe.h): two processes, one IPC buffer, and
// bounds on every wait, so that the probe answers within about a second whatever the GPU does.
#include "worker/backends/gpu/concurrency_probe.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "worker/backends/gpu/gpu_handles.h"

namespace colltest::gpu {
namespace {

using Clock = std::chrono::steady_clock;

// How long the host waits for each step. A kernel ends by its device clock after
// kProbeHandshakeNs + kProbeMeasureNs (0.5 s); the host bounds are there for a runtime or a GPU
// that does not keep to it.
// A cold GPU (no persistence mode) may take a second or more to create a context: each process
// waits that long for the other's, so that a slow start is not mistaken for time slicing.
constexpr int kStartWaitMs = 2000;
constexpr int kKernelWaitMs = 1000;
constexpr int kChildStatusWaitMs = 1500;  // the second process's kernel, after the first's
constexpr int kChildExitWaitMs = 500;
// What the second process says once it mapped the buffer and is about to launch.
constexpr char kReady[] = "ready";

// "<vendor call>: <runtime's message>", e.g. "cudaIpcOpenMemHandle: invalid argument"; "" for
// success. `call` is the runtime's name without its prefix.
std::string Failed(Error e, const char* call) {
  if (e == kSuccess) return "";
  return absl::StrCat(kBackendName, call, ": ", ErrorString(e));
}

// A JSON string literal of `s`; invalid UTF-8 (a runtime's message) is replaced, not refused.
std::string JsonString(std::string_view s) {
  return nlohmann::json(std::string(s))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Reads `n` bytes from `fd` within `timeout_ms`; false at EOF, an error or the timeout.
bool ReadFull(int fd, void* buf, size_t n, int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  size_t got = 0;
  while (got < n) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;  // EINTR, or the deadline
    const ssize_t r = read(fd, static_cast<char*>(buf) + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    got += static_cast<size_t>(r);
  }
  return true;
}

// One line from `fd` (without its newline) within `timeout_ms`; what came before EOF or the
// timeout otherwise, with *complete false.
std::string ReadLine(int fd, int timeout_ms, bool* complete) {
  std::string line;
  char c = 0;
  *complete = false;
  while (ReadFull(fd, &c, 1, timeout_ms)) {
    if (c == '\n') {
      *complete = true;
      break;
    }
    line += c;
  }
  return line;
}

// Until the stream's work finished: "" then, else what went wrong.
std::string WaitStream(Stream s) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(kKernelWaitMs);
  for (;;) {
    const Error e = StreamQuery(s);
    if (e != kNotReady) return Failed(e, "StreamQuery");
    if (Clock::now() > deadline) {
      return absl::StrCat("the probe kernel did not finish within ", kKernelWaitMs, " ms");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// A kernel that outlived its host-side wait still uses its buffer, and freeing the buffer would
// wait for that kernel: it is left to the process's exit.
void Abandon(DeviceMemory<ProbeBuffer>&& buffer) {
  (void)new DeviceMemory<ProbeBuffer>(std::move(buffer));
}

// The second process: its context is created while the first creates its own, then it maps the
// first's buffer, says it is ready and echoes the pings. "" when its kernel ran to its end.
std::string Pong(int device, int handle_fd, int status_fd) {
  if (std::string e = Failed(SetDevice(device), "SetDevice"); !e.empty()) return e;
  if (std::string e = Failed(Free(nullptr), "Free"); !e.empty()) return e;  // creates the context
  IpcMemHandle handle;
  if (!ReadFull(handle_fd, &handle, sizeof handle, kStartWaitMs)) {
    return "no IPC handle came from the first process";
  }
  IpcMapping<ProbeBuffer> buffer;
  if (std::string e = Failed(OpenIpc(handle, &buffer), "IpcOpenMemHandle"); !e.empty()) return e;
  StreamHandle stream;
  if (std::string e = Failed(CreateStream(&stream), "StreamCreateWithFlags"); !e.empty()) return e;
  const std::string ready = absl::StrCat(kReady, "\n");
  if (write(status_fd, ready.data(), ready.size()) != static_cast<ssize_t>(ready.size())) {
    return "the first process is gone";
  }
  const Error launched = LaunchProbeKernel(buffer.get(), ProbeRole::kPong, stream.get());
  if (std::string e = Failed(launched, "LaunchKernel"); !e.empty()) return e;
  return WaitStream(stream.get());
}

// The child after fork: it must not outlive the first process (which colltestd may kill at its
// timeout), nor hold the first process's stdout, whose end colltestd waits for.
[[noreturn]] void RunPongChild(pid_t parent, int handle_fd, int status_fd, int device) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(1);
  const int null = open("/dev/null", O_WRONLY);
  if (null >= 0) dup2(null, STDOUT_FILENO);
  const std::string line = Pong(device, handle_fd, status_fd) + "\n";
  (void)!write(status_fd, line.data(), line.size());
  _exit(0);
}

// The first process: allocates and exports the buffer, waits until the second is ready (so that
// the handshake's bound covers only a kernel launch), then runs the ping kernel. On success `out`
// holds the buffer as the kernel left it; `buffer` stays allocated for the child.
std::string Ping(int device, int handle_fd, int status_fd, DeviceMemory<ProbeBuffer>& buffer,
                 ProbeBuffer* out) {
  if (std::string e = Failed(SetDevice(device), "SetDevice"); !e.empty()) return e;
  if (std::string e = Failed(AllocateDevice(sizeof(ProbeBuffer), &buffer), "Malloc"); !e.empty()) {
    return e;
  }
  if (std::string e = Failed(Memset(buffer.get(), 0, sizeof(ProbeBuffer)), "Memset"); !e.empty()) {
    return e;
  }
  // The child must see the zeroed flags: the memset may still be in flight.
  if (std::string e = Failed(DeviceSynchronize(), "DeviceSynchronize"); !e.empty()) return e;
  IpcMemHandle handle;
  if (std::string e = Failed(IpcGetMemHandle(&handle, buffer.get()), "IpcGetMemHandle");
      !e.empty()) {
    return e;
  }
  if (write(handle_fd, &handle, sizeof handle) != static_cast<ssize_t>(sizeof handle)) {
    return absl::StrCat("write of the IPC handle to the second process: ", std::strerror(errno));
  }
  bool complete = false;
  if (std::string line = ReadLine(status_fd, kStartWaitMs, &complete); line != kReady) {
    return absl::StrCat(complete ? line : "the second process did not get ready in time",
                        " (second process)");
  }
  StreamHandle stream;
  if (std::string e = Failed(CreateStream(&stream), "StreamCreateWithFlags"); !e.empty()) return e;
  const Error launched = LaunchProbeKernel(buffer.get(), ProbeRole::kPing, stream.get());
  if (std::string e = Failed(launched, "LaunchKernel"); !e.empty()) return e;
  if (std::string e = WaitStream(stream.get()); !e.empty()) {
    Abandon(std::move(buffer));
    return e;
  }
  return Failed(MemcpyToHost(out, buffer.get(), sizeof(ProbeBuffer)), "Memcpy");
}

// The child's status line ("" for success), then the child reaped: killed when it does not leave.
std::string ReapChild(pid_t child, int status_fd) {
  bool answered = false;
  const std::string line = ReadLine(status_fd, kChildStatusWaitMs, &answered);
  const auto deadline = Clock::now() + std::chrono::milliseconds(kChildExitWaitMs);
  int status = 0;
  pid_t r;
  while ((r = waitpid(child, &status, WNOHANG)) == 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (r == 0) {
    kill(child, SIGKILL);
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (!answered) return "the second process did not report back";
  return line;
}

std::string ErrorJson(const std::string& error) {
  return absl::StrCat(R"({"concurrent":false,"error":)", JsonString(error), "}");
}

std::string MeasuredJson(const ProbeBuffer& b) {
  const ProbeResult& r = b.result;
  const uint32_t n = std::min(r.round_trips, kProbeMaxRoundTrips);
  char elapsed[32];
  std::snprintf(elapsed, sizeof elapsed, "%.2f", r.elapsed_ns / 1e6);
  if (r.handshake == 0 || n == 0) {
    const std::string note = r.handshake == 0
                                 ? "the second process's kernel never answered the first ping"
                                 : "no round trip completed after the first";
    return absl::StrCat(R"({"concurrent":false,"round_trips":0,"elapsed_ms":)", elapsed,
                        R"(,"note":)", JsonString(note), "}");
  }
  std::vector<uint32_t> times(b.round_ns, b.round_ns + n);
  std::nth_element(times.begin(), times.begin() + n / 2, times.end());
  const uint32_t median_ns = times[n / 2];
  char median[32];
  std::snprintf(median, sizeof median, "%.2f", median_ns / 1e3);
  return absl::StrCat(R"({"concurrent":)", median_ns <= kProbeConcurrentMaxNs ? "true" : "false",
                      R"(,"round_trip_us":)", median, R"(,"round_trips":)", n, R"(,"elapsed_ms":)",
                      elapsed, "}");
}

}  // namespace

std::string ConcurrencyProbeJson(int device) {
  // A child that died early must not turn the handle's write into a fatal SIGPIPE.
  signal(SIGPIPE, SIG_IGN);
  int to_child[2], from_child[2];
  if (pipe2(to_child, O_CLOEXEC) != 0) return ErrorJson(absl::StrCat("pipe: ", strerror(errno)));
  if (pipe2(from_child, O_CLOEXEC) != 0) {
    close(to_child[0]);
    close(to_child[1]);
    return ErrorJson(absl::StrCat("pipe: ", strerror(errno)));
  }
  const pid_t parent = getpid();
  // Before any runtime call: the CUDA runtime does not survive a fork.
  const pid_t child = fork();
  if (child < 0) return ErrorJson(absl::StrCat("fork: ", strerror(errno)));
  if (child == 0) {
    close(to_child[1]);
    close(from_child[0]);
    RunPongChild(parent, to_child[0], from_child[1], device);
  }
  close(to_child[0]);
  close(from_child[1]);
  DeviceMemory<ProbeBuffer> buffer;  // freed after the child is reaped: it maps the buffer
  ProbeBuffer measured{};
  const std::string error = Ping(device, to_child[1], from_child[0], buffer, &measured);
  close(to_child[1]);  // a child still waiting for the handle sees its end
  const std::string child_error = ReapChild(child, from_child[0]);
  close(from_child[0]);
  if (!error.empty()) return ErrorJson(error);
  if (!child_error.empty()) return ErrorJson(absl::StrCat(child_error, " (second process)"));
  return MeasuredJson(measured);
}

}  // namespace colltest::gpu
