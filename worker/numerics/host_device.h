// Lets the numerics headers compile as plain C++ and as CUDA / HIP device code.
#pragma once

#if defined(__CUDACC__) || defined(__HIPCC__)
#define COLLTEST_HD __host__ __device__ __forceinline__
#else
#define COLLTEST_HD inline
#endif
