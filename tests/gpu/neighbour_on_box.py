#!/usr/bin/env python3
"""colltestd as a neighbour of jobs on the GPU box (docs/neighbours.md), and the device identity.

Usage: neighbour_on_box.py BIN_DIR OUT_DIR WORLD

1. identity: `colltest devices --format json` (UUID, PCI bus id, serial, link kinds) and the
   worker's `--users` line before anything of ours runs.
2. idle timeout: a daemon with --idle-timeout 5s runs a case; its workers must hold GPU memory
   while warm and be gone (no process, memory back) after the timeout; the next case's wall time
   against a warm one is the respawn cost.
3. BUSY: daemon A keeps its workers (--idle-timeout 0); daemon B's run on the same devices must be
   refused BUSY (exit 5) naming A's worker pids, health answers busy, and --force runs.
4. priority: a long sweep from one client, then `health` from another: the verdict's wall time,
   and the sweep must still finish every case.
5. levels: `health --level quick|standard|long` wall times and the long level's pair bandwidth
   (two slots of one GPU have no link to measure: a pair's bandwidth skipped with its reason is
   accepted).
Writes neighbour_box.json under OUT_DIR (after every step) and prints a short table; exits 1 when
a check failed.

Against slots of one GPU (tests/gpu/run_on_box.sh STAGE=shared): COLLTEST_GPU_DAEMON_ARGS (e.g.
"--ranks-per-gpu 8") is added to every colltestd started here, COLLTEST_BOX_DEVICES=0,1 names the
devices of every case and health check (else every device of the WORLD), `--users` asks about the
GPUs behind them. NEIGHBOUR_LEVELS ("quick standard long") and NEIGHBOUR_SWEEP_ITERS (3000, the
priority step's sweep) shorten a run.
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

bin_dir, out, world = sys.argv[1], sys.argv[2], int(sys.argv[3])
colltestd = os.path.join(bin_dir, "colltestd")
colltest = os.path.join(bin_dir, "colltest")
worker = os.path.join(bin_dir, "colltest-worker")
daemon_args = os.environ.get("COLLTEST_GPU_DAEMON_ARGS", "").split()
box_devices = os.environ.get("COLLTEST_BOX_DEVICES", "")
dev = ["--devices", box_devices] if box_devices else []
levels_run = os.environ.get("NEIGHBOUR_LEVELS", "quick standard long").split()
sweep_iters = os.environ.get("NEIGHBOUR_SWEEP_ITERS", "3000")
report = {"world": world, "daemon_args": daemon_args, "box_devices": box_devices or None,
          "levels_run": levels_run}


def smi(query):
    p = subprocess.run(["nvidia-smi", f"--query-{query}", "--format=csv,noheader,nounits"],
                       capture_output=True, text=True, timeout=30)
    return [line.strip() for line in p.stdout.splitlines() if line.strip()]


def gpu_memory_used_mib():
    return [int(r.split(",")[1]) for r in smi("gpu=index,memory.used")][:world]


def physical_devices():
    """The GPUs behind devices 0 .. WORLD-1 for `--users`, which knows GPUs, not slots: slots are
    interleaved, device i on GPU i % G."""
    gpus = max(1, len(smi("gpu=index")))
    return ",".join(str(d) for d in sorted({d % gpus for d in range(world)}))


def compute_pids():
    return sorted({int(r.split(",")[0]) for r in smi("compute-apps=pid,used_memory") if r})


class Daemon:
    def __init__(self, name, *flags):
        self.state = tempfile.mkdtemp(prefix=f"colltest-{name}-")
        self.log = open(os.path.join(out, f"colltestd_neighbour_{name}.log"), "w")
        self.proc = subprocess.Popen(
            [colltestd, "--listen", "127.0.0.1:0", "--backend", "cuda", "--state-dir", self.state,
             *daemon_args, *flags], stdout=self.log, stderr=subprocess.STDOUT)
        self.addr = None
        for _ in range(400):
            text = open(self.log.name).read()
            m = re.search(r"^colltestd listening on (\S+)", text, re.M)
            if m:
                self.addr = m.group(1)
                break
            time.sleep(0.05)
        if self.addr is None:
            raise RuntimeError(f"{name}: colltestd did not start: {open(self.log.name).read()}")

    def cli(self, *args, timeout=300):
        t0 = time.monotonic()
        p = subprocess.run([colltest, "--server", self.addr, *args], capture_output=True,
                           text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr, time.monotonic() - t0

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)


def case(d, *extra):
    return d.cli("run", "--world", str(world), *dev, "--m", "64", "--n", "7168", "--variants",
                 "lamport", "--modes", "graph", "--format", "json", *extra)


def identity():
    d = Daemon("identity")
    rc, text, err, _ = d.cli("devices", "--format", "json")
    report["devices_rc"] = rc
    try:
        report["devices"] = json.loads(text)
    except ValueError:
        report["devices_text"] = text + err
    d.stop()
    devices = physical_devices()
    report["users_devices"] = devices
    p = subprocess.run([worker, "--users", "--backend", "cuda", "--devices", devices],
                       capture_output=True, text=True, timeout=30)
    report["users_before"] = {"rc": p.returncode, "line": p.stdout.strip(), "err": p.stderr[-400:]}
    # Another process holding 2 GiB of device 0 (torch is on the box for the anchors): --users
    # must name it, with its memory.
    holder = subprocess.Popen(
        ["python3", "-c", "import torch, time; x = torch.empty(2**31, dtype=torch.uint8, "
         "device='cuda:0'); print('held', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        ready = holder.stdout.readline().strip() == "held"
        p = subprocess.run([worker, "--users", "--backend", "cuda", "--devices", devices],
                           capture_output=True, text=True, timeout=30)
        report["users_with_holder"] = {"holder_pid": holder.pid, "holder_ready": ready,
                                       "rc": p.returncode, "line": p.stdout.strip(),
                                       "named": str(holder.pid) in p.stdout}
    finally:
        holder.kill()
        holder.wait()


def idle_timeout():
    d = Daemon("idle", "--idle-timeout", "5s")
    base = gpu_memory_used_mib()
    cold = case(d)
    warm = case(d)
    warm_pids, warm_mem = compute_pids(), gpu_memory_used_mib()
    time.sleep(9)
    idle_pids, idle_mem = compute_pids(), gpu_memory_used_mib()
    again = case(d)
    d.stop()
    report["idle"] = {
        "memory_mib_before": base, "memory_mib_warm": warm_mem, "memory_mib_after_idle": idle_mem,
        "compute_pids_warm": warm_pids, "compute_pids_after_idle": idle_pids,
        "first_case_s": round(cold[3], 3), "warm_case_s": round(warm[3], 3),
        "after_idle_case_s": round(again[3], 3),
        "respawn_cost_s": round(again[3] - warm[3], 3),
        "exits": [cold[0], warm[0], again[0]]}


def busy():
    a = Daemon("busy_a", "--idle-timeout", "0")
    case(a)
    holders = compute_pids()
    b = Daemon("busy_b")
    refused = case(b)
    health = b.cli("health", *dev, "--format", "json")
    forced = case(b, "--force")
    a.stop()
    b.stop()
    named = [pid for pid in holders if str(pid) in refused[2]]
    report["busy"] = {"holders": holders, "refused_exit": refused[0],
                      "refused_message": refused[2].strip()[-600:], "pids_named": named,
                      "health_exit": health[0], "health": health[1][:2000],
                      "forced_exit": forced[0]}


def priority():
    d = Daemon("priority")
    case(d)
    sweep = subprocess.Popen(
        [colltest, "--server", d.addr, "sweep", "--world", str(world), *dev, "--m",
         "1,2,4,8,16,32,64,128,256,512,1024,2048", "--n", "7168", "--variants",
         "one_stage,two_kernel,lamport,lamport_tb", "--modes", "eager,graph", "--iters",
         sweep_iters, "--format", "json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        text=True)
    time.sleep(3)
    health = d.cli("health", *dev, "--format", "json")
    sweep_out, _ = sweep.communicate(timeout=600)
    d.stop()
    try:
        run = json.loads(sweep_out)
        cases = run.get("cases", [])
        walls = sorted(c.get("wall_ms", 0) for c in cases)
        summary = {"state": run.get("state"), "cases": len(cases),
                   "max_case_wall_ms": walls[-1] if walls else None}
    except ValueError:
        summary = {"raw": sweep_out[-400:]}
    report["priority"] = {"health_exit": health[0], "health_wall_s": round(health[3], 3),
                          "sweep": summary, "sweep_exit": sweep.returncode}


def levels():
    d = Daemon("levels", "--allow-fault-injection")
    case(d)
    report["levels"] = {}
    for level in levels_run:
        rc, text, err, wall = d.cli("health", *dev, "--level", level, "--format", "json",
                                    timeout=900)
        entry = {"exit": rc, "wall_s": round(wall, 3)}
        try:
            h = json.loads(text)
            entry["status"] = h.get("status")
            entry["message"] = h.get("message")
            entry["self_test"] = h.get("self_test")
            entry["pairs"] = [{k: p.get(k) for k in ("devices", "status", "busbw_gbps",
                                                      "expected_busbw_gbps", "below_expected",
                                                      "message")}
                              for p in h.get("pairs", [])]
        except ValueError:
            entry["raw"] = (text + err)[-600:]
        report["levels"][level] = entry
        dump()
    d.stop()


def dump():
    """The report so far: a run cut short by the box script's budget keeps the steps done."""
    with open(os.path.join(out, "neighbour_box.json"), "w") as f:
        json.dump(report, f, indent=1)


