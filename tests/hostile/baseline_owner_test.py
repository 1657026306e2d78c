"""Baselines belong to their setter, and one owner's names are bounded.

A colltestd with a token file of two runners (runner-a, runner-b) and an admin. A colltestd that
let any runner replace any baseline let runner-b silently move runner-a's `default` (every later
comparison of runner-a's CI judged against runner-b's run), and one that took any number of names
let a caller pin run after run against retention. This test checks that:
  - runner-b's SetBaseline of runner-a's `default` is PERMISSION_DENIED naming the baseline, its
    owner (runner-a) and the rule, and `default` still names runner-a's run;
  - the admin may replace it, and runner-a may replace it again afterwards (still its own);
  - runner-b may add 32 names (the default --max-baselines-per-owner), the next ones are
    RESOURCE_EXHAUSTED naming the limit and the flag, and replacing one of its own still works;
  - after a restart on the same state directory, runner-b still cannot replace runner-a's default;
  - without a token file (every caller an admin named by its peer), --max-baselines-per-owner 3
    holds for a client that opens a new connection (a new peer port) for every call.
It prints whether runner-b replaced runner-a's default, and how many new names were accepted.
"""

import os
import tempfile

import grpc

import colltest_client
import hostile_main
from colltest_client import pb2
from colltestd_process import Colltestd

TOKENS = {
    "runner-a": ("runner", "a3f1c9e07b5d2468ace13579bdf02468"),
    "runner-b": ("runner", "b7e2d4f6a8c0e1b3d5f7a9c2e4f6a8b0"),
    "oncall": ("admin", "0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f"),
}
DEFAULT_MAX_BASELINES_PER_OWNER = 32
NAMES_TRIED = 40  # beyond the default bound
AUTH_OFF_BOUND = 3
CALL_TIMEOUT_S = 30


def write_token_file(directory):
    return hostile_main.write_private(
        directory, "tokens",
        "".join(f"{name} {role} {token}\n" for name, (role, token) in TOKENS.items()))


def client_of(address, name):
    return colltest_client.connect(address, token=TOKENS[name][1])


def finished_run(client):
    """The id of a small DONE run of `client`'s caller."""
    run = client.run(world_size=2, m=[1], n=1024, variants="one_stage", modes="eager",
                     timeout=120)
    if run.state is not colltest_client.RunState.DONE:
        raise AssertionError(f"the setup run {run.run_id} ended {run.state}: {run.message}")
    return run.run_id


def set_baseline(client, run_id, name=""):
    """(status code, message) of SetBaseline."""
    try:
        client.stub.SetBaseline(pb2.SetBaselineRequest(run_id=run_id, name=name),
                                timeout=CALL_TIMEOUT_S, metadata=client.metadata)
        return grpc.StatusCode.OK, ""
    except grpc.RpcError as error:
        return error.code(), error.details()


def default_run(client):
    listed = client.stub.ListBaselines(pb2.ListBaselinesRequest(), timeout=CALL_TIMEOUT_S,
                                       metadata=client.metadata)
    return next((b.run_id for b in listed.baselines if b.name == "default"), None)


class Checks:
    """Prints each check that holds as it is made; the failed ones are the test's problems."""

    def __init__(self):
        self.failures = []

    def expect(self, ok, what):
        if ok:
            print("ok:   " + what)
        else:
            self.failures.append(what)


def check_ownership(checks, a, b, admin, run_a, run_b):
    code, message = set_baseline(b, run_b)
    replaced = default_run(a) == run_b
    print(f"runner-b replacing runner-a's default: {code.name}, default replaced: "
          f"{'yes' if replaced else 'no'}")
    checks.expect(code == grpc.StatusCode.PERMISSION_DENIED,
                  f"runner-b is refused PERMISSION_DENIED (got {code.name}: {message})")
    checks.expect('baseline "default"' in message and "belongs to runner-a" in message
                  and "only its own" in message,
                  f"the refusal names the baseline, its owner and the rule: {message!r}")
    checks.expect(not replaced, "default still names runner-a's run")

    code, message = set_baseline(admin, run_b)
    checks.expect(code == grpc.StatusCode.OK, f"the admin replaces it ({code.name} {message})")
    checks.expect(default_run(a) == run_b, "default names the admin's choice")
    code, message = set_baseline(a, run_a)
    checks.expect(code == grpc.StatusCode.OK,
                  f"runner-a replaces its default after the admin ({code.name} {message})")


