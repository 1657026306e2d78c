// A stand-in for colltest-worker that speaks the real Worker protocol and the real ready-line
// contract, exports real shared-memory segments, and misbehaves on request, so that the worker pool
// can be tested without the real worker or a GPU.
//
// CaseRequest.fault, "<what>:<rank>":
//   crash:R       rank R SIGKILLs itself; the other ranks answer OK
//   crash_wait:R  rank R SIGKILLs itself; the other ranks wait for it forever, as in a barrier
//   exit:R        rank R calls _exit(3)
//   hang:R        rank R never answers; the other ranks answer OK
//   hang_all      no rank answers
//   wrong:R       rank R answers WRONG; its next Reset succeeds
//   wrong_stuck:R rank R answers WRONG; its next Reset fails
//   busy:R        rank R beats its heartbeat but never answers; the others answer HANG naming R
//   late:R        rank R beats but never answers, waiting for nobody; the others beat while they
//                 announce (common/worker_page.h) that they wait for R, and never answer either
//   spin_cancel   every rank beats until the controller sets its cancel word, then answers HANG
//   spin_deaf     every rank beats forever and ignores the cancel word (a long device replay)
//   grind:R       rank R completes work (common/worker_page.h `progress`) forever and never
//                 answers; the other ranks answer OK
//   slow:R        rank R completes a unit of work every 50 ms for 3 s, then answers OK; the
//                 other ranks answer OK at once
// Only `busy` beats the heartbeat (--heartbeat-fd): any other rank that does not answer looks
// stuck to the controller's watchdog.
// Environment, read at start:
//   FAKE_WORKER_FAIL_INIT_DEVICE=D  Init fails on device D
//   FAKE_WORKER_NO_READY=1          never writes the ready line
//   FAKE_WORKER_EXIT_BEFORE_READY=1 exits with status 7 instead of serving
//   FAKE_WORKER_SMALL_DEVICE=D      device D keeps fewer blocks co-resident than the others
//   FAKE_WORKER_INIT_FAILURES=DIR:N the first N Inits of all workers fail (as a context that MPS
//                                   refuses while it cleans up after a dead client); DIR counts
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "colltest/v1/worker.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "worker/heartbeat.h"

namespace {

namespace wv1 = colltest::worker::v1;
namespace v1 = colltest::v1;

constexpr uint64_t kSegmentBytes = 4096;
constexpr char kNcclId[] = "fake-nccl-id";

// FAKE_WORKER_INIT_FAILURES=DIR:N: whether this Init is one of the first N of every worker, counted
// by files made exclusively in DIR.
bool FailThisInit() {
  const char* spec = getenv("FAKE_WORKER_INIT_FAILURES");
  if (spec == nullptr) return false;
  const std::string text(spec);
  const size_t colon = text.rfind(':');
  int failures = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(text.substr(colon + 1), &failures)) {
    return false;
  }
  for (int i = 0; i < failures; ++i) {
    const std::string mark = absl::StrCat(text.substr(0, colon), "/init-", i);
    const int fd = open(mark.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600);
    if (fd >= 0) {
      close(fd);
      return true;
    }
  }
  return false;
}

[[noreturn]] void BlockForever() {
  while (true) pause();
}

