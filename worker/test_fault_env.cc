#include "worker/test_fault_env.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

namespace colltest::worker {
namespace {

// Forwards every call to the backend it wraps, with the standing fault set in each case that has
// none. The fault is parsed by the case driver like any request's, so a malformed one fails every
// case with the grammar's message instead of the worker's start.
class StandingFaultBackend final : public Backend {
 public:
  StandingFaultBackend(std::unique_ptr<Backend> backend, std::string fault)
      : backend_(std::move(backend)), fault_(std::move(fault)) {}

  absl::StatusOr<colltest::worker::v1::InitReply> Init(
      const colltest::worker::v1::InitRequest& request) override {
    return backend_->Init(request);
  }
  absl::Status Connect(const colltest::worker::v1::ConnectRequest& request) override {
    return backend_->Connect(request);
  }
  absl::StatusOr<colltest::v1::RankResult> RunCase(
      const colltest::worker::v1::CaseRequest& request) override {
    if (!request.fault().empty()) return backend_->RunCase(request);
    colltest::worker::v1::CaseRequest faulted = request;
    faulted.set_fault(fault_);
    return backend_->RunCase(faulted);
  }
  absl::Status Reset() override { return backend_->Reset(); }
  void Release() override { backend_->Release(); }

 private:
  std::unique_ptr<Backend> backend_;
  std::string fault_;
};

}  // namespace

std::unique_ptr<Backend> WithTestFaultFromEnvironment(std::unique_ptr<Backend> backend) {
  const char* fault = std::getenv("COLLTEST_TEST_FAULT");
  if (fault == nullptr || *fault == '\0') return backend;
  std::fprintf(stderr,
               "colltest-worker: COLLTEST_TEST_FAULT=%s: every case without a fault gets it\n",
               fault);
  return std::make_unique<StandingFaultBackend>(std::move(backend), fault);
}

}  // namespace colltest::worker
