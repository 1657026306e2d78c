#!/usr/bin/python3
"""Runs a sweep on colltestd and prints one row per case as it completes.

    python3 sweep_table.py [ADDRESS]     (default: $COLLTEST_SERVER, else 127.0.0.1:50051)

Exits 0 when every case is OK (or UNSUPPORTED), else 1 (WRONG), 2 (HANG) or 3 (error)."""

import os
import sys

import grpc

import colltest_client as ct

address = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("COLLTEST_SERVER", "127.0.0.1:50051")
run = None
print(f"{'m':>6} {'n':>6} {'variant':<10} {'mode':<5} {'median us':>10} {'busbw GB/s':>10}  status")
try:
    with ct.connect(address) as client:
        for event in client.sweep(world_size=2, m=[1, 64], n=[1024],
                                  variants=["one_stage", "lamport"]):
            if event.HasField("result"):
                case = event.result
                print(f"{case.m:>6} {case.n:>6} {ct.variant_name(case.variant):<10} "
                      f"{ct.mode_name(case.mode):<5} {case.timing.median_us:>10.1f} "
                      f"{case.busbw_gbps:>10.2f}  {ct.status_name(case.status)}")
            elif event.HasField("summary"):
                run = event.summary
except grpc.RpcError as e:
    print(f"{address}: {e.code().name}: {e.details()}", file=sys.stderr)
    sys.exit(ct.EXIT_ERROR)  # not sys.exit(message): its exit code 1 would read as WRONG
if run is None:
    print("the sweep ended without a summary", file=sys.stderr)
    sys.exit(ct.EXIT_ERROR)

print(f"run {run.run_id}: {ct.state_name(run.state)}")
sys.exit(ct.exit_code_for_run(run))
