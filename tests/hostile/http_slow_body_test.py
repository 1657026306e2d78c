"""Slow request bodies on the HTTP port: 32 connections trickling a POST body.

Each connection sends its headers at once and then its body one byte every 0.5 s. CivetWeb gives
a connection one thread from its first byte to its last, and a body had no overall deadline, so
16 such connections (CivetWeb's 16 threads) took the whole port down for as long as they liked:
/healthz, /metrics, the API and the dashboard went unanswered. Now a body must be whole within
--http-body-timeout (10 s; 408 after it), at most --http-max-body-readers (16) requests read a
body at once and --http-max-body-readers-per-peer (4) from one address (503 / 429 at once), and
the port has 64 threads, so the rest stay free.

The test trickles from 8 loopback addresses (127.0.0.2-9, 4 connections each) for up to 15 s
while probing GET /healthz and GET /api/v1/devices every 0.25 s, and checks:
  - every probe is answered 200 within PROBE_BOUND_S;
  - every trickling connection was ended by colltestd (an error reply or a close) within
    END_BOUND_S of its start, none left trickling when the test stops.
It prints the probes' latencies and how each trickling connection ended.
"""

import collections
import http.client
import select
import socket
import statistics
import threading
import time

import hostile_main
from colltestd_process import Colltestd

SOURCES = [f"127.0.0.{i}" for i in range(2, 10)]
PER_SOURCE = 4  # 32 connections in all
TRICKLE_S = 15.0
BYTE_EVERY_S = 0.5
DECLARED_BYTES = 1000  # never reached at 2 bytes a second
PROBE_EVERY_S = 0.25
PROBE_BOUND_S = 2.0
# The body timeout (10 s) plus room for a busy machine; within TRICKLE_S.
END_BOUND_S = 13.5


class Trickler(threading.Thread):
    """One connection trickling a POST body; `outcome` says how it ended."""

    def __init__(self, http_address, source):
        super().__init__(daemon=True)
        self.host, port = http_address.rsplit(":", 1)
        self.port = int(port)
        self.source = source
        self.outcome = None
        self.ended_after_s = None

    def _end(self, outcome, started):
        self.outcome = outcome
        self.ended_after_s = time.monotonic() - started

    def run(self):
        started = time.monotonic()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind((self.source, 0))
            sock.connect((self.host, self.port))
            sock.sendall((f"POST /api/v1/runs HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                          f"Content-Type: application/json\r\n"
                          f"Content-Length: {DECLARED_BYTES}\r\n\r\n").encode())
            self._trickle(sock, started)
        except OSError as error:
            self._end(f"connection error ({type(error).__name__})", started)
        finally:
            sock.close()

    def _trickle(self, sock, started):
        while time.monotonic() - started < TRICKLE_S:
            readable, _, _ = select.select([sock], [], [], BYTE_EVERY_S)
            if readable:
                data = sock.recv(4096)
                if not data:
                    self._end("closed without a reply", started)
                else:
                    status = data.split(b" ", 2)[1].decode() if data.startswith(b"HTTP/") else "?"
                    self._end(f"HTTP {status}", started)
                return
            try:
                sock.send(b" ")
            except OSError:
                self._end("closed while sending", started)
                return
        self._end("still trickling when the test stopped", started)


def probe(http_address, path):
    """(latency in s, status or an error's name) of one GET with a PROBE_BOUND_S timeout."""
    host, port = http_address.rsplit(":", 1)
    started = time.monotonic()
    try:
        conn = http.client.HTTPConnection(host, int(port), timeout=PROBE_BOUND_S)
        conn.request("GET", path)
        reply = conn.getresponse()
        reply.read()
        conn.close()
        return time.monotonic() - started, reply.status
    except (OSError, http.client.HTTPException) as error:
        return time.monotonic() - started, type(error).__name__


def check(args):
    with Colltestd(args.colltestd, ["--backend", "cpu", "--cpu-ranks", "2", "--listen",
                                    "127.0.0.1:0", "--http", "127.0.0.1:0"]) as daemon:
        latency, status = probe(daemon.http_address, "/healthz")
        assert status == 200, f"/healthz before the attack: {status}"
        print(f"/healthz before the attack: {latency * 1000:.1f} ms")
        tricklers = [Trickler(daemon.http_address, source)
                     for source in SOURCES for _ in range(PER_SOURCE)]
        for trickler in tricklers:
            trickler.start()
        time.sleep(1.0)  # every connection has sent its headers
        probes = collections.defaultdict(list)
        while any(t.is_alive() for t in tricklers):
            for path in ("/healthz", "/api/v1/devices"):
                probes[path].append(probe(daemon.http_address, path))
            time.sleep(PROBE_EVERY_S)
        for trickler in tricklers:
            trickler.join()
        return report(tricklers, probes)


def report(tricklers, probes):
    """Prints the figures; returns the problems."""
    failures = []
    for path, results in probes.items():
        latencies = [latency for latency, _ in results]
        bad = [(round(latency, 2), status) for latency, status in results
               if status != 200 or latency > PROBE_BOUND_S]
        print(f"GET {path} during the attack: {len(results)} probes, median "
              f"{statistics.median(latencies) * 1000:.1f} ms, max {max(latencies) * 1000:.1f} ms, "
              f"{len(bad)} unanswered or over {PROBE_BOUND_S} s")
        if bad:
            failures.append(f"GET {path}: {len(bad)} of {len(results)} probes failed, e.g. "
                            f"{bad[:3]} (latency s, status)")
    endings = collections.defaultdict(list)
    for trickler in tricklers:
        endings[trickler.outcome].append(trickler.ended_after_s)
    for outcome, times in sorted(endings.items()):
        print(f"trickling connections ended by {outcome}: {len(times)}, after "
              f"{min(times):.1f}-{max(times):.1f} s")
    left = [t for t in tricklers
            if t.outcome.startswith("still") or t.ended_after_s > END_BOUND_S]
    if left:
        failures.append(f"{len(left)} of {len(tricklers)} trickling connections were not ended "
                        f"within {END_BOUND_S} s")
    return failures


if __name__ == "__main__":
    hostile_main.main(check, __doc__)
