"""Other web pages against the HTTP port with authentication off (the loopback default).

With no token file every caller is an admin, and a browser sends whatever a page asks to
127.0.0.1: a cross-site form or a fetch with Content-Type text/plain ("simple" requests, sent
without asking the server first) used to start a sweep (200), a POST with Origin:
http://evil.example was served, and the Host header was not looked at, so a page whose own name
re-resolves to 127.0.0.1 (DNS rebinding) could read and act as a same-origin page. Now a POST must
be application/json (415), an Origin must be the port's own (403), and the Host must name the port
(403). This test sends each attack, checks the status and that the message names the header, that
no run was created (the history stays empty), and that the dashboard's kind of request, a
same-origin JSON POST, still runs a sweep.
"""

import http.client
import json

import hostile_main
from colltestd_process import Colltestd

SPEC = {"spec": {"world_size": 2, "m": [1], "n": [1024], "variants": ["VARIANT_ONE_STAGE"],
                 "modes": ["MODE_EAGER"]}}


def request(http_address, method, path, headers, body=None):
    """(status, parsed JSON or the text, the raw body) of one request; `headers` as sent, Host
    included (http.client adds none of its own here)."""
    host, port = http_address.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    for name, value in headers.items():
        conn.putheader(name, value)
    data = body.encode() if body is not None else b""
    if method == "POST":
        conn.putheader("Content-Length", str(len(data)))
    conn.endheaders(data if method == "POST" else None)
    reply = conn.getresponse()
    raw = reply.read().decode(errors="replace")
    conn.close()
    try:
        parsed = json.loads(raw.splitlines()[0]) if raw.strip() else None
    except ValueError:
        parsed = raw
    return reply.status, parsed, raw


def attacks(http_address):
    """(name, method, path, headers, body, the status wanted, a word the message must hold)."""
    own = {"Host": http_address}
    body = json.dumps(SPEC)
    return [
        ("text/plain POST (a cross-site simple request)", "POST", "/api/v1/runs",
         {**own, "Content-Type": "text/plain"}, body, 415, "Content-Type"),
        ("form POST", "POST", "/api/v1/runs",
         {**own, "Content-Type": "application/x-www-form-urlencoded"}, body, 415, "Content-Type"),
        ("POST without Content-Type (a no-cors fetch)", "POST", "/api/v1/runs/r-0/cancel",
         own, "", 415, "Content-Type"),
        ("JSON POST with Origin: http://evil.example", "POST", "/api/v1/runs",
         {**own, "Content-Type": "application/json", "Origin": "http://evil.example"}, body, 403,
         "Origin"),
        ("JSON POST with Origin: null (a sandboxed frame)", "POST", "/api/v1/runs",
         {**own, "Content-Type": "application/json", "Origin": "null"}, body, 403, "Origin"),
        ("JSON POST with Host: evil.example (DNS rebinding)", "POST", "/api/v1/runs",
         {"Host": "evil.example", "Content-Type": "application/json"}, body, 403, "Host"),
        ("GET of the history with Host: evil.example (DNS rebinding)", "GET", "/api/v1/runs",
         {"Host": "evil.example:" + http_address.rsplit(":", 1)[1]}, None, 403, "Host"),
    ]


def run_count(http_address):
    status, listed, raw = request(http_address, "GET", "/api/v1/runs", {"Host": http_address})
    assert status == 200, f"GET /api/v1/runs: HTTP {status}: {raw[:300]}"
    return len(listed.get("runs", []))


def check(args):
    failures = []
    with Colltestd(args.colltestd, ["--backend", "cpu", "--cpu-ranks", "2", "--listen",
                                    "127.0.0.1:0", "--http", "127.0.0.1:0"]) as daemon:
        address = daemon.http_address
        for name, method, path, headers, body, want, word in attacks(address):
            status, reply, raw = request(address, method, path, headers, body)
            message = reply.get("message", "") if isinstance(reply, dict) else raw[:200]
            print(f"{name}: HTTP {status} {message!r}")
            if status != want or word not in message:
                failures.append(f"{name}: HTTP {status} (wanted {want} naming {word}): "
                                f"{raw[:200]!r}")
        runs_after_attacks = run_count(address)
        print(f"runs in the history after the attacks: {runs_after_attacks}")
        if runs_after_attacks != 0:
            failures.append(f"the attacks created {runs_after_attacks} run(s)")
        status, _, raw = request(address, "POST", "/api/v1/runs",
                                 {"Host": address, "Content-Type": "application/json",
                                  "Origin": f"http://{address}"}, json.dumps(SPEC))
        summary = json.loads(raw.splitlines()[-1]).get("summary") if status == 200 else None
        print(f"same-origin JSON POST (the dashboard's): HTTP {status}, "
              f"{'a summary' if summary else 'no summary'}; runs now: {run_count(address)}")
        if summary is None or run_count(address) != 1:
            failures.append(f"the legitimate JSON POST: HTTP {status}: {raw[-300:]!r}")
    return failures


if __name__ == "__main__":
    hostile_main.main(check, __doc__)
