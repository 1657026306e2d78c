# COLLTEST_GPU=hip with Debian 12's ROCm 5.2.3 (apt: hipcc libamdhip64-dev): the GPU backend's .cu
# sources compiled as HIP by clang++-15. Out of the box enable_language(HIP) fails on Debian (the
# hipcc wrapper is refused, plain clang cannot find the device libraries, hip-lang's config is under
# the multiarch path); the settings below are the workaround of the toolchain notes (section 3).
# No GPU is needed to build; the default architecture is gfx90a (MI200). LLVM 15 knows no gfx942.

if(NOT DEFINED CMAKE_HIP_COMPILER AND NOT DEFINED ENV{HIPCXX})
  find_program(COLLTEST_HIP_CLANG NAMES clang++-15 REQUIRED)
  set(CMAKE_HIP_COMPILER ${COLLTEST_HIP_CLANG} CACHE FILEPATH "HIP compiler (clang, not hipcc)")
endif()
set(COLLTEST_ROCM_MULTIARCH /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE})
if(NOT CMAKE_LIBRARY_ARCHITECTURE)
  set(COLLTEST_ROCM_MULTIARCH /usr/lib/x86_64-linux-gnu)
endif()
# A fake ROCm root whose lib/cmake/hip-lang points at Debian's multiarch copy.
set(_colltest_rocm_shim ${CMAKE_BINARY_DIR}/rocm-shim)
if(NOT EXISTS ${_colltest_rocm_shim}/lib/cmake/hip-lang)
  file(MAKE_DIRECTORY ${_colltest_rocm_shim}/lib/cmake)
  file(CREATE_LINK ${COLLTEST_ROCM_MULTIARCH}/cmake/hip-lang ${_colltest_rocm_shim}/lib/cmake/hip-lang
    SYMBOLIC)
endif()
set(CMAKE_HIP_COMPILER_ROCM_ROOT ${_colltest_rocm_shim} CACHE PATH "")
# The environment reaches CMake's HIP ABI try_compile (amd_comgr, hsa-runtime64, hip).
set(ENV{CMAKE_PREFIX_PATH} "${COLLTEST_ROCM_MULTIARCH}/cmake:$ENV{CMAKE_PREFIX_PATH}")
list(APPEND CMAKE_PREFIX_PATH ${COLLTEST_ROCM_MULTIARCH}/cmake)
set(CMAKE_HIP_FLAGS
  "--rocm-path=/usr --hip-device-lib-path=${COLLTEST_ROCM_MULTIARCH}/amdgcn/bitcode ${CMAKE_HIP_FLAGS}")
if(NOT DEFINED CMAKE_HIP_ARCHITECTURES)
  set(CMAKE_HIP_ARCHITECTURES gfx90a)
endif()
enable_language(HIP)
set(CMAKE_HIP_STANDARD 17)
set(CMAKE_HIP_STANDARD_REQUIRED ON)
set(CMAKE_HIP_EXTENSIONS OFF)
# Host code (.cc, g++) that includes gpu_runtime.h: HIP headers, __HIP_PLATFORM_AMD__, libamdhip64.
find_package(hip CONFIG REQUIRED)
# RCCL is optional: Debian 12 has no package. Without it the nccl variant answers UNSUPPORTED.
find_library(COLLTEST_NCCL_LIBRARY rccl)
find_path(COLLTEST_NCCL_INCLUDE rccl/rccl.h)
