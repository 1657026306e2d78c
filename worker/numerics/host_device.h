// Lets the numerics headers compile as plain C++ and as CUDA / HIP device code.
#pragma once

#if defined(__CUDACC__) || defined(__HIPCC__)
#define COLLTEST_HD __host__ __device__ __forceinline__
#else
#define COLLTEST_HD inline
#endif

namespace colltest {

// a * b rounded once. A device compiler contracts a * b + c into one fma by default (nvcc's
// -fmad=true, hipcc's -ffp-contract=fast), which rounds once where the host rounds twice; a
// product that must be the host's bit for bit goes through this, whatever follows it.
COLLTEST_HD float MulRn(float a, float b) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

}  // namespace colltest
