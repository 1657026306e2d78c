#!/usr/bin/python3
"""Checks deploy/systemd against systemd's own tools and against the colltestd that was built.

  systemd_test.py --colltestd build/bin/colltestd [--source-dir .]

1. The unit is Type=notify with NotifyAccess=main, keeps the host's /dev, and sets up every
   directory whose variable ExecStart uses (the token file being the credential it loads).
   `systemd-analyze verify` of the unit, its ExecStart pointed at the built colltestd (verify
   insists that the binary exists), prints nothing about the unit.
2. `systemd-analyze security --offline` rates the unit's exposure at 2.5 or less.
3. `systemd-sysusers --dry-run` accepts colltest.sysusers.
   colltest-mps.service (the MPS control daemon for --ranks-per-gpu, docs/shared-gpu.md) is
   Type=forking with `nvidia-cuda-mps-control -d`, stops it with `quit`, sets both MPS directories
   with its pipe directory under its RuntimeDirectory, and passes `systemd-analyze verify` (the
   driver's binary replaced by a stand-in where the node has none); the drop-in of
   docs/shared-gpu.md orders colltestd after it and gives colltestd the same pipe directory.
4. Every --flag of ExecStart and every key of colltestd.toml is a flag that `colltestd --help`
   lists; no key is one the unit sets on the command line (the file would lose silently); the
   file with all its example lines uncommented is accepted by colltestd.
5. colltestd, started with the unit's ExecStart (the toml edited for a loopback port, temporary
   directories for the unit's ones) and a NOTIFY_SOCKET owned here, sends READY=1 from its main
   pid once its ports accept connections, and STOPPING=1 on SIGTERM, then exits 0.
Exit status 0 when all pass, 1 otherwise; each failure is printed.
"""

import argparse
import os
import re
import select
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import tomllib

UNIT = "deploy/systemd/colltestd.service"
TOML = "deploy/systemd/colltestd.toml"
SYSUSERS = "deploy/systemd/colltest.sysusers"
MPS_UNIT = "deploy/systemd/colltest-mps.service"
MPS_CONTROL = "/usr/bin/nvidia-cuda-mps-control"
SHARED_GPU_DOC = "docs/shared-gpu.md"
INSTALLED_BINARY = "/usr/bin/colltestd"
MAX_EXPOSURE = 25  # systemd-analyze's threshold is ten times the exposure it prints
READY_TIMEOUT_S = 90  # the backend probe and the worker pool start come first
STOP_TIMEOUT_S = 30
REPO_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


class Failures:
    def __init__(self):
        self.items = []

    def add(self, what):
        print(f"FAIL: {what}", flush=True)
        self.items.append(what)


def run(argv, **kwargs):
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, **kwargs)


def unit_value(unit_text, key):
    """The value of `key=` in the unit, with backslash continuations joined; None if absent."""
    joined = re.sub(r"\\\n", " ", unit_text)
    for line in joined.splitlines():
        if line.startswith(key + "="):
            return line[len(key) + 1 :]
    return None


def unit_values(unit_text, key):
    """Every value of `key=` in the unit (Environment= and the like may repeat)."""
    joined = re.sub(r"\\\n", " ", unit_text)
    return [line[len(key) + 1 :] for line in joined.splitlines() if line.startswith(key + "=")]


def help_flags(colltestd):
    """{--flag: type text} of every option `colltestd --help` lists."""
    out = run([colltestd, "--help"]).stdout
    flags = {}
    for match in re.finditer(r"^\s+(?:-\w,)?(--[a-z][a-z0-9-]*)([^\n]*)", out, re.MULTILINE):
        flags[match.group(1)] = match.group(2)
    return flags


def toml_keys(toml_text):
    """Keys of `name = value` lines, commented out or not, in file order."""
    return re.findall(r"^#? ?([a-z][a-z0-9-]*) =", toml_text, re.MULTILINE)


def check_verify(unit_text, colltestd, tmp, failures):
    if shutil.which("systemd-analyze") is None:
        failures.add("systemd-analyze is missing: install the Debian package systemd")
        return
    path = os.path.join(tmp, "colltestd.service")
    with open(path, "w") as f:
        f.write(unit_text.replace(INSTALLED_BINARY, os.path.abspath(colltestd)))
    verify = run(["systemd-analyze", "verify", path])
    about_unit = [
        line for line in (verify.stdout + verify.stderr).splitlines() if "colltestd" in line
    ]
    if verify.returncode != 0 or about_unit:
        failures.add(f"systemd-analyze verify (rc {verify.returncode}): " + " | ".join(about_unit))
    security = run(
        ["systemd-analyze", "security", "--offline=yes", f"--threshold={MAX_EXPOSURE}", path]
    )
    if security.returncode != 0:
        overall = [l for l in security.stdout.splitlines() if "Overall exposure" in l]
        failures.add(f"systemd-analyze security: above {MAX_EXPOSURE / 10}: {overall}")


