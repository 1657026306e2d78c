#!/usr/bin/env python3
"""Anchors measured on the same box and in the same run as the colltest sweep.

W = 2 processes (torch.multiprocessing, no torchrun), NCCL process group, n = 7168, bf16, CUDA
graphs: per m, the median microseconds per call of
  (a) nccl_ar:        NCCL all-reduce (torch.distributed.all_reduce, sum, in place)
  (b) nccl_ar_norm:   NCCL all-reduce, then the residual add and torch's rms_norm (what a user
                      writes instead of a fused kernel; the residual add is there to be fair)
  (c) symm_one_shot / symm_two_shot: torch symmetric-memory one-shot and two-shot all-reduce
                      (all-reduce only), skipped with a note when torch cannot run them.
Each graph captures CALLS calls; after warm-up replays, REPLAYS replays are timed with events and
the median over replays / CALLS is the rank's figure; the anchor is the max over ranks (as the
case time of colltest). Values are not checked and grow with in-place replays (inf/nan after a
while): GPU arithmetic time does not depend on them.

Usage: python3 tests/gpu/anchors.py --out anchors.json [--m 1,8,...] [--n 7168]
"""

import argparse
import datetime
import json
import os
import socket
import statistics
import sys
import traceback

# Multicast (NVLS) stays off on the shared boxes; set before torch or NCCL is loaded anywhere.
for _k, _v in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
               ("NVSHMEM_DISABLE_NVLS", "1")):
    os.environ[_k] = _v

WORLD = 2
CALLS = 16
WARMUP_REPLAYS = 3
REPLAYS = 10
EPS = 1e-6


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _graph_us(torch, dist, device, fn):
    """Median us per call over REPLAYS replays of a graph of CALLS calls of fn; max over ranks."""
    side = torch.cuda.Stream(device=device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        for _ in range(3):  # eager warm-up: lazy NCCL connections, allocator, kernels loaded
            fn()
    torch.cuda.current_stream(device).wait_stream(side)
    torch.cuda.synchronize(device)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(CALLS):
            fn()
    for _ in range(WARMUP_REPLAYS):
        graph.replay()
    torch.cuda.synchronize(device)
    dist.barrier(device_ids=[device.index])
    torch.cuda.synchronize(device)
    samples = []
    for _ in range(REPLAYS):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1000.0 / CALLS)
    del graph
    med = torch.tensor([statistics.median(samples)], dtype=torch.float64, device=device)
    dist.all_reduce(med, op=dist.ReduceOp.MAX)
    return float(med.item())


def _worker(rank, port, ms, n, result_path):
    import torch
    import torch.distributed as dist

    device = torch.device("cuda", rank)
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=WORLD, device_id=device)
    group_name = dist.group.WORLD.group_name
    notes = []
    symm = None
    try:
        import torch.distributed._symmetric_memory as symm_mem  # noqa: F401
        symm = symm_mem
        if hasattr(symm_mem, "enable_symm_mem_for_group"):  # needed by older torch only
            try:
                symm_mem.enable_symm_mem_for_group(group_name)
            except Exception as e:  # noqa: BLE001
                notes.append(f"enable_symm_mem_for_group: {e!r}")
        if not hasattr(torch.ops.symm_mem, "one_shot_all_reduce"):
            notes.append("torch.ops.symm_mem.one_shot_all_reduce is missing")
        if not hasattr(torch.ops.symm_mem, "two_shot_all_reduce_"):
            notes.append("torch.ops.symm_mem.two_shot_all_reduce_ is missing")
    except Exception as e:  # noqa: BLE001
        notes.append(f"torch.distributed._symmetric_memory unavailable: {e!r}")
    symm_broken = set()

    rows = []
    for m in ms:
        row = {"m": m}
        gen = torch.Generator(device=device)
        gen.manual_seed(1234 + rank)
        x = torch.randn(m, n, dtype=torch.bfloat16, device=device, generator=gen)
        residual = torch.randn(m, n, dtype=torch.bfloat16, device=device, generator=gen)
        weight = torch.randn(n, dtype=torch.bfloat16, device=device, generator=gen)

        def ar():
            dist.all_reduce(x)

        def ar_norm():
            dist.all_reduce(x)
            r = x + residual
            return torch.nn.functional.rms_norm(r, (n,), weight, EPS)

        for key, fn in (("nccl_ar_us", ar), ("nccl_ar_norm_us", ar_norm)):
            try:
                row[key] = _graph_us(torch, dist, device, fn)
            except Exception as e:  # noqa: BLE001
                row[key] = None
                notes.append(f"m={m} {key}: {e!r}")

        if symm is not None:
            for key, op in (("symm_one_shot_us", "one_shot_all_reduce"),
                            ("symm_two_shot_us", "two_shot_all_reduce_")):
                if key in symm_broken or not hasattr(torch.ops.symm_mem, op):
                    row[key] = None
                    continue
                try:
                    buf = symm.empty(m, n, dtype=torch.bfloat16, device=device)
                    buf.copy_(x)
                    symm.rendezvous(buf, group_name)
                    f = getattr(torch.ops.symm_mem, op)
                    row[key] = _graph_us(torch, dist, device,
                                         lambda f=f, buf=buf: f(buf, "sum", group_name))
                except Exception as e:  # noqa: BLE001
                    row[key] = None
                    symm_broken.add(key)
                    notes.append(f"m={m} {key} skipped from here on: {e!r}"[:400])
                    if rank == 0:
                        traceback.print_exc()
                    torch.cuda.synchronize(device)
        rows.append(row)
        if rank == 0:
            print("anchors m=%d %s" % (m, {k: (None if v is None else round(v, 2))
                                           for k, v in row.items() if k != "m"}), flush=True)
        del x, residual, weight
        torch.cuda.empty_cache()

    if rank == 0:
        nccl_version = None
        try:
            nccl_version = ".".join(str(v) for v in torch.cuda.nccl.version())
        except Exception:  # noqa: BLE001
            pass
        doc = {
            "world": WORLD, "n": n, "dtype": "bf16", "mode": "graph",
            "graph_calls": CALLS, "replays": REPLAYS, "statistic": "median over replays, max over ranks",
            "torch": torch.__version__, "torch_nccl": nccl_version,
            "device": torch.cuda.get_device_name(device),
            "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "columns": {
                "nccl_ar_us": "NCCL all-reduce (a)",
                "nccl_ar_norm_us": "NCCL all-reduce + residual add + torch rms_norm (b)",
                "symm_one_shot_us": "torch symm-mem one_shot_all_reduce (c)",
                "symm_two_shot_us": "torch symm-mem two_shot_all_reduce_ (c)",
            },
            "rows": rows, "notes": sorted(set(notes)),
        }
        with open(result_path, "w") as f:
            json.dump(doc, f, indent=1)
    dist.barrier(device_ids=[device.index])
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--m", default="1,8,16,32,64,128,256,1024")
    ap.add_argument("--n", type=int, default=7168)
    args = ap.parse_args()
    ms = [int(v) for v in args.m.split(",") if v]
    import torch
    import torch.multiprocessing as mp
    if torch.cuda.device_count() < WORLD:
        print(f"anchors: need {WORLD} GPUs, have {torch.cuda.device_count()}", file=sys.stderr)
        return 2
    mp.spawn(_worker, args=(_free_port(), ms, args.n, os.path.abspath(args.out)), nprocs=WORLD,
             join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
