// colltest-worker: one process per rank (one per GPU). Started by colltestd, which talks to it
// over a unix socket and learns it is ready from a line on an inherited pipe.
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/defaults.h"
#include "common/shm_names.h"
#include "common/signal_mask.h"
#include "common/version.h"
#include "worker/backends/cpu/cpu_backend.h"
#ifdef COLLTEST_WORKER_PROTOCOL_BREAKS
#include "worker/backends/cpu/protocol_breaks_env.h"
#endif
#ifdef COLLTEST_HAVE_GPU_BACKEND
#include "worker/backends/gpu/concurrency_probe.h"
#include "worker/backends/gpu/gpu_backend.h"
#include "worker/backends/gpu/gpu_users.h"
#endif
#include "worker/capabilities_json.h"
#include "worker/device_users_scan.h"
#include "worker/heartbeat.h"
#include "worker/plugins/kernel_plugin.h"
#include "worker/plugins/plugin_report_json.h"
#ifdef COLLTEST_WORKER_TEST_FAULT
#include "worker/test_fault_env.h"
#endif
#include "worker/worker_service.h"

namespace {

// One JSON line on stdout, as colltestd reads a probe's answer. Text from the command line may be
// any bytes: what is not UTF-8 becomes U+FFFD rather than an exception.
void PrintJsonLine(const nlohmann::ordered_json& json) {
  std::cout << json.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
            << std::endl;
}

// Backends this binary can run and what each can do (its capabilities, the same its Init reply
// carries), as the controller's probe reads them before it starts any worker.
int Probe(const std::string& backend) {
#ifdef COLLTEST_HAVE_GPU_BACKEND
  // A GPU build answers for its GPUs when it finds any; `auto` falls back to the cpu backend.
  if (backend == "auto" || backend == colltest::gpu::kBackendName) {
    const std::string json = colltest::gpu::ProbeDevicesJson();
    if (!json.empty()) {
      std::cout << json << std::endl;
      return 0;
    }
    if (backend != "auto") {
      PrintJsonLine({{"backend", "none"}, {"error", "no " + backend + " devices found"}});
      return 1;
    }
  }
#endif
  if (backend != "auto" && backend != "cpu") {
    PrintJsonLine({{"backend", "none"}, {"error", "backend " + backend + " is not built in"}});
    return 1;
  }
  // No devices of its own: colltestd makes its --cpu-ranks virtual ones
  // (server/devices/backend_probe.h).
  PrintJsonLine(
      {{"backend", "cpu"},
       {"devices", nlohmann::ordered_json::array()},
       {"capabilities", colltest::worker::CapabilitiesJson(colltest::cpu::CpuCapabilities())}});
  return 0;
}

// Whether the kernels of two processes on `device` run concurrently
// (server/devices/concurrency_check.h, docs/shared-gpu.md): one JSON line. Called before anything
// else touches the GPU runtime: the probe forks. The cpu backend's ranks are threads of processes
// the OS schedules side by side.
int ConcurrencyProbe(const std::string& backend, uint32_t device) {
#ifdef COLLTEST_HAVE_GPU_BACKEND
  if (backend == colltest::gpu::kBackendName) {
    std::cout << colltest::gpu::ConcurrencyProbeJson(static_cast<int>(device)) << std::endl;
    return 0;
  }
#endif
  if (backend != "cpu") {
    PrintJsonLine({{"concurrent", false}, {"error", "backend " + backend + " is not built in"}});
    return 0;
  }
  PrintJsonLine({{"concurrent", true}, {"note", "cpu backend: no device"}});
  return 0;
}

// The processes using `devices` (empty: all), as the controller's BUSY check reads them
// (server/devices/device_users.h). The cpu backend's virtual devices are this machine's memory,
// which no other process can take: nothing to look for.
int Users(const std::string& backend, const std::vector<uint32_t>& devices) {
#ifdef COLLTEST_HAVE_GPU_BACKEND
  if (backend == "auto" || backend == colltest::gpu::kBackendName) {
    std::cout << colltest::gpu::DeviceUsersJson(devices) << std::endl;
    return 0;
  }
#endif
  if (backend != "auto" && backend != "cpu") {
    PrintJsonLine({{"backend", "none"}, {"error", "backend " + backend + " is not built in"}});
    return 1;
  }
  std::cout << colltest::worker::DeviceUsersJson("cpu", "none", {}) << std::endl;
  return 0;
}

// Unlinks the shared-memory segments this process created (common/shm_names.h) without touching the
// mappings a running case may still use. Called whenever the worker leaves: when its controller
// died, nobody else is left to remove them.
void UnlinkOwnSegments() {
  const int self = getpid();
  colltest::common::ForEachColltestShm([self](const colltest::common::ShmEntry& entry) {
    if (entry.worker_pid == self) colltest::common::UnlinkShmEntry(entry);
  });
}

// The cpu backend. colltest-worker-breaks (the test build, COLLTEST_WORKER_PROTOCOL_BREAKS) also
// breaks the protocol rules COLLTEST_BREAK_PROTOCOL names; null when that names an unknown rule.
std::unique_ptr<colltest::worker::Backend> CreateCpu(uint32_t device, uint32_t blocks) {
  colltest::cpu::CpuBackendOptions options;
  options.device = device;
  options.resident_blocks = blocks;
#ifdef COLLTEST_WORKER_PROTOCOL_BREAKS
  auto breaks = colltest::cpu::ProtocolBreaksFromEnvironment();
  if (!breaks.ok()) {
    std::cerr << "colltest-worker: " << breaks.status().message() << "\n";
    return nullptr;
  }
  options.breaks = *breaks;
#endif
  return colltest::cpu::CreateCpuBackend(options);
}

// How long a worker told to stop (SIGTERM, SIGINT, its controller's death) may take to leave
// before it ends itself: a case wedged in a driver call must not keep it alive. With the case
// stopped through the cancel word it usually takes less (measured: the last of 4 cpu ranks in a
// 32 MiB case gone 0.25-0.8 s after colltestd's SIGKILL; 1.5 s to this deadline on 2 cores
// with a load average of 12).
constexpr absl::Duration kLeaveDeadline = absl::Milliseconds(2500);
// Exit status of a worker that had to end itself at kLeaveDeadline.
constexpr int kLeftAtDeadlineStatus = 124;
// The kernel's backstop, in case even the deadline thread does not get to run: SIGALRM's default
// action ends the process.
constexpr unsigned kExitAlarmSeconds = 3;

// The worker leaves because of SIGTERM or SIGINT. It may be its controller's death
// (PR_SET_PDEATHSIG), which getppid() cannot confirm: the kernel sends the signal when the
// controller's forking thread exits, and reparents the worker to another thread of the same dying
// process (getppid() unchanged) until its last thread is gone. Whoever sent the signal, a leaving
// worker's segments are of no use to anyone (peers keep their mappings), so it always unlinks them.
void LeaveOnSignal(absl::Notification& shutdown) {
  // Stops the case in progress within one call or one poll, as the controller's Cancel does: a
  // case of 100,000 calls would otherwise hold Release() until the deadline.
  if (colltest::WorkerPage* page = colltest::worker::worker_page) {
    page->cancel.store(1, std::memory_order_relaxed);
  }
  UnlinkOwnSegments();
  alarm(kExitAlarmSeconds);
  std::thread([] {
    absl::SleepFor(kLeaveDeadline);
    // A case that was in Init when the first unlink ran may have created its segment since.
    UnlinkOwnSegments();
    _exit(kLeftAtDeadlineStatus);
  }).detach();
  if (!shutdown.HasBeenNotified()) shutdown.Notify();
}

// The backend --backend names; null (and a message) when it is not built into this binary.
std::unique_ptr<colltest::worker::Backend> SelectBackend(const std::string& backend,
                                                         uint32_t device, uint32_t cpu_blocks) {
  if (backend == "cpu") return CreateCpu(device, cpu_blocks);
#ifdef COLLTEST_HAVE_GPU_BACKEND
  if (backend == colltest::gpu::kBackendName) {
    return colltest::gpu::CreateGpuBackend({.device = device});
  }
#endif
  std::cerr << "colltest-worker: backend " << backend << " is not built into this binary\n";
  return nullptr;
}

// Serves the Worker protocol on `socket_path` until the Shutdown RPC, SIGTERM or SIGINT.
int Serve(std::unique_ptr<colltest::worker::Backend> selected, const std::string& socket_path,
          int ready_fd) {
  // SIGTERM/SIGINT end the worker through the same path as the Shutdown RPC.
  const sigset_t signals = colltest::common::BlockStopSignals();

  absl::Notification shutdown;
  colltest::worker::WorkerService service(std::move(selected), &shutdown);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket_path, grpc::InsecureServerCredentials());
  builder.SetMaxReceiveMessageSize(colltest::kMaxGrpcMessageBytes);
  builder.SetMaxSendMessageSize(colltest::kMaxGrpcMessageBytes);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) {
    std::cerr << "colltest-worker: cannot listen on unix:" << socket_path << "\n";
    return 1;
  }
  if (ready_fd >= 0) {
    const std::string line = absl::StrCat("ready ", getpid(), "\n");
    if (write(ready_fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) return 1;
    close(ready_fd);
  }
  std::thread signal_waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    LeaveOnSignal(shutdown);
  });
  signal_waiter.detach();

  shutdown.WaitForNotification();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
  service.backend().Release();
  UnlinkOwnSegments();  // what an Init still running during Release() created
  unlink(socket_path.c_str());
  return 0;
}

