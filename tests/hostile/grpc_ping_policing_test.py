"""A PING flood on the gRPC port gets GOAWAY (ENHANCE_YOUR_CALM, "too_many_pings").

colltestd polices client PINGs (docs/limits.md, "ping policing"): a PING sooner than 10 s after
the previous one, while the server sends nothing, is a strike, and the third strike ends the
connection with GOAWAY ENHANCE_YOUR_CALM. Without it a client could keep a connection busy
answering PINGs for as long as it liked, and a proven connection (one whose call passed
authentication) is not ended by the first-call timeout either.

The test runs colltestd (cpu backend, a token file) and speaks raw HTTP/2 to it on two
connections: a proven one that first makes one authenticated ListDevices call by hand (HPACK
literals, no Huffman) and checks its grpc-status is 0, and an unproven one that makes no call. Each
then sends a PING every 50 ms (acking the server's), and must get the GOAWAY within 3 s, after at
least 4 PINGs (the first PING and two strikes are allowed), and then be closed. It prints the
call's result and, per connection, the PINGs sent before the GOAWAY, the time to it, its error code
and debug data.
"""

import select
import socket
import struct
import tempfile
import time

import hostile_main
from colltestd_process import Colltestd

TOKEN = "ping-policing-token-0123456789abcdef"
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY = 0, 1, 3, 4, 6, 7
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4
ENHANCE_YOUR_CALM = 0xB
LIST_DEVICES = "/colltest.v1.CollectiveTest/ListDevices"
CALL_STREAM = 1

PING_EVERY_S = 0.05
GOAWAY_BOUND_S = 3.0
# The first PING is no strike, the next two are the strikes allowed: the fourth gets the GOAWAY.
MIN_PINGS_BEFORE_GOAWAY = 4
CLOSE_BOUND_S = 2.0
CALL_TIMEOUT_S = 5.0
SETUP_TIMEOUT_S = 5.0
START_TIMEOUT_S = 10
STOP_TIMEOUT_S = 5


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(
        ">I", stream) + payload


