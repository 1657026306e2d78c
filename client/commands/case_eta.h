// The ETA of a sweep from the measured wall time of its finished cases, weighted by what each
// remaining case is expected to cost: a case of m x n elements per rank is expected to take
// a + b x (m x n) seconds, fitted over the finished cases of its kernel (variant or plugin, mode
// and epilogue). Counting cases instead would say "2 s" at [4/8] of a sweep whose last 4 cases are
// the big ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "colltest/v1/colltest.pb.h"

namespace colltest::client {

class CaseEta {
 public:
  // The cases `spec` expands to, in the order colltestd runs them (n, m, kernel, mode, epilogue).
  explicit CaseEta(const v1::SweepSpec& spec);

  // Cases the spec expands to: the estimate stands only while it equals the server's total.
  size_t planned() const { return planned_; }

  // Case `c` finished, `took` after the one before it (or after the run started).
  void Finished(const v1::CaseResult& c, absl::Duration took);

  // The time the cases not yet finished are expected to take; nullopt before the first case.
  std::optional<absl::Duration> Remaining() const;

 private:
  struct Pending {
    std::string kernel;
    uint32_t m = 0;
    uint32_t n = 0;
  };
  struct Sample {
    double size = 0;  // m x n
    double seconds = 0;
  };
  // a + b x size, from `samples`; `shape` (the fit of every kernel) gives the slope when the
  // samples are all of one size.
  struct Fit {
    double a = 0;
    double b = 0;
    double At(double size) const { return a + b * size; }
  };
  static std::optional<Fit> FitLine(const std::vector<Sample>& samples);
  static Fit FitKernel(const std::vector<Sample>& samples, const std::optional<Fit>& shape);

  size_t planned_ = 0;
  std::vector<Pending> pending_;
  std::map<std::string, std::vector<Sample>> by_kernel_;
  std::vector<Sample> all_;
};

// A case's kernel as the ETA groups cases: the variant asked for (or plugin), mode and epilogue.
std::string KernelKey(const v1::CaseResult& c);

}  // namespace colltest::client