def check_mps_unit(source_dir, tmp, failures):
    """colltest-mps.service: its settings, systemd-analyze verify, and the documented drop-in."""
    with open(os.path.join(source_dir, MPS_UNIT)) as f:
        unit_text = f.read()
    if unit_value(unit_text, "Type") != "forking":
        failures.add(f"{MPS_UNIT}: Type={unit_value(unit_text, 'Type')}, expected forking")
    if unit_value(unit_text, "ExecStart") != f"{MPS_CONTROL} -d":
        failures.add(f"{MPS_UNIT}: ExecStart={unit_value(unit_text, 'ExecStart')}")
    if "echo quit | " + MPS_CONTROL not in (unit_value(unit_text, "ExecStop") or ""):
        failures.add(f"{MPS_UNIT}: ExecStop does not send quit to {MPS_CONTROL}")
    env = dict(v.split("=", 1) for v in unit_values(unit_text, "Environment") if "=" in v)
    pipe = env.get("CUDA_MPS_PIPE_DIRECTORY")
    runtime = unit_value(unit_text, "RuntimeDirectory")
    if pipe is None or runtime is None or pipe != f"/run/{runtime}":
        failures.add(f"{MPS_UNIT}: CUDA_MPS_PIPE_DIRECTORY={pipe} is not /run/<RuntimeDirectory "
                     f"{runtime}>")
    if "CUDA_MPS_LOG_DIRECTORY" not in env:
        failures.add(f"{MPS_UNIT}: no Environment=CUDA_MPS_LOG_DIRECTORY")
    check_mps_drop_in(source_dir, pipe, failures)
    if shutil.which("systemd-analyze") is None:
        return  # check_verify reports it
    # verify insists that ExecStart's binary exists; a GPU-less node has no driver binaries.
    control = MPS_CONTROL
    if not os.access(MPS_CONTROL, os.X_OK):
        control = os.path.join(tmp, "nvidia-cuda-mps-control")
        with open(control, "w") as f:
            f.write("#!/bin/sh\nexit 0\n")
        os.chmod(control, 0o755)
    path = os.path.join(tmp, "colltest-mps.service")
    with open(path, "w") as f:
        f.write(unit_text.replace(MPS_CONTROL, control))
    verify = run(["systemd-analyze", "verify", path])
    about_unit = [
        line for line in (verify.stdout + verify.stderr).splitlines() if "colltest-mps" in line
    ]
    if verify.returncode != 0 or about_unit:
        failures.add(f"systemd-analyze verify {MPS_UNIT} (rc {verify.returncode}): "
                     + " | ".join(about_unit))


def check_mps_drop_in(source_dir, pipe, failures):
    """The drop-in docs/shared-gpu.md gives for colltestd: ordered after MPS, same pipe directory."""
    try:
        with open(os.path.join(source_dir, SHARED_GPU_DOC)) as f:
            doc = f.read()
    except OSError as e:
        failures.add(f"{SHARED_GPU_DOC}: {e}")
        return
    for line in ("After=colltest-mps.service", "Wants=colltest-mps.service",
                 f"Environment=CUDA_MPS_PIPE_DIRECTORY={pipe}"):
        if re.search(rf"^{re.escape(line)}$", doc, re.MULTILINE) is None:
            failures.add(f"{SHARED_GPU_DOC}: the colltestd drop-in lacks the line {line}")


def check_settings(unit_text, failures):
    """What the readiness protocol and ExecStart's variables depend on."""
    for key, want in {"Type": "notify", "NotifyAccess": "main", "User": "colltest"}.items():
        if unit_value(unit_text, key) != want:
            failures.add(f"{UNIT}: {key}={unit_value(unit_text, key)}, expected {want}")
    # A private /dev holds no GPU device nodes.
    if (unit_value(unit_text, "PrivateDevices") or "no") not in ("no", "false", "0"):
        failures.add(f"{UNIT}: PrivateDevices= hides the GPUs")
    exec_start = unit_value(unit_text, "ExecStart") or ""
    # systemd sets each variable only when the setting that creates its directory is there.
    for variable, setting in (("STATE_DIRECTORY", "StateDirectory"),
                              ("RUNTIME_DIRECTORY", "RuntimeDirectory"),
                              ("CREDENTIALS_DIRECTORY", "LoadCredential")):
        if "${%s}" % variable in exec_start and unit_value(unit_text, setting) is None:
            failures.add(f"{UNIT}: ExecStart uses ${{{variable}}} but {setting}= is not set")
    token = re.search(r"--token-file \$\{CREDENTIALS_DIRECTORY\}/(\S+)", exec_start)
    credential = (unit_value(unit_text, "LoadCredential") or "").split(":")[0]
    if token is None or token.group(1) != credential:
        failures.add(f"{UNIT}: --token-file does not name the credential {credential!r}")


