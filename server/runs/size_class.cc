#include "server/runs/size_class.h"

#include "common/element_size.h"

namespace colltest::server {

namespace v1 = ::colltest::v1;

uint64_t CaseInputBytes(uint32_t m, uint32_t n, v1::DType dtype) {
  // In 64 bits: two 32-bit factors may overflow 32 bits long before any limit refuses the shape.
  return uint64_t{m} * uint64_t{n} * common::ElementBytes(dtype);
}

absl::string_view SizeClass(uint64_t bytes) {
  constexpr uint64_t kKiB = 1024;
  if (bytes <= 64 * kKiB) return kSizeClasses[0];
  if (bytes <= 1024 * kKiB) return kSizeClasses[1];
  if (bytes <= 8 * 1024 * kKiB) return kSizeClasses[2];
  return kSizeClasses[3];
}

absl::string_view SizeClassOf(const v1::CaseResult& result) {
  return SizeClass(CaseInputBytes(result.m(), result.n(), result.dtype()));
}

}  // namespace colltest::server
