#!/usr/bin/python3
"""docs/rooms.md's rule "vendor differences live in worker/backends/gpu/gpu_runtime.h": no other
source file of a room branches on CUDA against HIP, except the files named in ALLOWED with the
reason they may.

A branch is a use of a vendor macro: COLLTEST_GPU_VENDOR_HIP, __HIPCC__, __HIP_PLATFORM_*,
__HIP_DEVICE_COMPILE__, HIP_VERSION*, __CUDACC__, __CUDA_ARCH__, CUDART_VERSION. Feature macros
(COLLTEST_GPU_HAVE_NVML, COLLTEST_HAVE_NCCL) say whether a library was found and are not vendor
branches. Exit 1 naming file:line for each branch elsewhere.

Usage: vendor_branches_test.py [--repo DIR] [--self-test]
"""

import argparse
import os
import re
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "scripts"))
sys.dont_write_bytecode = True  # nothing written into the source tree
import check_includes  # noqa: E402  (the rooms and their source files, read one way)

VENDOR_MACRO = re.compile(r"\b(COLLTEST_GPU_VENDOR_HIP|__HIPCC__|__HIP_PLATFORM_\w+|"
                          r"__HIP_DEVICE_COMPILE__|HIP_VERSION\w*|__CUDACC__|__CUDA_ARCH__|"
                          r"CUDART_VERSION)\b")
ALLOWED = {
    # The portability header itself: every CUDA/HIP difference as a named primitive.
    "worker/backends/gpu/gpu_runtime.h",
    # Whether a device compiler is compiling (either vendor's): __host__ __device__ or nothing.
    "worker/numerics/host_device.h",
    # The collective library's header: <nccl.h> or <rccl/rccl.h>, the same API.
    "worker/backends/gpu/nccl_group.cc",
}


def branches(repo):
    """(relative path, line number, macro) of every vendor branch in a room's source file outside
    ALLOWED; the rooms and their files are the ones scripts/check_includes.py checks."""
    rooms, sources = check_includes.walk(repo)
    found = []
    for relative in sources:
        if relative in ALLOWED or check_includes.room_of(relative, rooms) is None:
            continue
        with open(os.path.join(repo, relative), encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                match = VENDOR_MACRO.search(line)
                if match:
                    found.append((relative, number, match.group(1)))
    return found


def self_test():
    """A branch outside the allowed files is reported; one inside is not."""
    with tempfile.TemporaryDirectory() as repo:
        os.makedirs(os.path.join(repo, "worker/backends/gpu"))
        with open(os.path.join(repo, "worker/backends/gpu/README.md"), "w") as f:
            f.write("# worker/backends/gpu/ — GPU\n\nTargets: none\nMay include: nothing\n")
        with open(os.path.join(repo, "worker/backends/gpu/gpu_runtime.h"), "w") as f:
            f.write("#if COLLTEST_GPU_VENDOR_HIP\n#endif\n")
        with open(os.path.join(repo, "worker/backends/gpu/gpu_backend.cc"), "w") as f:
            f.write("const char* k = COLLTEST_GPU_VENDOR_HIP ? \"HIP\" : \"CUDA\";\n")
        found = branches(repo)
    expected = [("worker/backends/gpu/gpu_backend.cc", 1, "COLLTEST_GPU_VENDOR_HIP")]
    if found != expected:
        print(f"self-test FAILED: {found} != {expected}")
        return 1
    print("vendor_branches self-test: OK")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", default=REPO)
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    found = branches(args.repo)
    for path, number, macro in found:
        print(f"{path}:{number}: branches on {macro}; vendor differences belong in "
              "worker/backends/gpu/gpu_runtime.h")
    print(f"vendor branches: {len(found)} outside gpu_runtime.h and the allowed files")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