def check_sysusers(source_dir, tmp, failures):
    basic = "/usr/lib/sysusers.d/basic.conf"  # defines the groups video and render
    root = os.path.join(tmp, "sysroot")
    os.makedirs(root)
    result = run(
        ["systemd-sysusers", f"--root={root}", "--dry-run", basic,
         os.path.join(source_dir, SYSUSERS)]
    )
    # Its complaints name the file and line; the rest of stderr is what it would create.
    warnings = [l for l in result.stderr.splitlines() if "colltest.sysusers" in l]
    if result.returncode != 0 or warnings:
        failures.add(f"systemd-sysusers --dry-run (rc {result.returncode}): {warnings}")


def check_flags(unit_text, toml_text, colltestd, tmp, failures):
    flags = help_flags(colltestd)
    if "--config" not in flags:
        failures.add(f"`{colltestd} --help` lists no --config: {sorted(flags)}")
        return
    exec_flags = re.findall(r"(--[a-z][a-z0-9-]*)", unit_value(unit_text, "ExecStart") or "")
    for flag in exec_flags:
        if flag not in flags:
            failures.add(f"ExecStart: {flag} is not a flag of colltestd")
    keys = toml_keys(toml_text)
    for key in keys:
        if "--" + key not in flags:
            failures.add(f"{TOML}: {key} is not a flag of colltestd")
        if "--" + key in exec_flags:
            failures.add(f"{TOML}: {key} is set by ExecStart, which wins over the file")
    # Example paths of flags that must name an existing file or directory cannot be checked here.
    needs_path = {k for k in keys if re.search(r":(FILE|DIR)\b", flags.get("--" + k, ""))}
    lines = [
        line[2:] if re.match(r"^# [a-z][a-z0-9-]* =", line) else line
        for line in toml_text.splitlines()
    ]
    lines = [l for l in lines if l.split(" =")[0] not in needs_path]
    uncommented = os.path.join(tmp, "uncommented.toml")
    with open(uncommented, "w") as f:
        f.write("\n".join(lines) + "\n")
    try:
        tomllib.loads("\n".join(lines))
    except tomllib.TOMLDecodeError as e:
        failures.add(f"{TOML} with its examples uncommented is no TOML: {e}")
    # CLI11 reads and validates the file before it handles --help.
    parsed = run([colltestd, "--config", uncommented, "--help"])
    if parsed.returncode != 0:
        failures.add(f"colltestd rejects {TOML} with its examples uncommented: {parsed.stderr}")


def set_toml_keys(toml_text, values):
    """The file with `key = value` for each of `values`, in place of its example line if any."""
    for key, value in values.items():
        line = f"{key} = {value}"
        toml_text, n = re.subn(rf"^#? ?{key} =.*$", line, toml_text, flags=re.MULTILINE)
        if n == 0:
            toml_text += line + "\n"
    return toml_text


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def can_connect(host_port):
    host, port = host_port.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=5):
            return True
    except OSError:
        return False


class NotifySocket:
    """The manager's end of $NOTIFY_SOCKET: datagrams with the sender's credentials."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)

    def receive(self, timeout_s):
        """(text, sender pid) of the next datagram, or None after timeout_s."""
        ready, _, _ = select.select([self.sock], [], [], timeout_s)
        if not ready:
            return None
        creds_size = struct.calcsize("3i")
        data, ancillary, _, _ = self.sock.recvmsg(4096, socket.CMSG_SPACE(creds_size))
        pid = None
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                pid = struct.unpack("3i", payload[:creds_size])[0]
        return data.decode(), pid

    def wait_for(self, assignment, proc, timeout_s, seen, give_up=lambda: False):
        """The sender pid of the first datagram holding `assignment`; None if it never came."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and proc.poll() is None and not give_up():
            got = self.receive(min(1.0, deadline - time.monotonic()))
            if got is None:
                continue
            seen.append(got[0])
            if assignment in got[0].split("\n"):
                return got[1]
        return None

    def close(self):
        self.sock.close()


