"""Connections that speak HTTP/2 but never authenticate may not lock out the gRPC API.

colltestd runs with a token file at 256 descriptors (default --max-connections 80 with 4 cpu
ranks). An attacker from 8 loopback addresses (127.0.0.2-9) keeps up to 240 connections open: each
sends the HTTP/2 client preface and an empty SETTINGS frame, then acks every SETTINGS and PING the
server sends, and is reopened as soon as the server closes it. During the flood, `colltest devices`
with a valid token is called 20 times from 127.0.0.1 and every call must succeed.

Before the first-call timeout, the per-peer limit and the fair eviction of unproven connections
(server/net/listener.h), such connections passed the listener's preface check and held the cap until
the 5-minute idle limit: every call was refused. Prints how many calls succeeded, their latency,
and what the attacker saw (connections opened, closed by the server).
"""

import base64
import errno
import os
import resource
import selectors
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import hostile_main
from colltestd_process import Colltestd

TOKEN = "flood-test-token-0123456789abcdef"
FD_LIMIT = 256
CPU_RANKS = 4
ATTACKER_SOURCES = [f"127.0.0.{i}" for i in range(2, 10)]
ATTACKER_OPEN = 240  # 3x the default cap at FD_LIMIT: 30 per address
ATTACKER_CONNECTS_PER_S = 500
ATTACKER_MAX_CONNECTS = 25_000
ATTACKER_MAX_S = 60
FLOOD_FILL_S = 3.0  # the attacker holds the cap before the first call
CALLS = 20
CALL_PAUSE_S = 0.25
CALL_TIMEOUT_S = 30

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
SETTINGS, PING, GOAWAY = 4, 6, 7
ACK = 1

# Puts the daemon at FD_LIMIT descriptors (soft and hard), then becomes it.
LIMITED_EXEC = ("import os, resource, sys; "
                f"resource.setrlimit(resource.RLIMIT_NOFILE, ({FD_LIMIT}, {FD_LIMIT})); "
                "os.execv(sys.argv[1], sys.argv[1:])")


def frame(kind, flags, payload=b""):
    header = struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", 0)
    return header + payload


