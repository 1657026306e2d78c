// Owning handles of the GPU runtime's resources (device memory, host-mapped memory, IPC mappings,
// streams, events, graphs and graph executables): each releases what it holds when it goes, so
// that no error path of the backend leaks one and no release is written by hand.
#pragma once

#include <cstddef>
#include <utility>

#include "worker/backends/gpu/gpu_runtime.h"

namespace colltest::gpu {

// Holds one handle of type T (a pointer or an opaque pointer-like runtime type; T{} is none) and
// calls Destroy on it once. A release error is ignored: there is nobody left to report it to.
template <class T, auto Destroy>
class UniqueHandle {
 public:
  UniqueHandle() = default;
  explicit UniqueHandle(T h) : h_(h) {}
  ~UniqueHandle() { reset(); }
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;
  UniqueHandle(UniqueHandle&& o) noexcept : h_(std::exchange(o.h_, T{})) {}
  UniqueHandle& operator=(UniqueHandle&& o) noexcept {
    if (this != &o) reset(std::exchange(o.h_, T{}));
    return *this;
  }

  T get() const { return h_; }
  explicit operator bool() const { return h_ != T{}; }
  void reset(T h = T{}) {
    if (h_ != T{}) (void)Destroy(h_);
    h_ = h;
  }

 private:
  T h_{};
};

namespace handles_internal {
template <class T>
Error FreeDevice(T* p) {
  return Free(p);
}
template <class T>
Error FreeHostMapped(T* p) {
  return FreeHost(p);
}
template <class T>
Error CloseIpc(T* p) {
  return IpcCloseMemHandle(p);
}
}  // namespace handles_internal

template <class T>
using DeviceMemory = UniqueHandle<T*, &handles_internal::FreeDevice<T>>;
template <class T>
using HostMappedMemory = UniqueHandle<T*, &handles_internal::FreeHostMapped<T>>;
// A peer's allocation opened through IPC in this process.
template <class T>
using IpcMapping = UniqueHandle<T*, &handles_internal::CloseIpc<T>>;
using StreamHandle = UniqueHandle<Stream, &StreamDestroy>;
using EventHandle = UniqueHandle<Event, &EventDestroy>;
using GraphHandle = UniqueHandle<Graph, &GraphDestroy>;
using GraphExecHandle = UniqueHandle<GraphExec, &GraphExecDestroy>;

// Each creator fills *out only on success (releasing what it held before).
template <class T>
Error AllocateDevice(size_t bytes, DeviceMemory<T>* out) {
  void* p = nullptr;
  const Error e = Malloc(&p, bytes);
  if (e == kSuccess) out->reset(static_cast<T*>(p));
  return e;
}
template <class T>
Error AllocateHostMapped(size_t bytes, HostMappedMemory<T>* out) {
  void* p = nullptr;
  const Error e = HostAllocMapped(&p, bytes);
  if (e == kSuccess) out->reset(static_cast<T*>(p));
  return e;
}
template <class T>
Error OpenIpc(const IpcMemHandle& handle, IpcMapping<T>* out) {
  void* p = nullptr;
  const Error e = IpcOpenMemHandle(&p, handle);
  if (e == kSuccess) out->reset(static_cast<T*>(p));
  return e;
}
inline Error CreateStream(StreamHandle* out) {
  Stream s = nullptr;
  const Error e = StreamCreate(&s);
  if (e == kSuccess) out->reset(s);
  return e;
}
inline Error CreateEvent(EventHandle* out) {
  Event ev = nullptr;
  const Error e = EventCreate(&ev);
  if (e == kSuccess) out->reset(ev);
  return e;
}
// Ends the capture open on `s`; *out holds what it captured.
inline Error EndCaptureInto(Stream s, GraphHandle* out) {
  Graph g = nullptr;
  const Error e = EndCapture(s, &g);
  if (e == kSuccess) out->reset(g);
  return e;
}
inline Error Instantiate(const GraphHandle& graph, GraphExecHandle* out) {
  GraphExec exec = nullptr;
  const Error e = GraphInstantiate(&exec, graph.get());
  if (e == kSuccess) out->reset(exec);
  return e;
}

}  // namespace colltest::gpu
