#include "worker/timing_stats.h"

#include <algorithm>

namespace colltest::worker {
namespace {
// Nearest-rank percentile of sorted samples.
double Percentile(const std::vector<double>& sorted, double q) {
  const size_t i = static_cast<size_t>(q * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}
}  // namespace

colltest::v1::TimingStats Summarize(std::vector<double> samples_us) {
  colltest::v1::TimingStats t;
  if (samples_us.empty()) return t;
  std::sort(samples_us.begin(), samples_us.end());
  t.set_median_us(Percentile(samples_us, 0.5));
  t.set_p10_us(Percentile(samples_us, 0.1));
  t.set_p90_us(Percentile(samples_us, 0.9));
  t.set_min_us(samples_us.front());
  t.set_max_us(samples_us.back());
  t.set_samples(static_cast<uint32_t>(samples_us.size()));
  return t;
}

}  // namespace colltest::worker