def check_bound(checks, b, run_b):
    accepted, refusals = 0, []
    for i in range(NAMES_TRIED):
        code, message = set_baseline(b, run_b, f"b-{i}")
        if code == grpc.StatusCode.OK:
            accepted += 1
        else:
            refusals.append((code, message))
    print(f"new names accepted for runner-b: {accepted} of {NAMES_TRIED} "
          f"(bound {DEFAULT_MAX_BASELINES_PER_OWNER})")
    checks.expect(accepted == DEFAULT_MAX_BASELINES_PER_OWNER,
                  f"{DEFAULT_MAX_BASELINES_PER_OWNER} names accepted (got {accepted})")
    checks.expect(all(code == grpc.StatusCode.RESOURCE_EXHAUSTED for code, _ in refusals),
                  "every refusal is RESOURCE_EXHAUSTED")
    if refusals:
        message = refusals[0][1]
        print(f"first refusal: {message}")
        checks.expect(f"the limit is {DEFAULT_MAX_BASELINES_PER_OWNER}" in message
                      and "--max-baselines-per-owner" in message and "replace" in message,
                      "the refusal names the limit, the flag and how to go on")
    code, message = set_baseline(b, run_b, "b-0")
    checks.expect(code == grpc.StatusCode.OK,
                  f"runner-b replaces one of its own at the bound ({code.name} {message})")


def check_auth_off_bound(checks, colltestd):
    argv = ["--backend", "cpu", "--cpu-ranks", "2", "--listen", "127.0.0.1:0",
            "--max-baselines-per-owner", str(AUTH_OFF_BOUND)]
    with Colltestd(colltestd, argv) as daemon:
        with colltest_client.connect(daemon.address) as client:
            run_id = finished_run(client)
        accepted = 0
        for i in range(AUTH_OFF_BOUND + 2):
            with colltest_client.connect(daemon.address) as client:  # a new peer port each time
                accepted += set_baseline(client, run_id, f"n-{i}")[0] == grpc.StatusCode.OK
    print(f"authentication off, a new connection per call: {accepted} of {AUTH_OFF_BOUND + 2} "
          f"names accepted (bound {AUTH_OFF_BOUND})")
    checks.expect(accepted == AUTH_OFF_BOUND, f"{AUTH_OFF_BOUND} names accepted (got {accepted})")


def check(args):
    checks = Checks()
    with tempfile.TemporaryDirectory(prefix="baseline-owner-") as directory:
        state_dir = os.path.join(directory, "state")
        argv = ["--backend", "cpu", "--cpu-ranks", "2", "--listen", "127.0.0.1:0",
                "--token-file", write_token_file(directory)]
        with Colltestd(args.colltestd, argv, state_dir=state_dir) as daemon:
            a, b, admin = (client_of(daemon.address, n) for n in TOKENS)
            run_a, run_b = finished_run(a), finished_run(b)
            code, message = set_baseline(a, run_a)
            checks.expect(code == grpc.StatusCode.OK, f"runner-a sets its default ({message})")
            check_ownership(checks, a, b, admin, run_a, run_b)
            check_bound(checks, b, run_b)
        with Colltestd(args.colltestd, argv, state_dir=state_dir) as daemon:
            b = client_of(daemon.address, "runner-b")
            code, message = set_baseline(b, run_b)
            checks.expect(code == grpc.StatusCode.PERMISSION_DENIED,
                          f"after a restart runner-b is still refused ({code.name} {message})")
    check_auth_off_bound(checks, args.colltestd)
    return checks.failures


if __name__ == "__main__":
    hostile_main.main(check, __doc__)
