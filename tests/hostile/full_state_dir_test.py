"""A full state directory: nothing may be reported as stored that was not.

colltestd's --state-dir is a small tmpfs, filled up to a little headroom once colltestd has
opened its history, so that only a few cases of a 300-case sweep fit. A colltestd that went on
running the sweep when its cases could no longer be stored answered exit 0 and all 300 cases
while the history kept 37 and showed the run RUNNING for ever. This test checks that:
  - the CLI exits non-zero (3) and its output names the storage problem
    ("database or disk is full") and the history database;
  - the run stopped at the first case it could not store (far fewer cases streamed than asked);
  - the history (GetRun) shows the run FAILED, not DONE or RUNNING, with the cases it stored;
  - colltestd still serves (`colltest devices` exits 0) and counts the failed write in
    colltest_history_write_errors_total;
  - after a restart on the same directory (with the space freed) the run is still not RUNNING.
It prints the cases asked for, streamed and stored.

It needs root to mount the tmpfs, in a private mount namespace (`unshare -m`) so that nothing is
left mounted whatever happens; it is skipped (exit 0 with a message) where mounting is impossible.
"""

import errno
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import hostile_main
from colltestd_process import Colltestd

IN_NAMESPACE = "COLLTEST_FULL_STATE_DIR_NS"
# 2 MiB holds the fresh database, its WAL and the lock file many times over.
TMPFS_SIZE = "2m"
# Left free once colltestd has opened its history: the run's row and some tens of cases (each
# commit appends two or three 4 KiB pages to the WAL), far fewer than the sweep's 300.
HEADROOM_BYTES = 96 * 1024
CASES = 300
CLI_TIMEOUT_S = 120


def reexec_in_private_mount_namespace():
    """Runs this script again inside `unshare -m` (private propagation); returns its exit code,
    or None when that is impossible."""
    if os.environ.get(IN_NAMESPACE) == "1":
        return None
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or unshare is None:
        return None
    env = dict(os.environ, **{IN_NAMESPACE: "1"})
    argv = [unshare, "-m", "--propagation", "private", sys.executable, os.path.abspath(__file__)]
    return subprocess.call(argv + sys.argv[1:], env=env)


def mount_tmpfs(path):
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE},mode=0700",
                             "tmpfs", path], capture_output=True, text=True)
    return result.returncode == 0, result.stderr.strip()


def fill(directory, headroom_bytes):
    """Writes a filler file until the file system is full, then gives back `headroom_bytes`."""
    filler = os.path.join(directory, "filler")
    chunk = b"\0" * 4096
    with open(filler, "wb", buffering=0) as out:
        try:
            while True:
                out.write(chunk)
        except OSError as e:
            if e.errno != errno.ENOSPC:
                raise
        size = out.tell()
    os.truncate(filler, max(0, size - headroom_bytes))
    stat = os.statvfs(directory)
    return filler, stat.f_bavail * stat.f_frsize


def cli(colltest, address, *args):
    result = subprocess.run([colltest, "--server", address, "-q", *args], capture_output=True,
                            text=True, timeout=CLI_TIMEOUT_S)
    return result.returncode, result.stdout, result.stderr


def sweep(colltest, address):
    ms = ",".join(str(m) for m in range(1, CASES + 1))
    # `auto` without a tune table is answered UNSUPPORTED by colltestd itself: 300 quick cases
    # that exit 0 when nothing goes wrong, so a non-zero exit can only come from the history.
    return cli(colltest, address, "sweep", "--world", "2", "--m", ms, "--n", "8", "--variants",
               "auto", "--modes", "eager", "--label", "full-state-dir", "--format", "json")


def newest_run_id(colltest, address):
    code, out, err = cli(colltest, address, "history", "--limit", "1", "--format", "json")
    assert code == 0, f"colltest history exited {code}: {err}"
    runs = json.loads(out)["runs"]
    assert runs, "the history lists no run"
    return runs[0]["run_id"] if "run_id" in runs[0] else runs[0]["runId"]


