// When a Lamport variant's staging must be (re-)armed with sentinels before a call, and which
// bytes of each region: one rule for the cpu backend and the GPU backend, which differ only in how
// they fill a region (a host loop, a kernel). Host-only: the backends decide on the host, before
// they launch anything, and the decision names the request's variant.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>

#include "colltest/v1/colltest.pb.h"
#include "worker/numerics/dtype.h"

namespace colltest::protocol {

// What a staging region (the Lamport staging, or the triple buffer) holds armed: the sentinel of
// `dtype` over its first `bytes` bytes.
struct Armed {
  DType dtype = DType::kBf16;
  size_t bytes = 0;
  // The variant that armed the triple buffer last (lamport_tb or lamport_two_shot).
  colltest::v1::Variant user = colltest::v1::VARIANT_UNSPECIFIED;
};

// Arming to do: fill bytes [from, to) of every region of the variant with the sentinel of the
// call's dtype; the regions then hold `after`.
struct ArmStep {
  size_t from = 0;
  size_t to = 0;
  Armed after;
};

// What a call of `variant` over `bytes` of `dtype` needs armed, given what `armed` holds: nullopt
// when it is armed already.
inline std::optional<ArmStep> NextArming(const Armed& armed, colltest::v1::Variant variant,
                                         DType dtype, size_t bytes) {
  // lamport_tb and lamport_two_shot share the triple buffer but write different parts of it and
  // clear only what they wrote: the first call of the other one re-arms it whole.
  const bool same_user = armed.user == variant || variant == colltest::v1::VARIANT_LAMPORT;
  if (armed.dtype == dtype && armed.bytes >= bytes && same_user) return std::nullopt;
  // A new dtype has a different sentinel: re-arm everything armed so far.
  const size_t from = armed.dtype == dtype && same_user ? armed.bytes : 0;
  const size_t to = std::max(armed.bytes, bytes);
  return ArmStep{from, to, Armed{dtype, to, variant}};
}

}  // namespace colltest::protocol