[[noreturn]] void BeatForever() {
  while (true) {
    colltest::worker::Beat();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

class FakeWorker final : public wv1::Worker::Service {
 public:
  FakeWorker(uint32_t device, absl::Notification* shutdown)
      : device_(device), shutdown_(shutdown) {}
  void RemoveSegments() {
    absl::MutexLock lock(&mu_);
    for (const std::string& name : segments_) shm_unlink(name.c_str());
  }

  grpc::Status Init(grpc::ServerContext*, const wv1::InitRequest* request,
                    wv1::InitReply* reply) override {
    const char* fail = getenv("FAKE_WORKER_FAIL_INIT_DEVICE");
    if (fail != nullptr && absl::StrCat(request->device()) == fail) {
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "fake: no memory on this device");
    }
    if (FailThisInit()) {
      return grpc::Status(grpc::StatusCode::INTERNAL,
                          "fake: set device: CUDA-capable device(s) is/are busy or unavailable");
    }
    absl::MutexLock lock(&mu_);
    rank_ = request->rank();
    world_ = request->world_size();
    ranks_on_device_ = request->ranks_on_device();
    device_slots_ = request->device_slots();
    for (const char* buffer : {"rank_buffers", "signal"}) {
      // The controller names the segments (InitRequest.shm_prefix, common/shm_names.h):
      // /colltest.<controller pid>.<worker pid>.<n>.
      const std::string name = absl::StrCat(request->shm_prefix(), segments_.size());
      const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
      if (fd < 0 || ftruncate(fd, kSegmentBytes) != 0) {
        return grpc::Status(grpc::StatusCode::INTERNAL, absl::StrCat("shm_open ", name));
      }
      close(fd);
      segments_.push_back(name);
      wv1::BufferHandle* handle = reply->add_handles();
      handle->set_name(buffer);
      handle->set_handle(name);
      handle->set_bytes(kSegmentBytes);
    }
    if (rank_ == 0) reply->set_nccl_unique_id(kNcclId);
    reply->set_device_name("fake");
    const char* small = getenv("FAKE_WORKER_SMALL_DEVICE");
    const bool is_small = small != nullptr && absl::StrCat(request->device()) == small;
    reply->set_resident_blocks(is_small ? 66 : 132);
    reply->set_pid(static_cast<uint32_t>(getpid()));
    reply->mutable_capabilities()->set_uses_shared_memory_segments(true);
    return grpc::Status::OK;
  }

  // Fails unless the table holds every rank exactly once, each with segments that really exist.
  grpc::Status Connect(grpc::ServerContext*, const wv1::ConnectRequest* request,
                       wv1::ConnectReply*) override {
    absl::MutexLock lock(&mu_);
    std::set<uint32_t> seen;
    for (const wv1::PeerHandles& peer : request->peers()) {
      if (peer.rank() >= world_ || !seen.insert(peer.rank()).second) {
        return Refuse(absl::StrCat("bad or repeated rank ", peer.rank(), " in the table"));
      }
      if (peer.handles_size() == 0)
        return Refuse(absl::StrCat("rank ", peer.rank(), " has no handles"));
      for (const wv1::BufferHandle& handle : peer.handles()) {
        const int fd = shm_open(handle.handle().c_str(), O_RDWR, 0);
        if (fd < 0) return Refuse(absl::StrCat("cannot open ", handle.handle()));
        close(fd);
      }
    }
    if (seen.size() != world_) return Refuse(absl::StrCat("table has ", seen.size(), " ranks"));
    if (request->nccl_unique_id() != kNcclId) return Refuse("missing rank 0's NCCL id");
    peers_ = absl::StrJoin(seen, ",");
    return grpc::Status::OK;
  }

  grpc::Status RunCase(grpc::ServerContext*, const wv1::CaseRequest* request,
                       v1::RankResult* reply) override {
    uint32_t rank;
    std::string peers;
    int resets;
    {
      absl::MutexLock lock(&mu_);
      if (peers_.empty()) return Refuse("RunCase before Connect");
      rank = rank_;
      peers = peers_;
      resets = resets_;
    }
    std::vector<std::string> fault = absl::StrSplit(request->fault(), ':');
    uint32_t target = 0;
    const bool mine = fault.size() == 2 && absl::SimpleAtoi(fault[1], &target) && target == rank;
    const std::string what = fault.size() == 2 ? fault[0] : "";
    if (mine && (what == "crash" || what == "crash_wait")) raise(SIGKILL);
    if (mine && what == "exit") _exit(3);
    if (mine && what == "hang") BlockForever();
    if (mine && what == "busy") {
      while (true) {
        colltest::worker::Beat();
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
    if (what == "late") {
      if (!mine) colltest::worker::Awaiting(static_cast<int>(target));
      BeatForever();
    }
    if (request->fault() == "spin_deaf") BeatForever();
    if (mine && (what == "grind" || what == "slow")) {
      const absl::Time until = absl::Now() + absl::Seconds(3);
      while (what == "grind" || absl::Now() < until) {
        colltest::worker::Advance();
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
    if (request->fault() == "spin_cancel") {
      while (!colltest::worker::CancelRequested()) {
        colltest::worker::Beat();
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      reply->set_status(v1::CASE_STATUS_HANG);
      reply->set_phase("cancelled");
      reply->set_suspect_peer(-1);
      reply->set_rank(rank);
      reply->set_device(device_);
      return grpc::Status::OK;
    }
    if (!mine && what == "busy") {
      reply->set_status(v1::CASE_STATUS_HANG);
      reply->set_suspect_peer(static_cast<int32_t>(target));
      reply->set_phase("fake barrier");
      reply->set_rank(rank);
      reply->set_device(device_);
      return grpc::Status::OK;
    }
    if (request->fault() == "hang_all") BlockForever();
    if (!mine && what == "crash_wait") BlockForever();

    reply->set_rank(rank);
    reply->set_device(device_);
    reply->set_suspect_peer(-1);
    reply->set_calls(1);
    // gpu: the --device it was started with (a GPU; colltestd's index is in RankResult.device).
    reply->set_message(absl::StrCat("pid=", getpid(), " peers=", peers, " resets=", resets,
                                    " gpu=", device_, " ranks_on_device=", ranks_on_device_,
                                    " device_slots=", device_slots_));
    reply->set_status(v1::CASE_STATUS_OK);
    if (mine && (what == "wrong" || what == "wrong_stuck")) {
      reply->set_status(v1::CASE_STATUS_WRONG);
      absl::MutexLock lock(&mu_);
      reset_fails_ = what == "wrong_stuck";
    }
    return grpc::Status::OK;
  }

  grpc::Status Reset(grpc::ServerContext*, const wv1::ResetRequest*, wv1::ResetReply*) override {
    absl::MutexLock lock(&mu_);
    if (reset_fails_) return Refuse("fake: stuck");
    ++resets_;
    return grpc::Status::OK;
  }

  grpc::Status Shutdown(grpc::ServerContext*, const wv1::ShutdownRequest*,
                        wv1::ShutdownReply*) override {
    if (!shutdown_->HasBeenNotified()) shutdown_->Notify();
    return grpc::Status::OK;
  }

 private:
  static grpc::Status Refuse(const std::string& why) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, why);
  }

  const uint32_t device_;
  absl::Notification* const shutdown_;
  absl::Mutex mu_;
  uint32_t rank_ = 0;
  uint32_t world_ = 0;
  uint32_t ranks_on_device_ = 0;
  uint32_t device_slots_ = 0;
  std::vector<std::string> segments_;
  std::string peers_;
  int resets_ = 0;
  bool reset_fails_ = false;
};

}  // namespace

int main(int argc, char** argv) {
  std::string socket_path;
  uint32_t device = 0;
  int ready_fd = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--socket") {
      socket_path = value;
    } else if (flag == "--device") {
      if (!absl::SimpleAtoi(value, &device)) return 2;
    } else if (flag == "--ready-fd") {
      if (!absl::SimpleAtoi(value, &ready_fd)) return 2;
    } else if (flag == "--heartbeat-fd") {
      int fd = -1;
      if (!absl::SimpleAtoi(value, &fd) || !colltest::worker::AttachHeartbeat(fd)) return 2;
    } else if (flag != "--backend") {
      std::cerr << "fake_worker: unknown flag " << flag << "\n";
      return 2;
    }
  }
  if (socket_path.empty() || ready_fd < 0) return 2;
  if (getenv("FAKE_WORKER_EXIT_BEFORE_READY") != nullptr) return 7;
  if (getenv("FAKE_WORKER_NO_READY") != nullptr) BlockForever();

  absl::Notification shutdown;
  FakeWorker service(device, &shutdown);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket_path, grpc::InsecureServerCredentials());
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) return 1;
  const std::string line = absl::StrCat("ready ", getpid(), "\n");
  if (write(ready_fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) return 1;
  close(ready_fd);
  shutdown.WaitForNotification();
  // A graceful exit cleans up after itself; a hung handler must not keep the process alive.
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(100));
  service.RemoveSegments();
  _exit(0);
}
