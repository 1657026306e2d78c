#include "client/commands/case_eta.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/names.h"

namespace colltest::client {
namespace {

double SizeOf(uint32_t m, uint32_t n) { return static_cast<double>(m) * n; }

// UNSPECIFIED mode and epilogue read as eager and none, as the server plans them.
std::string Key(absl::string_view kernel, v1::Mode mode, v1::Epilogue epilogue) {
  if (epilogue == v1::EPILOGUE_UNSPECIFIED) epilogue = v1::EPILOGUE_NONE;
  return absl::StrCat(kernel, " ", common::ModeName(mode), " ", static_cast<int>(epilogue));
}

// The kernels of `spec` as KernelKey names them, in the server's order. Empty modes mean eager,
// empty epilogues none: one case each, as the server plans them.
std::vector<std::string> KernelsOf(const v1::SweepSpec& spec) {
  std::vector<v1::Mode> modes(spec.modes().size());
  std::transform(spec.modes().begin(), spec.modes().end(), modes.begin(),
                 [](int m) { return static_cast<v1::Mode>(m); });
  if (modes.empty()) modes.push_back(v1::MODE_EAGER);
  std::vector<v1::Epilogue> epilogues(spec.epilogues().size());
  std::transform(spec.epilogues().begin(), spec.epilogues().end(), epilogues.begin(),
                 [](int e) { return static_cast<v1::Epilogue>(e); });
  if (epilogues.empty()) epilogues.push_back(v1::EPILOGUE_NONE);
  std::vector<std::string> kernels;
  for (int k = 0; k < spec.variants_size() + spec.plugins_size(); ++k) {
    const std::string name =
        k < spec.variants_size()
            ? common::KernelName(static_cast<v1::Variant>(spec.variants(k)), "")
            : common::KernelName(v1::VARIANT_PLUGIN, spec.plugins(k - spec.variants_size()));
    for (v1::Mode mode : modes) {
      for (v1::Epilogue epilogue : epilogues) kernels.push_back(Key(name, mode, epilogue));
    }
  }
  return kernels;
}

}  // namespace

std::string KernelKey(const v1::CaseResult& c) {
  return Key(common::KernelName(c), c.mode(), c.epilogue());
}

CaseEta::CaseEta(const v1::SweepSpec& spec) {
  const std::vector<std::string> kernels = KernelsOf(spec);
  for (uint32_t n : spec.n()) {
    for (uint32_t m : spec.m()) {
      for (const std::string& k : kernels) pending_.push_back({k, m, n});
    }
  }
  planned_ = pending_.size();
}

void CaseEta::Finished(const v1::CaseResult& c, absl::Duration took) {
  const std::string kernel = KernelKey(c);
  auto it = std::find_if(pending_.begin(), pending_.end(), [&](const Pending& p) {
    return p.kernel == kernel && p.m == c.m() && p.n == c.n();
  });
  if (it != pending_.end()) pending_.erase(it);
  const Sample sample{SizeOf(c.m(), c.n()), std::max(0.0, absl::ToDoubleSeconds(took))};
  by_kernel_[kernel].push_back(sample);
  all_.push_back(sample);
}

std::optional<CaseEta::Fit> CaseEta::FitLine(const std::vector<Sample>& samples) {
  double size = 0, seconds = 0;
  for (const Sample& s : samples) {
    size += s.size;
    seconds += s.seconds;
  }
  const double count = static_cast<double>(samples.size());
  const double mean_size = size / count, mean_seconds = seconds / count;
  double covariance = 0, variance = 0;
  for (const Sample& s : samples) {
    covariance += (s.size - mean_size) * (s.seconds - mean_seconds);
    variance += (s.size - mean_size) * (s.size - mean_size);
  }
  if (variance <= 0) return std::nullopt;  // one size: no slope to read
  // Neither part below 0: a case never gets cheaper as it grows, nor costs less than nothing.
  const double b = std::max(0.0, covariance / variance);
  const double a = mean_seconds - b * mean_size;
  if (a >= 0) return Fit{a, b};
  return Fit{0, seconds / size};
}

CaseEta::Fit CaseEta::FitKernel(const std::vector<Sample>& samples,
                                const std::optional<Fit>& shape) {
  if (std::optional<Fit> own = FitLine(samples)) return *own;
  double seconds = 0;
  for (const Sample& s : samples) seconds += s.seconds;
  const double mean = seconds / static_cast<double>(samples.size());
  const double size = samples.front().size;
  // One size so far: every kernel's fit scaled to this kernel's mean at that size, or, with no
  // slope known at all, a time in proportion to the size.
  if (shape.has_value() && shape->At(size) > 0) {
    const double scale = mean / shape->At(size);
    return Fit{shape->a * scale, shape->b * scale};
  }
  return size > 0 ? Fit{0, mean / size} : Fit{mean, 0};
}

std::optional<absl::Duration> CaseEta::Remaining() const {
  if (pending_.empty()) return absl::ZeroDuration();
  if (all_.empty()) return std::nullopt;
  const std::optional<Fit> shape = FitLine(all_);
  const Fit overall = FitKernel(all_, shape);
  std::map<std::string, Fit> fits;
  double seconds = 0;
  for (const Pending& p : pending_) {
    auto own = by_kernel_.find(p.kernel);
    if (own != by_kernel_.end() && !fits.count(p.kernel)) {
      fits[p.kernel] = FitKernel(own->second, shape);
    }
    const Fit& fit = own == by_kernel_.end() ? overall : fits[p.kernel];
    seconds += fit.At(SizeOf(p.m, p.n));
  }
  return absl::Seconds(seconds);
}

}  // namespace colltest::client