# Every step but the identity runs cases, which need two devices (world >= 2).
for step in (identity,) + ((idle_timeout, busy, priority, levels) if world >= 2 else ()):
    try:
        step()
    except Exception as e:  # one broken step must not hide the others' numbers
        report[step.__name__ + "_error"] = repr(e)
    dump()
if world < 2:
    print("skipped: idle, busy, priority and levels need two devices (WORLD < 2)")
skipped = [level for level in ("quick", "standard", "long") if level not in levels_run]
if skipped:
    print(f"skipped: health level {', '.join(skipped)} (NEIGHBOUR_LEVELS={' '.join(levels_run)})")
u = report.get("users_with_holder", {})
print(f"users: before {report.get('users_before', {}).get('line')}")
print(f"users with a 2 GiB holder (pid {u.get('holder_pid')}): named={u.get('named')} {u.get('line')}")
links = report.get("devices", {}).get("machine", {}).get("links", [])
print(f"devices: {json.dumps(report.get('devices', {}).get('machine', {}).get('devices'))}")
print(f"links: {json.dumps(links)}")
idle = report.get("idle", {})
print(f"idle: warm {idle.get('memory_mib_warm')} MiB -> after 5 s idle "
      f"{idle.get('memory_mib_after_idle')} MiB (before {idle.get('memory_mib_before')}); "
      f"pids {idle.get('compute_pids_warm')} -> {idle.get('compute_pids_after_idle')}; respawn "
      f"cost {idle.get('respawn_cost_s')} s (after idle {idle.get('after_idle_case_s')} s, warm "
      f"{idle.get('warm_case_s')} s)")
