#!/usr/bin/python3
"""Runs a sweep on colltestd and prints one row per case as it completes.

    python3 sweep_table.py [ADDRESS]     (default: $COLLTEST_SERVER, else 127.0.0.1:50051)

Exits 0 when every case is OK (or UNSUPPORTED), else 1 (WRONG), 2 (HANG) or 3 (error)."""

import os
import sys

import colltest_client as ct

address = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("COLLTEST_SERVER", "127.0.0.1:50051")
run = None
print(f"{'m':>6} {'n':>6} {'variant':<10} {'mode':<5} {'median us':>10} {'busbw GB/s':>10}  status")
try:
    with ct.connect(address) as client:
        for event in client.sweep(world_size=2, m=[1, 64], n=[1024],
                                  variants=[ct.Variant.ONE_STAGE, ct.Variant.LAMPORT]):
            if event.result is not None:
                case = event.result
                print(f"{case.m:>6} {case.n:>6} {case.kernel:<10} {case.mode.cli_name:<5} "
                      f"{case.median_us:>10.1f} {case.busbw_gbps:>10.2f}  {case.status.cli_name}")
            elif event.summary is not None:
                run = event.summary
except ct.ColltestError as e:
    print(f"{address}: {e.code}: {e.message}", file=sys.stderr)
    sys.exit(ct.EXIT_ERROR)  # not sys.exit(message): its exit code 1 would read as WRONG
if run is None:
    print("the sweep ended without a summary", file=sys.stderr)
    sys.exit(ct.EXIT_ERROR)

print(f"run {run.run_id}: {run.state.cli_name}")
sys.exit(ct.exit_code_for_run(run))