def hpack_integer(value, prefix_bits, first_byte=0):
    """RFC 7541 5.1: `value` with a prefix of `prefix_bits` bits in a byte starting `first_byte`."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first_byte | value])
    out = bytearray([first_byte | limit])
    value -= limit
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    out.append(value)
    return bytes(out)


def hpack_literal(name, value):
    """A literal header field without indexing, new name, neither string Huffman coded."""
    name, value = name.encode(), value.encode()
    return (b"\x00" + hpack_integer(len(name), 7) + name + hpack_integer(len(value), 7) + value)


def call_headers(authority):
    fields = [(":method", "POST"), (":scheme", "http"), (":path", LIST_DEVICES),
              (":authority", authority), ("content-type", "application/grpc"),
              ("te", "trailers"), ("authorization", f"Bearer {TOKEN}")]
    return b"".join(hpack_literal(name, value) for name, value in fields)


def literal_value(block, name):
    """The value of the first literal field named `name` (a literal name, not Huffman coded) in
    an HPACK block, or None. gRPC writes grpc-status so the first time on a connection."""
    needle = bytes([len(name)]) + name.encode()
    at = block.find(needle)
    if at < 0 or at + len(needle) >= len(block):
        return None
    length_byte = block[at + len(needle)]
    if length_byte & 0x80 or length_byte == 0x7F:  # Huffman coded, or too long to be a status
        return None
    start = at + len(needle) + 1
    return block[start:start + length_byte].decode(errors="replace")


class Connection:
    """A raw HTTP/2 connection to colltestd that answers its SETTINGS and PINGs."""

    def __init__(self, address):
        host, port = address.rsplit(":", 1)
        self.authority = address
        self.sock = socket.create_connection((host, int(port)), timeout=SETUP_TIMEOUT_S)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""
        self.closed = False
        self.pings_acked = 0
        self.send(PREFACE + frame(SETTINGS, 0, 0))

    def send(self, data):
        try:
            self.sock.sendall(data)
            return True
        except OSError:
            return False

    def frames(self, deadline):
        """Yields (kind, flags, stream, payload) of the frames that arrive until `deadline`, after
        answering SETTINGS and PINGs; ends early once the server closes the connection."""
        while not self.closed and time.monotonic() < deadline:
            while len(self.buffer) >= 9:
                length = int.from_bytes(self.buffer[:3], "big")
                if len(self.buffer) < 9 + length:
                    break
                kind, flags = self.buffer[3], self.buffer[4]
                stream = int.from_bytes(self.buffer[5:9], "big") & 0x7FFFFFFF
                payload, self.buffer = self.buffer[9:9 + length], self.buffer[9 + length:]
                self.answer(kind, flags, payload)
                yield kind, flags, stream, payload
            ready, _, _ = select.select([self.sock], [], [],
                                        max(0.0, deadline - time.monotonic()))
            if ready:
                try:
                    data = self.sock.recv(65536)
                except OSError:
                    data = b""
                self.closed = not data
                self.buffer += data

    def answer(self, kind, flags, payload):
        if kind == SETTINGS and not flags & ACK:
            self.send(frame(SETTINGS, ACK, 0))
        elif kind == PING and not flags & ACK:
            self.send(frame(PING, ACK, 0, payload))
        elif kind == PING:
            self.pings_acked += 1

    def close(self):
        self.sock.close()


def call_list_devices(conn):
    """One authenticated ListDevices call on stream 1: (grpc-status or None, what went wrong)."""
    conn.send(frame(HEADERS, END_HEADERS, CALL_STREAM, call_headers(conn.authority)) +
              frame(DATA, END_STREAM, CALL_STREAM, b"\x00" + struct.pack(">I", 0)))
    reply_bytes, status = 0, None
    for kind, flags, stream, payload in conn.frames(time.monotonic() + CALL_TIMEOUT_S):
        if kind == GOAWAY:
            return None, f"GOAWAY during the call (error {error_code(payload):#x})"
        if stream != CALL_STREAM:
            continue
        if kind == RST_STREAM:
            return None, f"RST_STREAM (error {int.from_bytes(payload[:4], 'big'):#x})"
        if kind == DATA:
            reply_bytes += len(payload)
        if kind == HEADERS:
            status = literal_value(payload, "grpc-status") or status
            if flags & END_STREAM:
                if status != "0":
                    return status, ("trailers without a readable grpc-status" if status is None
                                    else f"grpc-status {status}")
                if reply_bytes <= 5:
                    return status, f"grpc-status 0 but {reply_bytes} bytes of reply"
                return status, None
    return None, f"no trailers within {CALL_TIMEOUT_S} s (closed: {conn.closed})"


def error_code(goaway_payload):
    return int.from_bytes(goaway_payload[4:8], "big")


def ping_until_goaway(conn):
    """Sends a PING every PING_EVERY_S until a GOAWAY arrives (bounded); returns the figures."""
    started = time.monotonic()
    sent, goaway, goaway_s = 0, None, None
    while goaway is None and time.monotonic() - started < GOAWAY_BOUND_S and not conn.closed:
        sent += conn.send(frame(PING, 0, 0, struct.pack(">Q", 0x70696E6700000000 + sent + 1)))
        for kind, _, _, payload in conn.frames(time.monotonic() + PING_EVERY_S):
            if kind == GOAWAY:
                goaway, goaway_s = payload, time.monotonic() - started
                break
    closed_after_s = None
    if goaway is not None:
        for _ in conn.frames(time.monotonic() + CLOSE_BOUND_S):
            pass
        closed_after_s = time.monotonic() - started - goaway_s if conn.closed else None
    return {"sent": sent, "acked": conn.pings_acked, "goaway": goaway, "goaway_s": goaway_s,
            "closed_after_s": closed_after_s}


def judge(name, figures):
    """Prints a connection's figures; returns its problems."""
    goaway = figures["goaway"]
    if goaway is None:
        print(f"{name}: {figures['sent']} PINGs sent ({figures['acked']} acked), no GOAWAY "
              f"within {GOAWAY_BOUND_S} s")
        return [f"{name}: no GOAWAY after {figures['sent']} PINGs in {GOAWAY_BOUND_S} s"]
    code, debug = error_code(goaway), goaway[8:].decode(errors="replace")
    closed = figures["closed_after_s"]
    print(f"{name}: {figures['sent']} PINGs sent ({figures['acked']} acked) before GOAWAY after "
          f"{figures['goaway_s'] * 1000:.0f} ms: error {code:#x}, debug data {debug!r}; closed "
          + (f"{closed * 1000:.0f} ms after it" if closed is not None else "not at all"))
    problems = []
    if code != ENHANCE_YOUR_CALM or debug != "too_many_pings":
        problems.append(f"{name}: GOAWAY error {code:#x} {debug!r}, wanted "
                        f"ENHANCE_YOUR_CALM ({ENHANCE_YOUR_CALM:#x}) 'too_many_pings'")
    if figures["sent"] < MIN_PINGS_BEFORE_GOAWAY:
        problems.append(f"{name}: GOAWAY after {figures['sent']} PINGs, before the "
                        f"{MIN_PINGS_BEFORE_GOAWAY} that two strikes allow")
    if closed is None:
        problems.append(f"{name}: not closed within {CLOSE_BOUND_S} s of the GOAWAY")
    return problems


def proven_connection(address):
    conn = Connection(address)
    try:
        started = time.monotonic()
        status, why = call_list_devices(conn)
        print(f"proven connection: ListDevices grpc-status {status} in "
              f"{(time.monotonic() - started) * 1000:.0f} ms" + (f" ({why})" if why else ""))
        if why:
            return [f"the authenticated ListDevices call failed: {why}"]
        return judge("proven connection", ping_until_goaway(conn))
    finally:
        conn.close()


def unproven_connection(address):
    conn = Connection(address)
    try:
        return judge("unproven connection", ping_until_goaway(conn))
    finally:
        conn.close()


def write_token_file(directory):
    return hostile_main.write_private(directory, "tokens", f"lab viewer {TOKEN}\n")


def check(args):
    with tempfile.TemporaryDirectory(prefix="ping-policing-") as directory:
        daemon_args = ["--backend", "cpu", "--cpu-ranks", "2", "--listen", "127.0.0.1:0",
                       "--token-file", write_token_file(directory)]
        with Colltestd(args.colltestd, daemon_args, start_timeout_s=START_TIMEOUT_S,
                       stop_timeout_s=STOP_TIMEOUT_S) as daemon:
            problems = proven_connection(daemon.address)
            problems += unproven_connection(daemon.address)
            if daemon.poll() is not None:
                problems.append(f"colltestd exited {daemon.poll()} during the test")
    return problems


if __name__ == "__main__":
    hostile_main.main(check, __doc__)
