#include "worker/backends/cpu/shm_workspaces.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "worker/backends/cpu/shm_segment.h"

namespace colltest::cpu {
namespace {

class ShmRegion final : public worker::plugins::WorkspaceRegion {
 public:
  explicit ShmRegion(ShmSegment segment) : segment_(std::move(segment)) {}
  void* data() const override { return segment_.data(); }

 private:
  ShmSegment segment_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<worker::plugins::WorkspaceRegion>> ShmWorkspaces::Allocate(
    const std::string& name, uint64_t bytes, colltest::worker::v1::BufferHandle& handle) {
  // "plugin:oneshot" -> "<base>.plugin_oneshot": a segment name holds no second slash or colon.
  const std::string segment_name =
      absl::StrCat(base_, ".", absl::StrReplaceAll(name, {{":", "_"}}));
  absl::StatusOr<ShmSegment> segment = ShmSegment::Create(segment_name, bytes);
  if (!segment.ok()) return segment.status();
  handle.set_handle(segment_name);
  handle.set_bytes(bytes);
  return std::make_unique<ShmRegion>(*std::move(segment));
}

absl::StatusOr<std::unique_ptr<worker::plugins::WorkspaceRegion>> ShmWorkspaces::Open(
    const colltest::worker::v1::BufferHandle& handle) {
  absl::StatusOr<ShmSegment> segment = ShmSegment::Open(handle.handle(), handle.bytes());
  if (!segment.ok()) return segment.status();
  return std::make_unique<ShmRegion>(*std::move(segment));
}

}  // namespace colltest::cpu
