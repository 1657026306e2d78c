#include "worker/backends/cpu/shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace colltest::cpu {
namespace {

absl::Status ErrnoError(const std::string& what, const std::string& name) {
  return absl::InternalError(absl::StrCat(what, " ", name, ": ", std::strerror(errno)));
}

absl::StatusOr<uint8_t*> Map(int fd, size_t bytes, const std::string& name) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return ErrnoError("mmap", name);
  return static_cast<uint8_t*>(p);
}

}  // namespace

ShmSegment::~ShmSegment() { Reset(); }

ShmSegment::ShmSegment(ShmSegment&& other) noexcept { *this = std::move(other); }

ShmSegment& ShmSegment::operator=(ShmSegment&& other) noexcept {
  if (this != &other) {
    Reset();
    name_ = std::move(other.name_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    owner_ = std::exchange(other.owner_, false);
  }
  return *this;
}

void ShmSegment::Reset() {
  if (data_ != nullptr) munmap(data_, size_);
  if (owner_) shm_unlink(name_.c_str());
  data_ = nullptr;
  size_ = 0;
  owner_ = false;
}

absl::StatusOr<ShmSegment> ShmSegment::Create(const std::string& name, size_t bytes) {
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return ErrnoError("shm_open", name);
  ShmSegment seg;
  seg.name_ = name;
  seg.owner_ = true;
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    absl::Status s = ErrnoError("ftruncate", name);
    close(fd);
    shm_unlink(name.c_str());
    return s;
  }
  absl::StatusOr<uint8_t*> p = Map(fd, bytes, name);
  close(fd);
  if (!p.ok()) {
    shm_unlink(name.c_str());
    return p.status();
  }
  seg.data_ = *p;
  seg.size_ = bytes;
  return seg;
}

absl::StatusOr<ShmSegment> ShmSegment::Open(const std::string& name, size_t bytes) {
  int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) return ErrnoError("shm_open", name);
  struct stat st;
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < bytes) {
    close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat("peer segment ", name, " is smaller than the ", bytes, " bytes announced"));
  }
  absl::StatusOr<uint8_t*> p = Map(fd, bytes, name);
  close(fd);
  if (!p.ok()) return p.status();
  ShmSegment seg;
  seg.name_ = name;
  seg.data_ = *p;
  seg.size_ = bytes;
  return seg;
}

}  // namespace colltest::cpu
