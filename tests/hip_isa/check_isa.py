#!/usr/bin/python3
"""Checks the gfx942/gfx950 assembly of each memory primitive of gpu_runtime.h.

Compiles tests/hip_isa/primitives_probe.cu for each architecture (device code only, -S, with
clang-22 and ROCm 5.2's headers, as scripts/compile_gpu.sh does for the kernels) and checks every
probe kernel for the instruction sequence that AMDGPU's memory model (LLVM AMDGPUUsage, "Memory Model
GFX942", code sequence table) gives the primitive's promise. See docs/hip.md.

  check_isa.py                  compile and check gfx942 and gfx950
  check_isa.py --asm FILE.s     check an assembly file as it is
  check_isa.py --self-test      also check that broken assembly is rejected

Exit status: 0 pass, 1 a primitive is wrong, 77 skipped (no clang++-22 or no HIP headers) unless
--require, with which a missing compiler fails.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROBE = os.path.join(ROOT, "tests", "hip_isa", "primitives_probe.cu")
# The flags of scripts/compile_gpu.sh's hip-mi compile: clang-22 with ROCm 5.2's headers and no
# device libraries (docs/hip.md says why each is needed).
HIP_MI_FLAGS = ["-std=c++17", "-x", "hip", "--rocm-path=/usr", "-nogpulib",
                "-D__AMDGCN_WAVEFRONT_SIZE=64", "-O3", "--cuda-device-only", "-S"]

# Building blocks. Each names one instruction; a line matches when the instruction and its cache
# policy bits are as stated (nothing more, nothing less, where that matters).
SCOPE_BITS = r"\b(sc0|sc1|nt)\b"


def vmem(op, width, bits):
    """A global or flat memory instruction with exactly the cache bits `bits` ('' for none)."""
    head = rf"^(global|flat)_{op}_{width}\s"
    if not bits:
        return rf"{head}(?!.*{SCOPE_BITS})"
    return rf"{head}.*\s{bits}$"


WAIT_VM = r"^s_waitcnt\s.*vmcnt\(0\)"
ANY_LOAD = r"^(s|global|flat)_load_dword"

# Per probe kernel: the instructions that must appear in this order (other instructions may lie
# between them), and instructions that must not appear at all.
RULES = {
    # Polled Lamport slot: one 16-byte load at system scope (past the vector L1; sc0 sc1), never a
    # streaming-hint-only load (nt) the L1 may answer, never a scalar load.
    "probe_load_volatile16": ([vmem("load", "dwordx4", "sc0 sc1"), WAIT_VM],
                              [vmem("load", "dwordx4", "nt")]),
    "probe_load_shared16": ([vmem("load", "dwordx4", "sc0 sc1")], []),
    "probe_store16": ([vmem("store", "dwordx4", "")], []),
    # Streaming store: nt and no scope bits (gfx942's row of the table; gfx940 added sc0 sc1).
    "probe_store_nontemporal16": ([vmem("store", "dwordx4", "nt")], []),
    "probe_load_volatile32": ([vmem("load", "dword", "sc0 sc1"), WAIT_VM], []),
    "probe_store_volatile32": ([vmem("store", "dword", "sc0 sc1"), WAIT_VM], []),
    # Acquire at system scope: the load, its completion, then the invalidate, then later loads.
    "probe_load_acquire_sys": ([vmem("load", "dword", "sc0 sc1"), WAIT_VM, r"^buffer_inv sc0 sc1$",
                                ANY_LOAD], []),
    # Release at system scope: earlier stores written back (wbl2 sc0 sc1) and completed before the
    # flag store, itself at system scope.
    "probe_store_release_sys": ([vmem("store", "dword", ""), r"^buffer_wbl2 sc0 sc1$", WAIT_VM,
                                 vmem("store", "dword", "sc0 sc1")], []),
    "probe_store_relaxed_sys": ([vmem("store", "dword", "sc0 sc1")],
                                [r"^buffer_wbl2", r"^buffer_inv"]),
    "probe_fence_system": ([vmem("store", "dword", ""), r"^buffer_wbl2 sc0 sc1$", WAIT_VM,
                            r"^buffer_inv sc0 sc1$", ANY_LOAD], [r"^s_(swap|set)pc"]),
    "probe_fence_device": ([vmem("store", "dword", ""), r"^buffer_wbl2 sc1$", WAIT_VM,
                            r"^buffer_inv sc1$", ANY_LOAD], [r"^s_(swap|set)pc"]),
    "probe_global_timer": ([r"^s_memrealtime\s"], []),
}


def functions(asm):
    """Kernel name -> its instruction lines (comments and directives removed)."""
    out, name = {}, None
    for raw in asm.splitlines():
        line = raw.split(";", 1)[0].strip()
        label = re.match(r"^([A-Za-z_][\w.]*):$", line)
        if label and label.group(1) in RULES:
            name = label.group(1)
            out[name] = []
        elif name and (line.startswith(".Lfunc_end") or line == "s_endpgm"):
            name = None
        elif name and line and not line.startswith(".") and not line.endswith(":"):
            out[name].append(line)
    return out


def check_function(name, lines):
    """Problems of one kernel's instructions against its rule (empty: it is right)."""
    sequence, forbidden = RULES[name]
    problems, at = [], 0
    for pattern in sequence:
        hit = next((i for i in range(at, len(lines)) if re.search(pattern, lines[i])), None)
        if hit is None:
            problems.append(f"expected /{pattern}/ after line {at} of {len(lines)}")
            break
        at = hit + 1
    for pattern in forbidden:
        problems += [f"forbidden /{pattern}/: {l}" for l in lines if re.search(pattern, l)]
    return problems


