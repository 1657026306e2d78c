// The template instantiations the collective kernels exist in, and the one way a launch or an
// occupancy query maps run-time values onto them: DispatchWorld, DispatchDtype,
// DispatchWorldDtype and DispatchWorldDtypePacks. A variant's launch and its occupancy query both
// go through them, so they agree on what exists; a value no kernel is instantiated for gets one
// answer, Unsupported, naming the parameter and the values that exist. Plain C++ without GPU
// headers, so that host tests check it on a machine without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "worker/numerics/dtype.h"

namespace colltest::gpu {

// The values one kernel template parameter is instantiated for.
template <class T, T... V>
struct ValueList {};
// One value as a type: what a dispatched callback receives (read it as `decltype(w)::value`).
template <auto V>
struct Constant {
  static constexpr auto value = V;
};

// The only lists of instantiated values: each kernel family is instantiated for every value (pair,
// triple) of the lists its launch dispatches on.
using KernelWorlds = ValueList<uint32_t, 2, 4, 8>;
using KernelDtypes = ValueList<DType, DType::kBf16, DType::kFp16, DType::kFp32>;
// lamport_tb's packs per thread (TbPacksPerThread below picks one).
using KernelPacksPerThread = ValueList<uint32_t, 1, 2, 4, 8>;
// Every kernel that ends in the norm exists without and with the quantising epilogue (kQuant), so
// that a call without epilogue runs a kernel with none of its code. Present in every kernel behind
// a branch never taken, the epilogue cost up to 13 % kernel time inlined and up to 61 % called out
// of line, on one H200 with W = 2 ranks sharing it
// (bench/results/2026-12-02_h200x1_cuda_ab_epilogue_code).
using KernelEpilogues = ValueList<bool, false, true>;

template <class T, T... V>
constexpr bool Contains(ValueList<T, V...>, T v) {
  return ((v == V) || ...);
}

constexpr bool SupportedWorld(uint32_t world) { return Contains(KernelWorlds{}, world); }
constexpr bool SupportedDtype(DType dtype) { return Contains(KernelDtypes{}, dtype); }
constexpr bool SupportedPacksPerThread(uint32_t packs) {
  return Contains(KernelPacksPerThread{}, packs);
}

// ---- lamport_tb's packs per thread: what picks the third dispatched parameter

// A row is held in registers: at most this many 16-byte packs per thread.
inline constexpr uint32_t kMaxRowPacks = 8;

// lamport_tb's block shape (kernels_lamport_tb.cu). A thread owns one 16-byte pack of each row
// where a row has at most kMaxTbThreads packs, else the fewest of 1, 2, 4 or 8 that fit: its row
// stays in registers without the spills of a fixed 512-thread block holding up to 8 packs.
inline constexpr uint32_t kMaxTbThreads = 1024;
// Packs per thread for rows of `row_packs` packs at `threads` threads: 1, 2, 4 or 8; 0 when a row
// does not fit.
constexpr uint32_t TbPacksPerThread(uint32_t row_packs, uint32_t threads) {
  if (threads == 0) return 0;
  const uint32_t need = (row_packs + threads - 1) / threads;
  for (uint32_t p = 1; p <= kMaxRowPacks; p *= 2) {
    if (need <= p) return p;
  }
  return 0;
}
// The thread count for rows of `row_packs` packs: the fewest packs per thread that keep a block
// within kMaxTbThreads, rounded up to whole warps.
constexpr uint32_t TbThreads(uint32_t row_packs, uint32_t warp) {
  uint32_t p = 1;
  while (p < kMaxRowPacks && (row_packs + p - 1) / p > kMaxTbThreads) p *= 2;
  const uint32_t t = (row_packs + p - 1) / p;
  return t < warp ? warp : (t + warp - 1) / warp * warp;
}
// Every count TbPacksPerThread can pick has a kernel.
constexpr bool EveryTbPacksPerThreadInstantiated() {
  for (uint32_t p = 1; p <= kMaxRowPacks; p *= 2) {
    if (!SupportedPacksPerThread(p)) return false;
  }
  return true;
}
static_assert(EveryTbPacksPerThreadInstantiated());

// ---- The answer for what has no kernel

enum class KernelParam : uint8_t { kWorld, kDtype, kPacksPerThread };

// A run-time value no kernel is instantiated for: nothing was launched or queried.
struct Unsupported {
  KernelParam param;
  uint32_t value;
};
constexpr bool operator==(const Unsupported& a, const Unsupported& b) {
  return a.param == b.param && a.value == b.value;
}

namespace dispatch_internal {

inline void AppendValue(std::string& s, uint32_t v) { s += std::to_string(v); }
inline void AppendValue(std::string& s, DType v) { s += DTypeName(v); }

template <class T, T... V>
std::string ListText(ValueList<T, V...>) {
  std::string s;
  ((s += s.empty() ? "" : ", ", AppendValue(s, V)), ...);
  return s;
}

// Keeps a parameter out of deduction: the list alone fixes T, and the value converts to it.
template <class T>
struct Same {
  using type = T;
};

// f(Constant<V>{}) for the V of the list that equals `v`; Unsupported{param, v} when none does.
// Every value of the list instantiates f, so every listed kernel is compiled.
template <class T, T First, T... Rest, class F>
auto Pick(ValueList<T, First, Rest...>, KernelParam param, typename Same<T>::type v, F& f) {
  using Status = decltype(f(Constant<First>{}));
  static_assert(std::is_constructible_v<Status, Unsupported>,
                "a dispatched callback returns a status that can say Unsupported (KernelStatus)");
  if (v == First) return f(Constant<First>{});
  if constexpr (sizeof...(Rest) == 0) {
    return Status(Unsupported{param, static_cast<uint32_t>(v)});
  } else {
    return Pick(ValueList<T, Rest...>{}, param, v, f);
  }
}

}  // namespace dispatch_internal

// "world = 3: kernels are instantiated for world 2, 4, 8 only".
inline std::string UnsupportedText(const Unsupported& u) {
  using dispatch_internal::ListText;
  switch (u.param) {
    case KernelParam::kWorld:
      return "world = " + std::to_string(u.value) + ": kernels are instantiated for world " +
             ListText(KernelWorlds{}) + " only";
    case KernelParam::kDtype:
      return "dtype = " + std::to_string(u.value) + ": kernels are instantiated for dtype " +
             ListText(KernelDtypes{}) + " only";
    case KernelParam::kPacksPerThread:
      return "packs per thread = " + std::to_string(u.value) +
             ": lamport_tb is instantiated for packs per thread " +
             ListText(KernelPacksPerThread{}) + " only";
  }
  return "unknown kernel parameter";
}

// ---- Dispatch. `f` gets one Constant per dispatched parameter and returns a status constructible
// from Unsupported (KernelStatus, kernels.h); the parameters are checked in the order named, the
// first one without a kernel is the one the answer names.

template <class F>
auto DispatchWorld(uint32_t world, F&& f) {
  return dispatch_internal::Pick(KernelWorlds{}, KernelParam::kWorld, world, f);
}

template <class F>
auto DispatchDtype(DType dtype, F&& f) {
  return dispatch_internal::Pick(KernelDtypes{}, KernelParam::kDtype, dtype, f);
}

template <class F>
auto DispatchWorldDtype(uint32_t world, DType dtype, F&& f) {
  return DispatchWorld(
      world, [&](auto w) { return DispatchDtype(dtype, [&](auto d) { return f(w, d); }); });
}

// f(Constant<quantising>{}): both values have kernels, so there is no Unsupported answer.
template <class F>
auto DispatchEpilogue(bool quantising, F&& f) {
  return quantising ? f(Constant<true>{}) : f(Constant<false>{});
}

template <class F>
auto DispatchWorldDtypeEpilogue(uint32_t world, DType dtype, bool quantising, F&& f) {
  return DispatchWorldDtype(world, dtype, [&](auto w, auto d) {
    return DispatchEpilogue(quantising, [&](auto q) { return f(w, d, q); });
  });
}

template <class F>
auto DispatchWorldDtypePacks(uint32_t world, DType dtype, uint32_t packs_per_thread, F&& f) {
  return DispatchWorldDtype(world, dtype, [&](auto w, auto d) {
    auto with_packs = [&](auto p) { return f(w, d, p); };
    return dispatch_internal::Pick(KernelPacksPerThread{}, KernelParam::kPacksPerThread,
                                   packs_per_thread, with_packs);
  });
}

// f(Constant<V>{}) for every value of a list, in order (occupancy over every instantiation).
template <class T, T... V, class F>
void ForEachValue(ValueList<T, V...>, F&& f) {
  (f(Constant<V>{}), ...);
}

}  // namespace colltest::gpu