def get_run(colltest, address, run_id):
    code, out, err = cli(colltest, address, "get", run_id, "--format", "json")
    assert out.strip(), f"colltest get {run_id} printed nothing (exit {code}): {err}"
    return json.loads(out)


def streamed_cases(sweep_stdout):
    try:
        return len(json.loads(sweep_stdout).get("cases", []))
    except ValueError:
        return 0


def write_errors_counted(http_address):
    with urllib.request.urlopen(f"http://{http_address}/metrics", timeout=30) as reply:
        text = reply.read().decode()
    match = re.search(r"^colltest_history_write_errors_total (\S+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else None


def check_full_disk(args, state_dir):
    failures = []
    with Colltestd(args.colltestd, ["--backend", "cpu", "--cpu-ranks", "2", "--listen",
                                    "127.0.0.1:0", "--http", "127.0.0.1:0",
                                    "--state-dir", state_dir]) as daemon:
        filler, free = fill(state_dir, HEADROOM_BYTES)
        start = time.monotonic()
        code, out, err = sweep(args.colltest, daemon.address)
        wall = time.monotonic() - start
        run_id = newest_run_id(args.colltest, daemon.address)
        run = get_run(args.colltest, daemon.address, run_id)
        stored, state = len(run.get("cases", [])), run.get("state", "?")
        streamed = streamed_cases(out)
        print(f"free before the sweep: {free} bytes; sweep of {CASES} cases: exit {code} in "
              f"{wall:.1f} s; streamed {streamed} cases, stored {stored}; history state {state}")
        print(f"run message: {run.get('message', '')!r}")
        print(f"CLI stderr: {err.strip()[-400:]!r}")
        if code == 0:
            failures.append("the sweep exited 0 although its cases could not all be stored")
        if "database or disk is full" not in out + err or "history" not in out + err:
            failures.append("the CLI output does not name the storage problem")
        if state in ("RUN_STATE_DONE", "RUN_STATE_RUNNING", "DONE", "RUNNING"):
            failures.append(f"the history shows the run {state}")
        if streamed > stored + 1:
            failures.append(f"{streamed} cases streamed but {stored} stored: the run went on "
                            "after its first case that could not be stored")
        devices = cli(args.colltest, daemon.address, "devices")[0]
        errors = write_errors_counted(daemon.http_address)
        print(f"colltest devices after the sweep: exit {devices}; "
              f"colltest_history_write_errors_total {errors}")
        if devices != 0:
            failures.append(f"colltestd no longer serves: colltest devices exited {devices}")
        if not errors:
            failures.append("colltest_history_write_errors_total did not count the failure")
        # A clean stop folds the WAL into the database, which needs the space back.
        os.remove(filler)
    with Colltestd(args.colltestd, ["--backend", "cpu", "--cpu-ranks", "2", "--listen",
                                    "127.0.0.1:0", "--state-dir", state_dir]) as daemon:
        state = get_run(args.colltest, daemon.address, run_id).get("state", "?")
        print(f"after a restart the history shows run {run_id} {state}")
        if state in ("RUN_STATE_DONE", "RUN_STATE_RUNNING", "DONE", "RUNNING"):
            failures.append(f"after a restart the history shows the run {state}")
    return failures


def check(args):
    state_dir = tempfile.mkdtemp(prefix="colltest-full-state-")
    try:
        mounted, why = mount_tmpfs(state_dir)
        if not mounted:
            raise hostile_main.Skip(
                f"cannot mount a tmpfs as the state directory ({why or 'not root'})")
        try:
            return check_full_disk(args, state_dir)
        finally:
            subprocess.run(["umount", "-l", state_dir], check=False)
    finally:
        os.rmdir(state_dir)


if __name__ == "__main__":
    # As root, the test runs again inside its own mount namespace and ends as that run ends.
    code = reexec_in_private_mount_namespace()
    if code is not None:
        sys.exit(code)
    hostile_main.main(check, __doc__)