class Attacker(threading.Thread):
    """Holds up to ATTACKER_OPEN connections that speak HTTP/2 but never make a call."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port = port
        self.stop = threading.Event()
        self.selector = selectors.DefaultSelector()
        self.buffers = {}  # socket -> bytes received, not yet parsed
        self.opened = self.closed_by_server = self.failed = 0
        self.max_open = 0
        self.next_source = 0

    def run(self):
        started = time.monotonic()
        budget = 0.0
        last = started
        while not self.stop.is_set() and time.monotonic() - started < ATTACKER_MAX_S:
            now = time.monotonic()
            budget = min(budget + (now - last) * ATTACKER_CONNECTS_PER_S, 64)
            last = now
            while (len(self.buffers) < ATTACKER_OPEN and budget >= 1
                   and self.opened + self.failed < ATTACKER_MAX_CONNECTS):
                budget -= 1
                self.open_one()
            self.max_open = max(self.max_open, len(self.buffers))
            for key, events in self.selector.select(timeout=0.01):
                self.serve(key.fileobj, events)
        for sock in list(self.buffers):
            self.drop(sock)

    def open_one(self):
        source = ATTACKER_SOURCES[self.next_source % len(ATTACKER_SOURCES)]
        self.next_source += 1
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind((source, 0))
            sock.setblocking(False)
            code = sock.connect_ex(("127.0.0.1", self.port))
            if code not in (0, errno.EINPROGRESS):
                raise OSError(code, os.strerror(code))
        except OSError:
            sock.close()
            self.failed += 1
            return
        self.opened += 1
        self.buffers[sock] = None  # None: connecting
        self.selector.register(sock, selectors.EVENT_WRITE)

    def serve(self, sock, events):
        if self.buffers.get(sock, b"") is None:  # the connect finished
            if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0 or not self.send(
                    sock, PREFACE + frame(SETTINGS, 0)):
                self.drop(sock, by_server=True)
                return
            self.buffers[sock] = b""
            self.selector.modify(sock, selectors.EVENT_READ)
            return
        try:
            data = sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self.drop(sock, by_server=True)
            return
        self.answer(sock, self.buffers[sock] + data)

    def answer(self, sock, data):
        """Acks every SETTINGS and PING; a GOAWAY ends the connection."""
        while len(data) >= 9:
            length = int.from_bytes(data[:3], "big")
            kind, flags = data[3], data[4]
            if len(data) < 9 + length:
                break
            payload, data = data[9:9 + length], data[9 + length:]
            reply = b""
            if kind == SETTINGS and not flags & ACK:
                reply = frame(SETTINGS, ACK)
            elif kind == PING and not flags & ACK:
                reply = frame(PING, ACK, payload)
            elif kind == GOAWAY:
                self.drop(sock, by_server=True)
                return
            if reply and not self.send(sock, reply):
                self.drop(sock, by_server=True)
                return
        self.buffers[sock] = data

    @staticmethod
    def send(sock, data):
        try:
            return sock.send(data) == len(data)
        except OSError:
            return False

    def drop(self, sock, by_server=False):
        if by_server:
            self.closed_by_server += 1
        self.selector.unregister(sock)
        del self.buffers[sock]
        sock.close()


def write_tokens(directory):
    return (hostile_main.write_private(directory, "tokens", f"lab viewer {TOKEN}\n"),
            hostile_main.write_private(directory, "token", TOKEN + "\n"))


def call_devices(colltest, address, token_file):
    """One `colltest devices` with the token: (ok, seconds, its stderr on one line)."""
    argv = [colltest, "--server", address, "--token-file", token_file, "devices"]
    start = time.monotonic()
    try:
        done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              timeout=CALL_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return False, time.monotonic() - start, f"no answer within {CALL_TIMEOUT_S} s"
    took = time.monotonic() - start
    return done.returncode == 0, took, " | ".join(
        done.stderr.decode(errors="replace").strip().splitlines())


def listener_metrics(http_address):
    """The listener's lines of a /metrics scrape (Basic auth with the token), or why not."""
    request = urllib.request.Request(f"http://{http_address}/metrics")
    credentials = base64.b64encode(f"lab:{TOKEN}".encode()).decode()
    request.add_header("Authorization", f"Basic {credentials}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            text = response.read().decode()
    except OSError as error:
        return [f"(no scrape: {error})"]
    return [line for line in text.splitlines()
            if line.startswith(("colltest_connections_open", "colltest_connections_refused"))]


def check(args):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))

    with tempfile.TemporaryDirectory(prefix="preface-flood-") as directory:
        server_tokens, client_token = write_tokens(directory)
        daemon_args = ["-c", LIMITED_EXEC, args.colltestd, "--backend", "cpu", "--cpu-ranks",
                       str(CPU_RANKS), "--listen", "127.0.0.1:0", "--token-file", server_tokens,
                       "--http", "127.0.0.1:0"]
        with Colltestd(sys.executable, daemon_args) as daemon:
            ok, took, why = call_devices(args.colltest, daemon.address, client_token)
            print(f"before the flood: devices {'ok' if ok else 'FAILED: ' + why} in "
                  f"{took * 1000:.0f} ms")
            attacker = Attacker(int(daemon.address.rsplit(":", 1)[1]))
            attacker.start()
            time.sleep(FLOOD_FILL_S)
            results = []
            for _ in range(CALLS):
                results.append(call_devices(args.colltest, daemon.address, client_token))
                time.sleep(CALL_PAUSE_S)
            attacker.stop.set()
            attacker.join(timeout=30)
            alive = daemon.poll() is None
            metrics = listener_metrics(daemon.http_address)

    succeeded = [took for ok, took, _ in results if ok]
    failures = [why for ok, _, why in results if not ok]
    print(f"attacker: {attacker.opened} connections opened from {len(ATTACKER_SOURCES)} "
          f"addresses, at most {attacker.max_open} open at once, {attacker.closed_by_server} "
          f"closed by the server, {attacker.failed} failed to open")
    print(f"during the flood: {len(succeeded)} of {CALLS} authenticated calls succeeded")
    if succeeded:
        print(f"latency of those: median {statistics.median(succeeded) * 1000:.0f} ms, "
              f"max {max(succeeded) * 1000:.0f} ms")
    if failures:
        print(f"first failure: {failures[0]}")
    print("colltestd's listener metrics after the flood:")
    for line in metrics:
        print(f"  {line}")
    problems = []
    if not ok:
        problems.append("the call before the flood failed")
    if not alive:
        problems.append("colltestd died during the flood")
    if len(succeeded) < CALLS:
        problems.append(f"only {len(succeeded)} of {CALLS} calls succeeded during the flood")
    if attacker.opened < ATTACKER_OPEN:
        problems.append(f"the attacker opened only {attacker.opened} connections: the flood did "
                        "not happen")
    return problems


if __name__ == "__main__":
    hostile_main.main(check, __doc__)
