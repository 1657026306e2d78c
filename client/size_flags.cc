#include "client/size_flags.h"

#include "absl/status/status.h"

namespace colltest::client {

absl::StatusOr<std::vector<uint32_t>> ResolveRows(const SweepFlags& flags,
                                                  const std::vector<uint32_t>& n,
                                                  v1::DType dtype) {
  (void)flags;
  (void)n;
  (void)dtype;
  return absl::UnimplementedError("--bytes: not implemented yet");
}

}  // namespace colltest::client