// Loads one kernel plugin as this worker would and prints its report as one JSON line
// (docs/plugins.md): exit 0 when it loads, 1 when it is refused, 2 for a backend that is not one.
// colltestd runs it in a process of its own per plugin, so that a plugin that crashes while it
// loads takes this process down and nothing else.
int CheckPlugin(const std::string& path, const std::string& backend) {
  const uint32_t bit = backend == "cpu"    ? COLLTEST_BACKEND_CPU
                       : backend == "cuda" ? COLLTEST_BACKEND_CUDA
                       : backend == "hip"  ? COLLTEST_BACKEND_HIP
                                           : 0;
  if (bit == 0) {
    PrintJsonLine({{"path", path},
                   {"loaded", false},
                   {"refused", "--backend " + backend + ": must be cpu, cuda or hip"}});
    return 2;
  }
  const colltest::worker::plugins::PluginLoad load =
      colltest::worker::plugins::LoadKernelPlugin(path, bit);
  PrintJsonLine(colltest::worker::plugins::PluginReportJson(load.report));
  return load.plugin != nullptr ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"colltest worker: runs collective cases for one rank"};
  app.set_version_flag("--version", colltest::common::VersionLine("colltest-worker"));
  std::string socket_path, backend = "cpu";
  uint32_t device = 0, cpu_blocks = 2;
  int ready_fd = -1, heartbeat_fd = -1;
  bool probe = false, users = false, concurrency_probe = false;
  std::string check_plugin;
  std::vector<uint32_t> users_devices;
  app.add_option("--socket", socket_path, "unix socket to serve the Worker protocol on");
  app.add_option("--backend", backend, "cpu|cuda|hip|auto");
  app.add_option("--device", device, "device index (a virtual rank slot on the cpu backend)");
  app.add_option("--ready-fd", ready_fd, "inherited pipe; 'ready <pid>' is written once serving");
  app.add_option("--heartbeat-fd", heartbeat_fd,
                 "inherited shared-memory word the controller's watchdog reads");
  app.add_option("--cpu-blocks", cpu_blocks,
                 "threads (co-resident blocks) per rank on the cpu backend")
      ->check(CLI::Range(1, 64));
  app.add_flag("--probe", probe, "print the backend and devices as JSON and exit");
  app.add_flag("--concurrency-probe", concurrency_probe,
               "print as JSON whether two processes' kernels on --device run concurrently (MPS) "
               "or time-sliced, and exit");
  app.add_flag("--users", users, "print the processes using --devices as JSON and exit");
  app.add_option("--devices", users_devices, "device indices for --users, comma-separated (all)")
      ->delimiter(',');
  app.add_option("--check-plugin", check_plugin,
                 "load a kernel plugin for --backend as a worker would, print its report as JSON "
                 "and exit (0 loaded, 1 refused)");
  CLI11_PARSE(app, argc, argv);
  if (!check_plugin.empty()) return CheckPlugin(check_plugin, backend);
  if (probe) return Probe(backend);
  if (concurrency_probe) return ConcurrencyProbe(backend, device);
  if (users) return Users(backend, users_devices);
  if (socket_path.empty()) {
    std::cerr << "colltest-worker: --socket is required\n";
    return 2;
  }
  if (heartbeat_fd >= 0) {
    if (!colltest::worker::AttachHeartbeat(heartbeat_fd)) {
      std::cerr << "colltest-worker: --heartbeat-fd " << heartbeat_fd << " cannot be mapped\n";
      return 2;
    }
    close(heartbeat_fd);  // the mapping stays
  }
  std::unique_ptr<colltest::worker::Backend> selected = SelectBackend(backend, device, cpu_blocks);
  if (selected == nullptr) return 2;
#ifdef COLLTEST_WORKER_TEST_FAULT
  // colltest-worker-breaks only: a standing fault from the environment (test_fault_env.h).
  selected = colltest::worker::WithTestFaultFromEnvironment(std::move(selected));
#endif
  return Serve(std::move(selected), socket_path, ready_fd);
}
