#include "worker/plugins/plugin_launch.h"

#include "absl/strings/str_cat.h"

namespace colltest::worker::plugins {

colltest_launch_v1_t LaunchOf(const CallBuffers& b, const colltest::worker::v1::CaseRequest& req,
                              const QuantPlan& quant, float eps, uint32_t m, uint64_t call,
                              void* stream) {
  colltest_launch_v1_t l{};
  l.input = b.input;
  l.residual_in = b.residual_in;
  l.residual_out = b.residual_out;
  l.weight = b.weight;
  // A quantising epilogue without keep_normed replaces the normed output: nothing checks it.
  l.out = quant.writes_out() ? b.out : nullptr;
  l.eps = eps;
  l.m = m;
  l.n = req.n();
  l.dtype = static_cast<uint32_t>(req.dtype());
  l.epilogue = static_cast<uint32_t>(req.epilogue() == colltest::v1::EPILOGUE_UNSPECIFIED
                                         ? colltest::v1::EPILOGUE_NONE
                                         : req.epilogue());
  if (quant.scheme.has_value()) {
    l.quant_out = b.codes;
    if (*quant.scheme == QuantScheme::kFp8Token) l.scales = b.row_scales;
    if (*quant.scheme == QuantScheme::kNvfp4) l.scales = b.block_scales;
    if (*quant.scheme == QuantScheme::kFp8Tensor) l.quant_scale = quant.fp8_scale;
    if (*quant.scheme == QuantScheme::kNvfp4) l.quant_scale = quant.nvfp4_global_scale;
    if (quant.is_fp8()) {
      l.fp8_format =
          quant.format == Fp8Format::kE4m3fnuz ? COLLTEST_FP8_E4M3FNUZ : COLLTEST_FP8_E4M3FN;
    }
  }
  l.call = call;
  l.stream = stream;
  return l;
}

CaseRuntime::KernelEnd EndOf(const std::string& variant, const char* entry, int64_t call,
                             const EntryResult& r) {
  const bool unsupported = r.status == COLLTEST_UNSUPPORTED;
  CaseRuntime::KernelEnd end;
  end.status =
      unsupported ? colltest::v1::CASE_STATUS_UNSUPPORTED : colltest::v1::CASE_STATUS_ERROR;
  end.message = EntryMessage(variant, entry, call, r);
  return end;
}

CaseRuntime::KernelEnd MissingRankEnd(const std::string& variant, uint32_t rank) {
  CaseRuntime::KernelEnd end;
  end.status = colltest::v1::CASE_STATUS_HANG;
  end.phase = "fault: missing_rank";
  end.message = absl::StrCat("fault injected: rank ", rank, " never launched ", variant);
  return end;
}

}  // namespace colltest::worker::plugins
