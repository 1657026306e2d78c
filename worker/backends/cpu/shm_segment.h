// POSIX shared memory: the cpu backend's stand-in for GPU IPC memory. The segment's name is the
// "IPC handle" that travels through the controller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace colltest::cpu {

class ShmSegment {
 public:
  ShmSegment() = default;
  ~ShmSegment();
  ShmSegment(ShmSegment&& other) noexcept;
  ShmSegment& operator=(ShmSegment&& other) noexcept;

  // Creates (and owns: unlinks on destruction) a zero-filled segment.
  static absl::StatusOr<ShmSegment> Create(const std::string& name, size_t bytes);
  // Maps a peer's segment.
  static absl::StatusOr<ShmSegment> Open(const std::string& name, size_t bytes);

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& name() const { return name_; }

 private:
  void Reset();
  std::string name_;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool owner_ = false;
};

}  // namespace colltest::cpu
