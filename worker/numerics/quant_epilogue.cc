#include "worker/numerics/quant_epilogue.h"

#include <cstdint>
#include <vector>

#include "worker/numerics/fp4.h"
#include "worker/numerics/fp8.h"

namespace colltest {

const char* QuantSchemeName(QuantScheme s) {
  switch (s) {
    case QuantScheme::kFp8Token:
      return "fp8_token";
    case QuantScheme::kFp8Tensor:
      return "fp8_tensor";
    case QuantScheme::kNvfp4:
      return "nvfp4";
  }
  return "unknown";
}

float AbsMax(const float* y, uint64_t count) {
  float amax = 0.0f;
  for (uint64_t i = 0; i < count; ++i) amax = AbsMaxStep(amax, y[i]);
  return amax;
}

float ScaledElement(const QuantizedRow& row, const float* y, uint32_t i) {
  switch (row.scheme) {
    case QuantScheme::kFp8Token:
      return Fp8TokenScaled(y[i], row.scale);
    case QuantScheme::kFp8Tensor:
      return Fp8TensorScaled(y[i], Fp8TensorInverse(row.scale));
    case QuantScheme::kNvfp4:
      return Nvfp4Scaled(y[i], Nvfp4OutputScale(row.block_scales[i / kNvfp4BlockElems], row.scale));
  }
  return 0.0f;
}

uint8_t EncodeElement(const QuantizedRow& row, float scaled) {
  return row.scheme == QuantScheme::kNvfp4 ? EncodeE2m1(scaled) : EncodeFp8(row.format, scaled);
}

float DecodeElement(const QuantizedRow& row, uint8_t code) {
  return row.scheme == QuantScheme::kNvfp4 ? DecodeE2m1(code) : DecodeFp8(row.format, code);
}

double DequantizeElement(const QuantizedRow& row, uint32_t i) {
  const double value = DecodeElement(row, row.codes[i]);
  if (row.scheme != QuantScheme::kNvfp4) return value * row.scale;
  const double sf = DecodeFp8(Fp8Format::kE4m3fn, row.block_scales[i / kNvfp4BlockElems]);
  return value * sf / row.scale;
}

namespace {

void EncodeRow(QuantizedRow& row, const float* y, uint32_t n) {
  row.codes.resize(n);
  for (uint32_t i = 0; i < n; ++i) row.codes[i] = EncodeElement(row, ScaledElement(row, y, i));
}

}  // namespace

QuantizedRow QuantizeFp8TokenRow(const float* y, uint32_t n, Fp8Format format, float fmax) {
  QuantizedRow row;
  row.scheme = QuantScheme::kFp8Token;
  row.format = format;
  row.scale = Fp8TokenScale(AbsMax(y, n), fmax > 0 ? fmax : Fp8MaxFinite(format));
  EncodeRow(row, y, n);
  return row;
}

QuantizedRow QuantizeFp8TensorRow(const float* y, uint32_t n, Fp8Format format, float scale) {
  QuantizedRow row;
  row.scheme = QuantScheme::kFp8Tensor;
  row.format = format;
  row.scale = scale;
  EncodeRow(row, y, n);
  return row;
}

QuantizedRow QuantizeNvfp4Row(const float* y, uint32_t n, float global_scale) {
  QuantizedRow row;
  row.scheme = QuantScheme::kNvfp4;
  row.scale = global_scale;
  for (uint32_t begin = 0; begin < n; begin += kNvfp4BlockElems) {
    const uint32_t count = n - begin < kNvfp4BlockElems ? n - begin : kNvfp4BlockElems;
    row.block_scales.push_back(Nvfp4BlockScaleCode(AbsMax(y + begin, count), global_scale));
  }
  EncodeRow(row, y, n);
  return row;
}

std::vector<uint8_t> PackNvfp4(const std::vector<uint8_t>& codes) {
  std::vector<uint8_t> packed((codes.size() + 1) / 2, 0);
  for (size_t i = 0; i < codes.size(); i += 2) {
    packed[i / 2] = PackE2m1Pair(codes[i], i + 1 < codes.size() ? codes[i + 1] : 0);
  }
  return packed;
}

std::vector<uint8_t> UnpackNvfp4(const std::vector<uint8_t>& packed, uint32_t n) {
  std::vector<uint8_t> codes(n);
  for (uint32_t i = 0; i < n; ++i) codes[i] = PackedE2m1At(packed.data(), i);
  return codes;
}

}  // namespace colltest
