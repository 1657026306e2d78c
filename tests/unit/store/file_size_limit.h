// A disk that refuses to grow a file, for one test and without root: RLIMIT_FSIZE caps the size
// any file of this process may grow to, and a write past it fails with EFBIG (SIGXFSZ is ignored
// meanwhile). SQLite reports that as SQLITE_IOERR_WRITE, "disk I/O error" (only ENOSPC reads
// "database or disk is full": tests/hostile/full_state_dir_test.py fills a real tmpfs).
#pragma once

#include <signal.h>
#include <sys/resource.h>

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <string>

#include "gtest/gtest.h"

namespace colltest::store::testing {

// While it lives, no file of the process grows past the largest of `files` (as they are now);
// restores the limit and SIGXFSZ's handler when it goes away.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(std::initializer_list<std::string> files) {
    uintmax_t largest = 0;
    for (const std::string& file : files) {
      std::error_code missing;
      const uintmax_t size = std::filesystem::file_size(file, missing);
      if (!missing && size > largest) largest = size;
    }
    EXPECT_EQ(getrlimit(RLIMIT_FSIZE, &saved_), 0);
    old_handler_ = signal(SIGXFSZ, SIG_IGN);
    rlimit capped = saved_;
    capped.rlim_cur = static_cast<rlim_t>(largest);
    EXPECT_EQ(setrlimit(RLIMIT_FSIZE, &capped), 0);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &saved_);
    signal(SIGXFSZ, old_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit saved_{};
  sighandler_t old_handler_ = SIG_DFL;
};

}  // namespace colltest::store::testing
