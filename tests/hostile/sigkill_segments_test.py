"""SIGKILL of colltestd mid-case: its workers must remove their shared memory and leave.

colltestd starts its workers with PR_SET_PDEATHSIG = SIGTERM; a worker whose controller died
unlinks the /dev/shm segments it created and leaves within 3 s (docs/cancel.md). A worker that
judged its controller alive from getppid() (the death signal fires when the forking *thread*
exits, while the dying controller's other threads still are its parent) left its segment behind,
604 MB of /dev/shm for 4 ranks until the next colltestd start, and was ended by its exit alarm
2.5-3.2 s after the SIGKILL.

The test starts colltestd (cpu backend, 4 ranks), starts a long case of 32 MiB per rank through
the CLI, SIGKILLs colltestd once every rank's segment exists, and checks that within 5 s no
segment of that colltestd is left in /dev/shm and none of its workers runs. It prints how long
the last segment and the last worker took to go. Whatever happens, it removes what is left.
"""

import os
import signal
import subprocess
import sys
import time

import hostile_main
from colltestd_process import Colltestd

RANKS = 4
# 512 x 16384 fp32 = 32 MiB per rank, the default --max-case-bytes: ~126 MB of segment per rank.
CASE_ARGS = ["run", "--world", str(RANKS), "--m", "512", "--n", "16384", "--dtype", "fp32",
             "--variants", "one_stage", "--modes", "eager", "--warmup", "0",
             "--iters", "100000", "--timeout", "120s"]
SHM_DIR = "/dev/shm"
SEGMENTS_WAIT_S = 60  # for the case to start on a busy machine
MID_CASE_S = 0.5      # let the case run a little once every segment exists
LIMIT_S = 5.0         # what the test allows; docs/cancel.md promises 3 s
WATCH_S = 8.0         # how long the figures are followed after the SIGKILL
POLL_S = 0.02


def segments_of(controller_pid):
    prefix = f"colltest.{controller_pid}."
    try:
        return sorted(name for name in os.listdir(SHM_DIR) if name.startswith(prefix))
    except FileNotFoundError:
        return []


def start_time(pid):
    """The process's start time in clock ticks (field 22 of /proc/PID/stat), None when it is gone
    or a zombie: it tells a live worker from a later process that reuses its pid."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] in ("Z", "X") else fields[19]


def children_of(parent_pid):
    """{pid: start time} of the live processes whose parent is parent_pid."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == parent_pid and fields[0] not in ("Z", "X"):
            children[int(entry)] = fields[19]
    return children


def alive(workers):
    return [pid for pid, started in workers.items() if start_time(pid) == started]


def wait_for_case(daemon, client):
    """Waits until every rank's segment exists; returns the worker processes {pid: start}."""
    deadline = time.monotonic() + SEGMENTS_WAIT_S
    while time.monotonic() < deadline:
        if client.poll() is not None:
            sys.exit(f"FAIL: the case ended before the SIGKILL (exit {client.returncode}):\n"
                     f"{client.stdout.read()}\n{daemon.log_tail()}")
        if len(segments_of(daemon.pid)) >= RANKS:
            workers = children_of(daemon.pid)
            if len(workers) >= RANKS:
                return workers
        time.sleep(0.05)
    sys.exit(f"FAIL: {RANKS} segments did not appear within {SEGMENTS_WAIT_S} s "
             f"(found {segments_of(daemon.pid)})\n{daemon.log_tail()}")


def watch_after_kill(controller_pid, workers):
    """Follows the segments and workers after the SIGKILL; returns the seconds at which the last
    segment and the last worker went (None: still there after WATCH_S)."""
    killed_at = time.monotonic()
    last_segment_s = last_worker_s = None
    while time.monotonic() - killed_at < WATCH_S:
        elapsed = time.monotonic() - killed_at
        if last_segment_s is None and not segments_of(controller_pid):
            last_segment_s = elapsed
        if last_worker_s is None and not alive(workers):
            last_worker_s = elapsed
        if last_segment_s is not None and last_worker_s is not None:
            break
        time.sleep(POLL_S)
    return last_segment_s, last_worker_s


def clean_up(controller_pid, workers):
    """Removes what a failed run left, so that the machine is as before the test."""
    for pid in alive(workers):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for name in segments_of(controller_pid):
        try:
            os.unlink(os.path.join(SHM_DIR, name))
        except FileNotFoundError:
            pass


def describe(seconds):
    return "still there" if seconds is None else f"{seconds:.2f} s"


def check(args):
    # Not a `with` block: colltestd is meant to die of the SIGKILL, which stop() would report.
    daemon = Colltestd(args.colltestd, ["--backend", "cpu", "--cpu-ranks", str(RANKS),
                                        "--listen", "127.0.0.1:0"])
    workers = {}
    try:
        client = subprocess.Popen([args.colltest, "--server", daemon.address] + CASE_ARGS,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            workers = wait_for_case(daemon, client)
            segments = segments_of(daemon.pid)
            sizes = sum(os.stat(os.path.join(SHM_DIR, name)).st_size for name in segments)
            time.sleep(MID_CASE_S)
            os.kill(daemon.pid, signal.SIGKILL)
            last_segment_s, last_worker_s = watch_after_kill(daemon.pid, workers)
            left_segments = segments_of(daemon.pid)
            left_workers = alive(workers)
        finally:
            client.kill()
            client.wait()
    finally:
        daemon.stop(check=False)
        clean_up(daemon.pid, workers)

    print(f"before SIGKILL: {len(segments)} segments ({sizes / 1e6:.0f} MB), "
          f"{len(workers)} workers {sorted(workers)}")
    print(f"after SIGKILL: last segment gone after {describe(last_segment_s)}, "
          f"last worker gone after {describe(last_worker_s)} (limit {LIMIT_S:.0f} s)")
    failures = []
    if last_segment_s is None or last_segment_s > LIMIT_S:
        failures.append(f"segments left in {SHM_DIR}: {left_segments}")
    if last_worker_s is None or last_worker_s > LIMIT_S:
        failures.append(f"workers left running: {left_workers}")
    return failures


if __name__ == "__main__":
    hostile_main.main(check, __doc__)