def start_like_the_unit(unit_text, toml_text, colltestd, tmp):
    """colltestd started as the unit's ExecStart says, in temporary directories:
    (process, argv, notify socket, health address)."""
    dirs = {name: os.path.join(tmp, name.lower()) for name in
            ("STATE_DIRECTORY", "RUNTIME_DIRECTORY", "CREDENTIALS_DIRECTORY")}
    for d in dirs.values():
        os.makedirs(d, mode=0o700)
    tokens = os.path.join(dirs["CREDENTIALS_DIRECTORY"], "tokens")
    with open(os.open(tokens, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write("deploy-test admin deploy-test-token-0123456789\n")
    health_port = free_port()
    config = os.path.join(tmp, "colltestd.toml")
    with open(config, "w") as f:
        f.write(set_toml_keys(toml_text, {
            "listen": '"127.0.0.1:0"',
            "health-listen": f'"127.0.0.1:{health_port}"',
            "backend": '"cpu"',
            "cpu-ranks": "2",
        }))
    argv = shlex.split(unit_value(unit_text, "ExecStart").lstrip("-@:+!"))
    argv = [os.path.abspath(colltestd) if a == INSTALLED_BINARY else a for a in argv]
    argv = [config if a == "/etc/colltest/colltestd.toml" else a for a in argv]
    for name, d in dirs.items():
        argv = [a.replace("${%s}" % name, d) for a in argv]
    notify = NotifySocket(os.path.join(tmp, "notify"))
    env = dict(os.environ, NOTIFY_SOCKET=notify.path, **dirs)
    log = open(os.path.join(tmp, "colltestd.log"), "w")
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=log, text=True)
    return proc, argv, notify, f"127.0.0.1:{health_port}"


def check_readiness(unit_text, toml_text, colltestd, tmp, failures):
    proc, argv, notify, health = start_like_the_unit(unit_text, toml_text, colltestd, tmp)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    seen = []
    listening_since = []

    def listening_long_ago():
        """Whether colltestd printed its listening line more than 10 s ago: READY=1 is late."""
        if not listening_since and any("listening on" in line for line in lines):
            listening_since.append(time.monotonic())
        return bool(listening_since) and time.monotonic() - listening_since[0] > 10

    try:
        sender = notify.wait_for("READY=1", proc, READY_TIMEOUT_S, seen, listening_long_ago)
        if sender is None:
            failures.add(f"no READY=1 within {READY_TIMEOUT_S} s (got {seen}, rc {proc.poll()})"
                         f" from: {' '.join(argv)}")
            return
        if sender != proc.pid:
            failures.add(f"READY=1 came from pid {sender}, not colltestd's {proc.pid}: "
                         "NotifyAccess=main would drop it")
        time.sleep(0.2)  # the listening line is printed just before READY=1
        match = re.search(r"listening on (\S+)", "".join(lines))
        if match is None or not can_connect(match.group(1)):
            failures.add(f"after READY=1 the gRPC port does not accept connections: {lines}")
        if not can_connect(health):
            failures.add(f"after READY=1 --health-listen {health} does not accept connections")
        proc.send_signal(signal.SIGTERM)
        if notify.wait_for("STOPPING=1", proc, STOP_TIMEOUT_S, seen) is None:
            failures.add(f"no STOPPING=1 after SIGTERM (got {seen})")
        rc = proc.wait(timeout=STOP_TIMEOUT_S)
        if rc != 0:
            failures.add(f"colltestd exited {rc} after SIGTERM")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        notify.close()
        if failures.items:
            with open(os.path.join(tmp, "colltestd.log")) as f:
                print("colltestd's log:\n" + f.read()[-4000:])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--colltestd", required=True)
    parser.add_argument("--source-dir", default=REPO_ROOT)
    args = parser.parse_args()
    with open(os.path.join(args.source_dir, UNIT)) as f:
        unit_text = f.read()
    with open(os.path.join(args.source_dir, TOML)) as f:
        toml_text = f.read()
    failures = Failures()
    with tempfile.TemporaryDirectory(prefix="systemd_test.") as tmp:
        check_settings(unit_text, failures)
        check_verify(unit_text, args.colltestd, tmp, failures)
        check_sysusers(args.source_dir, tmp, failures)
        check_mps_unit(args.source_dir, tmp, failures)
        check_flags(unit_text, toml_text, args.colltestd, tmp, failures)
        check_readiness(unit_text, toml_text, args.colltestd, tmp, failures)
    print(f"{len(failures.items)} failure(s)" if failures.items else "OK")
    return 1 if failures.items else 0


if __name__ == "__main__":
    sys.exit(main())
