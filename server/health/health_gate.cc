#include "server/health/health_gate.h"

#include <algorithm>
#include <atomic>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "server/devices/device_users.h"
#include "server/net/caller_key.h"

namespace colltest::server {

namespace v1 = ::colltest::v1;

namespace {

constexpr absl::Duration kMinAnswerMargin = absl::Seconds(1);

// The caller's observer, plus one more reason to stop: the check has not started (its first run
// still waits for devices) when it must give up to answer within the call's deadline. Once any of
// its runs has started, only the caller decides: a check that stopped half-way would report the
// unfinished part as a failure.
class QueueDeadline final : public RunObserver {
 public:
  QueueDeadline(RunObserver& inner, absl::Time give_up_at, std::function<absl::Time()> now,
                std::function<std::string()> describe_holders)
      : inner_(inner),
        give_up_at_(give_up_at),
        now_(std::move(now)),
        describe_holders_(std::move(describe_holders)) {}

  bool ClientGone() override {
    if (inner_.ClientGone()) return true;
    if (started_.load() || now_() < give_up_at_) return false;
    std::lock_guard<std::mutex> lock(mu_);
    // Who holds the devices is worth saying as it was when the check gave up.
    if (!gave_up_) holders_ = describe_holders_();
    gave_up_ = true;
    return true;
  }
  std::string ClientGoneReason() override {
    if (!gave_up()) return inner_.ClientGoneReason();
    return "the call's deadline would pass before the devices were free";
  }
  void OnQueued(const std::string& run_id, uint32_t runs_ahead, uint32_t total) override {
    inner_.OnQueued(run_id, runs_ahead, total);
  }
  void OnStarted(const std::string& run_id, uint32_t total) override {
    started_.store(true);
    inner_.OnStarted(run_id, total);
  }
  void OnCase(const std::string& run_id, const v1::CaseResult& result, uint32_t done,
              uint32_t total) override {
    inner_.OnCase(run_id, result, done, total);
  }

  bool gave_up() const {
    std::lock_guard<std::mutex> lock(mu_);
    return gave_up_;
  }
  std::string holders() const {
    std::lock_guard<std::mutex> lock(mu_);
    return holders_;
  }

 private:
  RunObserver& inner_;
  const absl::Time give_up_at_;
  const std::function<absl::Time()> now_;
  const std::function<std::string()> describe_holders_;
  std::atomic<bool> started_{false};
  mutable std::mutex mu_;
  bool gave_up_ = false;
  std::string holders_;
};

v1::HealthLevel EffectiveLevel(v1::HealthLevel level) {
  return level == v1::HEALTH_LEVEL_UNSPECIFIED ? v1::HEALTH_LEVEL_QUICK : level;
}

}  // namespace

absl::Time GiveUpAt(absl::Time now, absl::Time deadline) {
  if (deadline == absl::InfiniteFuture()) return deadline;
  return deadline - std::max(kMinAnswerMargin, (deadline - now) / 10);
}

HealthGate::HealthGate(Checker check, HoldersFn holders, Options options)
    : check_(std::move(check)),
      holders_(std::move(holders)),
      options_(std::move(options)),
      rate_limit_(options_.health_rate_per_caller, options_.now) {}

HealthGate::Key HealthGate::KeyOf(const v1::HealthRequest& request) const {
  std::vector<uint32_t> devices(request.devices().begin(), request.devices().end());
  if (devices.empty()) devices = options_.all_devices;
  return {devices, EffectiveLevel(request.level()), request.pairs(),
          std::vector<std::string>(request.plugins().begin(), request.plugins().end())};
}

void HealthGate::Stamp(const Key& key, v1::HealthResponse& response) const {
  *response.mutable_machine() = options_.machine;
  response.set_level(static_cast<v1::HealthLevel>(std::get<1>(key)));
}

v1::HealthResponse HealthGate::Busy(const Key& key, const std::string& reason) const {
  v1::HealthResponse response;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = last_.find(key); it != last_.end()) response = it->second;
  }
  response.set_cached(false);
  response.set_busy(true);
  response.set_busy_reason(reason);
  Stamp(key, response);
  return response;
}

absl::StatusOr<v1::HealthResponse> HealthGate::Check(const v1::HealthRequest& request,
                                                     RunObserver& observer, absl::Time deadline,
                                                     const std::string& owner) {
  const Key key = KeyOf(request);
  // A check with a planted fault is a test of the detection, never the machine's verdict.
  const bool remembered = request.fault().empty();
  const absl::Time now = options_.now();
  if (remembered && request.max_verdict_age_ms() > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = last_.find(key);
    if (it != last_.end() && absl::FromUnixMillis(it->second.verdict_unix_ms()) +
                                     absl::Milliseconds(request.max_verdict_age_ms()) >=
                                 now) {
      v1::HealthResponse cached = it->second;
      cached.set_cached(true);
      Stamp(key, cached);
      return cached;
    }
  }
  COLLTEST_RETURN_IF_ERROR(rate_limit_.Take(CallerKey(owner)));
  const std::vector<uint32_t>& devices = std::get<0>(key);
  QueueDeadline watched(observer, GiveUpAt(now, deadline), options_.now, [&] {
    std::vector<std::string> holders = holders_ ? holders_(devices) : std::vector<std::string>();
    return absl::StrCat("devices ", absl::StrJoin(devices, ","), " busy with ",
                        holders.empty() ? "other runs" : absl::StrJoin(holders, ", "));
  });
  absl::StatusOr<v1::HealthResponse> checked = check_(request, watched, owner);
  if (!checked.ok() && watched.gave_up()) {
    return Busy(key, absl::StrCat(watched.holders(),
                                  ": the check could not start before the call's deadline"));
  }
  if (!checked.ok() && IsBusy(checked.status())) {
    return Busy(key, std::string(checked.status().message()));
  }
  if (!checked.ok()) return checked.status();
  checked->set_verdict_unix_ms(absl::ToUnixMillis(options_.now()));
  Stamp(key, *checked);
  if (remembered) {
    std::lock_guard<std::mutex> lock(mu_);
    last_[key] = *checked;
  }
  return checked;
}

}  // namespace colltest::server
