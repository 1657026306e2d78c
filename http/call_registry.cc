#include "http/call_registry.h"

namespace colltest::http {

CallRegistry::Scope::Scope(CallRegistry* registry, grpc::ClientContext* context)
    : registry_(registry), context_(context) {
  absl::MutexLock lock(&registry_->mu_);
  registry_->calls_.insert(context_);
  if (registry_->closed_) context_->TryCancel();
}

CallRegistry::Scope::~Scope() {
  // Under the lock, so that CancelAll never touches a context being destroyed.
  absl::MutexLock lock(&registry_->mu_);
  registry_->calls_.erase(context_);
}

void CallRegistry::CancelAll() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
  for (grpc::ClientContext* context : calls_) context->TryCancel();
}

}  // namespace colltest::http