b = report.get("busy", {})
print(f"busy: refused exit {b.get('refused_exit')} naming {b.get('pids_named')} of "
      f"{b.get('holders')}; health exit {b.get('health_exit')}; --force exit {b.get('forced_exit')}")
print(f"busy message: {b.get('refused_message')}")
p = report.get("priority", {})
print(f"priority: health exit {p.get('health_exit')} in {p.get('health_wall_s')} s during a sweep "
      f"{p.get('sweep')}")
for level, e in report.get("levels", {}).items():
    print(f"level {level}: exit {e.get('exit')} {e.get('wall_s')} s {e.get('status')} "
          f"self_test={e.get('self_test')} pairs={e.get('pairs')}")
for k, v in report.items():
    if k.endswith("_error"):
        print(k, v)


def pair_bandwidth_ok(p):
    """A measured bandwidth, or none with the reason it was skipped (two slots of one GPU)."""
    return (p.get("busbw_gbps") or 0) > 0 or "skip" in (p.get("message") or "").lower()


def checks():
    u, b, p = report.get("users_with_holder", {}), report.get("busy", {}), report.get("priority", {})
    out = {"no step raised": not any(k.endswith("_error") for k in report),
           "devices listed": report.get("devices_rc") == 0,
           "--users answers": report.get("users_before", {}).get("rc") == 0}
    if u.get("holder_ready"):  # without torch on the box there is no holder to name
        out["--users names the holder"] = bool(u.get("named"))
    if world >= 2:
        out["idle: every case exits 0"] = report.get("idle", {}).get("exits") == [0, 0, 0]
        out["busy: refused (exit 5)"] = b.get("refused_exit") == 5
        out["busy: --force runs"] = b.get("forced_exit") == 0
        out["priority: health exits 0 during a sweep"] = p.get("health_exit") == 0
        out["priority: the sweep is DONE"] = p.get("sweep", {}).get("state") == "DONE"
    for level, e in report.get("levels", {}).items():
        out[f"level {level} exits 0"] = e.get("exit") == 0
        if level != "quick":
            out[f"level {level}: self test passed"] = bool((e.get("self_test") or {}).get("passed"))
        if level == "long":
            out["level long: each pair's bandwidth, or why not"] = all(
                pair_bandwidth_ok(q) for q in e.get("pairs", []))
    return out


for level, e in report.get("levels", {}).items():
    for q in e.get("pairs", []):
        if q.get("message"):
            print(f"level {level} pair {q.get('devices')}: {q.get('status')} {q.get('message')}")
results = checks()
failed = [name for name, ok in results.items() if not ok]
print(f"neighbour checks: {len(results) - len(failed)}/{len(results)} passed"
      + (f"; failed: {', '.join(failed)}" if failed else ""))
sys.exit(1 if failed else 0)
