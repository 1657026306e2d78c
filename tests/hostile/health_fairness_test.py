"""Health checks may not starve other runners: runner A loops `colltest health --level standard`
(two loops at once), and runner B's one-case run on the same devices must finish within 10 s.

A health check's runs have priority in the device queue, but each caller's checks may go ahead of
a given run only once (docs/neighbours.md): A's next check queues behind B's run. Before that rule,
B's run waited for as long as A kept looping (56 s with one loop, 87 s with two).

Prints B's wait and how many checks A made, and fails when B's run took longer than the bound.
"""

import subprocess
import tempfile
import threading
import time

import hostile_main
from colltestd_process import Colltestd

RUNNER_A_TOKEN = "a-health-looper-0123456789"
RUNNER_B_TOKEN = "b-one-case-run-0123456789"
HEALTH_LOOPS = 2
B_RUN_BOUND_S = 10.0
# Before the fair queue B's run waited for as long as A looped: it is given up after this long.
B_RUN_TIMEOUT_S = 60
# How long a loop may take to end once told to: its current check (a few seconds) must end.
LOOP_STOP_S = 45


def write_token_files(directory):
    tokens = hostile_main.write_private(
        directory, "tokens", f"runner-a runner {RUNNER_A_TOKEN}\nrunner-b runner {RUNNER_B_TOKEN}\n")
    per_runner = {name: hostile_main.write_private(directory, f"token-{name}", token + "\n")
                  for name, token in (("a", RUNNER_A_TOKEN), ("b", RUNNER_B_TOKEN))}
    return tokens, per_runner


class HealthLoop(threading.Thread):
    """Runs `colltest health --level standard` back to back until told to stop."""

    def __init__(self, colltest, address, token_file, stop):
        super().__init__(daemon=True)
        self.argv = [colltest, "--server", address, "--token-file", token_file, "-q", "health",
                     "--level", "standard", "--timeout", "5s"]
        self.stop = stop
        self.checks = 0
        self.exit_codes = {}

    def run(self):
        while not self.stop.is_set():
            done = subprocess.run(self.argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  timeout=120, check=False)
            self.checks += 1
            self.exit_codes[done.returncode] = self.exit_codes.get(done.returncode, 0) + 1


def check(args):
    with tempfile.TemporaryDirectory(prefix="health-fairness-") as directory:
        tokens, per_runner = write_token_files(directory)
        daemon_args = ["--backend", "cpu", "--cpu-ranks", "2", "--listen", "127.0.0.1:0",
                       "--token-file", tokens]
        with Colltestd(args.colltestd, daemon_args) as daemon:
            stop = threading.Event()
            loops = [HealthLoop(args.colltest, daemon.address, per_runner["a"], stop)
                     for _ in range(HEALTH_LOOPS)]
            for loop in loops:
                loop.start()
            # Let A's checks take the devices first, as they would on a node being probed.
            time.sleep(2.0)
            b_argv = [args.colltest, "--server", daemon.address, "--token-file", per_runner["b"],
                      "-q", "run", "--world", "2", "--m", "1", "--n", "1024", "--modes", "eager",
                      "--variants", "one_stage", "--format", "json"]
            start = time.monotonic()
            b_run = subprocess.Popen(b_argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            try:
                _, b_err = b_run.communicate(timeout=B_RUN_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                b_run.kill()
                _, b_err = b_run.communicate()
            b_wait = time.monotonic() - start
            stop.set()
            # The loops end after their current check.
            for loop in loops:
                loop.join(timeout=LOOP_STOP_S)
            checks = sum(loop.checks for loop in loops)
            exit_codes = {}
            for loop in loops:
                for code, count in loop.exit_codes.items():
                    exit_codes[code] = exit_codes.get(code, 0) + count

    print(f"runner B's 1-case run took {b_wait:.1f} s (bound {B_RUN_BOUND_S:.0f} s, exit "
          f"{b_run.returncode}) while runner A ran {checks} standard health checks in "
          f"{HEALTH_LOOPS} loops (exit codes {exit_codes})")
    failures = []
    if b_run.returncode != 0:
        failures.append(f"runner B's run exited {b_run.returncode}: {b_err.decode()[-2000:]}")
    if b_wait > B_RUN_BOUND_S:
        failures.append(f"runner B's run took {b_wait:.1f} s, more than {B_RUN_BOUND_S:.0f} s: "
                        "runner A's health checks starved it")
    if checks == 0:
        failures.append("runner A ran no health check")
    return failures


if __name__ == "__main__":
    hostile_main.main(check, __doc__)
