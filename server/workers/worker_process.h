// One colltest-worker process: spawned, reached over its unix socket, watched, killed and reaped.
//
// Command line: <worker_binary> --socket <path> --backend <backend> --device <d> --ready-fd <fd>
// Ready contract: once its gRPC server listens on unix:<path>, the worker writes the line
// "ready <pid>\n" to <fd>, where <pid> is its own pid (a wrapper script must exec the worker, so
// that the process the controller kills is the worker itself).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "colltest/v1/worker.grpc.pb.h"
#include "common/worker_page.h"
#include "grpcpp/grpcpp.h"
#include "server/workers/case_facts.h"  // CallFailure
#include "server/workers/fork_thread.h"

namespace colltest::server {

struct WorkerSpawnSpec {
  std::string worker_binary;
  std::string backend;
  std::string socket_path;
  uint32_t device = 0;  // colltestd's device index: names the rank in messages
  // The GPU the worker uses (colltest-worker --device): `device` itself unless several device
  // indices are slots of one GPU (colltestd --ranks-per-gpu).
  uint32_t physical_device = 0;
  absl::Duration timeout;  // from fork to a connected channel
};

class WorkerProcess {
 public:
  // Forks (on `fork_thread`) and execs the worker, waits for its ready line and connects to it.
  // Every failure path kills and reaps the child before returning.
  static absl::StatusOr<std::unique_ptr<WorkerProcess>> Spawn(const WorkerSpawnSpec& spec,
                                                              ForkThread& fork_thread);
  ~WorkerProcess();  // Kill()

  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  pid_t pid() const { return pid_; }
  uint32_t device() const { return device_; }
  colltest::worker::v1::Worker::Stub& stub() { return *stub_; }

  // Reaps the process if it has exited, recording how. Safe from any thread.
  bool IsAlive();
  // Waits up to `timeout` for the process to exit on its own; true once it has.
  bool WaitForExit(absl::Duration timeout);
  // SIGKILLs the process if it still runs; Reap() then collects it. Split so that a group can
  // signal all its ranks before waiting for any, instead of paying each exit in turn.
  void SendKill();
  void Reap();
  void Kill() {
    SendKill();
    Reap();
  }

  // The worker's progress counter (common/worker_page.h): it moves while the worker works.
  uint64_t Heartbeat() const;
  // The page's count of completed work (common/worker_page.h `progress`).
  uint64_t Progress() const;
  // The kernel plugin entry point the worker is inside (common/worker_page.h PluginEntry, 0: none)
  // and, in `call`, the call of a launch; readable after the process died.
  uint32_t PluginEntryNow(uint64_t& call) const;
  // The peer the worker says it waits for right now, -1 for none.
  int AwaitedPeer() const;
  // Asks the worker to stop its case (true), or clears the request before the next case (false).
  void SetCancel(bool cancel);

  // "exited with status 3", "killed by signal 9", or "still running".
  std::string ExitDescription() const;
  CallFailure ClassifyFailedCall(const grpc::Status& status);

 private:
  WorkerProcess(pid_t pid, uint32_t device, std::string socket_path);

  void RecordExit(std::optional<int> wait_status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status WaitForReadyLine(int ready_fd, absl::Time deadline, absl::Duration timeout);

  const pid_t pid_;
  const uint32_t device_;
  const std::string socket_path_;
  int pidfd_ = -1;              // readable once the process exits; -1 on kernels without pidfd_open
  WorkerPage* page_ = nullptr;  // shared with the worker
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<colltest::worker::v1::Worker::Stub> stub_;

  mutable absl::Mutex mu_;
  std::optional<int> wait_status_ ABSL_GUARDED_BY(mu_);  // set once reaped
  bool reaped_ ABSL_GUARDED_BY(mu_) = false;
  bool killed_by_us_ ABSL_GUARDED_BY(mu_) = false;
};

// "rank 2 (pid 1234) died: killed by signal 9"
std::string RankDiedMessage(uint32_t rank, const WorkerProcess& process);

}  // namespace colltest::server
