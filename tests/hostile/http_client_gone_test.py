"""An HTTP sweep whose client is killed while a long case runs must be cancelled at once.

POST /api/v1/runs streams the sweep's events; its run lasts as long as the client reads. The
gateway used to notice a client gone only at its next write, the run's next event, so a killed
client's single long case ran on (still RUNNING minutes later) and held the devices. The gateway
now writes an empty line whenever the stream has been quiet for 250 ms, and the first write that
fails cancels the call. This test starts a one-case run of 100,000 timed calls (minutes on the cpu
backend) from a child process, SIGKILLs the child once the run is RUNNING, and checks through
GET /api/v1/runs/ID that the run is CANCELLED within CANCEL_BOUND_S.
"""

import http.client
import json
import os
import signal
import subprocess
import sys
import time

import hostile_main
from colltestd_process import Colltestd

CANCEL_BOUND_S = 2.0
GIVE_UP_S = 15.0  # how long the old behaviour is watched before the test reports it
SPEC = {"world_size": 2, "m": [256], "n": [4096], "variants": ["VARIANT_ONE_STAGE"],
        "warmup": 1, "iters": 100000, "timeout_ms": 1000, "label": "client-gone"}

# The client: streams the sweep and echoes each line, flushed, until it is killed.
CLIENT = r"""
import http.client, sys
host, port, body = sys.argv[1], int(sys.argv[2]), sys.argv[3]
conn = http.client.HTTPConnection(host, port, timeout=600)
conn.request("POST", "/api/v1/runs", body=body, headers={"Content-Type": "application/json"})
reply = conn.getresponse()
print(reply.status, flush=True)
for line in reply:
    print(line.decode().strip(), flush=True)
"""


def get_json(address, path):
    host, port = address.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("GET", path)
    reply = conn.getresponse()
    body = reply.read()
    conn.close()
    assert reply.status == 200, f"GET {path}: HTTP {reply.status}: {body[:300]!r}"
    return json.loads(body)


def cancel(address, run_id):
    host, port = address.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("POST", f"/api/v1/runs/{run_id}/cancel", body="",
                 headers={"Content-Type": "application/json"})  # the API takes POSTs as JSON
    conn.getresponse().read()
    conn.close()


def start_client(http_address):
    """The child streaming the sweep, and the run id once the run is RUNNING."""
    host, port = http_address.rsplit(":", 1)
    child = subprocess.Popen([sys.executable, "-c", CLIENT, host, port, json.dumps({"spec": SPEC})],
                             stdout=subprocess.PIPE, text=True)
    status = child.stdout.readline().strip()
    assert status == "200", f"sweep: HTTP {status}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = child.stdout.readline()
        assert line, "the sweep stream ended before the run was RUNNING"
        if not line.strip():
            continue  # a heartbeat
        event = json.loads(line)
        if event.get("progress", {}).get("state") == "RUN_STATE_RUNNING":
            return child, event["run_id"]
    raise AssertionError("the run was not RUNNING within 60 s")


def check(args):
    daemon_args = ["--backend", "cpu", "--cpu-ranks", "2", "--listen", "127.0.0.1:0",
                   "--http", "127.0.0.1:0"]
    with Colltestd(args.colltestd, daemon_args) as daemon:
        child, run_id = start_client(daemon.http_address)
        time.sleep(0.5)  # well into the long case
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        killed = time.monotonic()
        state = None
        while time.monotonic() - killed < GIVE_UP_S:
            state = get_json(daemon.http_address, f"/api/v1/runs/{run_id}")["state"]
            if state == "RUN_STATE_CANCELLED":
                break
            time.sleep(0.05)
        elapsed = time.monotonic() - killed
        if state != "RUN_STATE_CANCELLED":
            cancel(daemon.http_address, run_id)  # so that colltestd stops promptly
            return [f"run {run_id} still {state} {elapsed:.1f} s after its HTTP client was "
                    f"killed (bound {CANCEL_BOUND_S} s)"]
        print(f"run {run_id} CANCELLED {elapsed:.2f} s after its HTTP client was killed "
              f"(bound {CANCEL_BOUND_S} s)")
    return ["cancelled too late"] if elapsed > CANCEL_BOUND_S else []


if __name__ == "__main__":
    hostile_main.main(check, __doc__)