def check_asm(asm, label):
    """Prints a verdict per kernel; returns the number of wrong kernels."""
    found, wrong = functions(asm), 0
    for name in RULES:
        lines = found.get(name)
        problems = ["kernel missing from the assembly"] if lines is None else check_function(
            name, lines)
        if problems:
            wrong += 1
            print(f"FAIL {label} {name}: " + "; ".join(problems))
            for l in lines or []:
                print(f"       {l}")
        else:
            print(f"ok   {label} {name}")
    return wrong


# Breakages the checker must reject: (kernel, what the broken code would emit instead).
MUTATIONS = [
    ("probe_load_volatile16", lambda l: l.replace(" sc0 sc1", " nt")),  # a nontemporal load
    ("probe_store_release_sys", lambda l: "" if l.startswith("buffer_wbl2") else l),  # relaxed
    ("probe_load_acquire_sys", lambda l: "" if l.startswith("buffer_inv") else l),  # no invalidate
    ("probe_store_nontemporal16", lambda l: l.replace(" nt", "")),  # a plain store
    ("probe_fence_system", lambda l: l.replace("buffer_inv sc0 sc1", "buffer_inv sc1")),  # agent
]


def self_test(asm):
    """Each mutation applied to the good assembly must make its kernel fail; returns failures."""
    found, missed = functions(asm), 0
    for name, mutate in MUTATIONS:
        broken = [m for m in (mutate(l) for l in found.get(name, [])) if m]
        if not check_function(name, broken):
            missed += 1
            print(f"FAIL self-test: a broken {name} passes the check")
        else:
            print(f"ok   self-test: a broken {name} is rejected")
    return missed


def compile_probe(clang, arch, workdir):
    out = os.path.join(workdir, f"primitives_probe-{arch}.s")
    cmd = [clang, *HIP_MI_FLAGS, f"--offload-arch={arch}", f"-I{ROOT}", PROBE, "-o", out]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(" ".join(cmd) + "\n" + done.stderr)
        return None
    with open(out) as f:
        return f.read()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clang", default="clang++-22")
    ap.add_argument("--arch", action="append", help="default: gfx942 and gfx950")
    ap.add_argument("--asm", help="check this assembly file instead of compiling")
    ap.add_argument("--keep", help="write the generated assembly into this directory")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--require", action="store_true", help="fail, not skip, without the compiler")
    args = ap.parse_args()

    if args.asm:
        with open(args.asm) as f:
            asms = [(os.path.basename(args.asm), f.read())]
    else:
        clang = shutil.which(args.clang)
        missing = ("no " + args.clang) if not clang else (
            "no HIP headers (/usr/include/hip)" if not os.path.isdir("/usr/include/hip") else None)
        if missing:
            print(f"hip_isa: SKIPPED: {missing}; `bash scripts/setup.sh hip-mi` installs it")
            return 1 if args.require else SKIP
        workdir = args.keep or tempfile.mkdtemp(prefix="colltest-hip-isa-")
        os.makedirs(workdir, exist_ok=True)
        asms = []
        for arch in args.arch or ["gfx942", "gfx950"]:
            asm = compile_probe(clang, arch, workdir)
            if asm is None:
                print(f"FAIL {arch}: the probe does not compile")
                return 1
            asms.append((arch, asm))
        if not args.keep:
            shutil.rmtree(workdir)
    wrong = sum(check_asm(asm, label) for label, asm in asms)
    if args.self_test:
        wrong += sum(self_test(asm) for _, asm in asms)
    print(f"hip_isa: {'FAILED' if wrong else 'OK'} ({len(RULES)} primitives, "
          f"{', '.join(label for label, _ in asms)})")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
