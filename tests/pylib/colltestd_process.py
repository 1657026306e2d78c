"""A colltestd for a test: started on the arguments the test gives, its address read from the one
line it prints on stdout once it serves,

    colltestd listening on HOST:PORT backend=B devices=N[ http=HOST:PORT]

and stopped with SIGTERM. Every wait is bounded, and colltestd's stderr (its log) goes to a file
whose tail each error message carries.

    with Colltestd(binary, ["--backend", "cpu", "--listen", "127.0.0.1:0"]) as daemon:
        use(daemon.address, daemon.http_address)
    # leaving the block stops it and raises ColltestdError unless it exited 0 within the grace
"""

import ctypes
import os
import re
import select
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

LISTENING = re.compile(r"^colltestd listening on (\S+)(.*)$")
START_TIMEOUT_S = 60
STOP_TIMEOUT_S = 30
LOG_TAIL_LINES = 40


class ColltestdError(AssertionError):
    """colltestd did not start, did not stop within the grace, or exited non-zero. An
    AssertionError, so that a test reports it as a failed check and callers that catch the
    failures of their checks catch it too."""


def die_with_parent():
    """In the child, before exec: SIGTERM when the test process dies (a ctest timeout kills it), so
    that no colltestd is left serving."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _has_flag(args, flag):
    return any(a == flag or a.startswith(flag + "=") for a in args)


class Colltestd:
    """A running colltestd; see the module's docstring.

    binary, args: the program and its arguments; --state-dir is added unless args hold one:
        state_dir, or else a temporary directory removed on stop.
    env, cwd: of the process (None: the test's own).
    log_path: where its stderr goes; None: a temporary file, removed on stop.
    new_session: it leads a process group of its own, and stop() SIGKILLs that whole group
        afterwards, so that nothing it started outlives it.
    start_timeout_s, stop_timeout_s: how long to wait for the listening line, and after SIGTERM.

    After the start: address, http_address (None without --http), backend, devices (int), pid,
    argv. Raises ColltestdError (after stopping it) when it does not announce its address.
    """

    def __init__(self, binary, args, state_dir=None, env=None, log_path=None, cwd=None,
                 new_session=False, start_timeout_s=START_TIMEOUT_S,
                 stop_timeout_s=STOP_TIMEOUT_S):
        self.start_timeout_s = start_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.new_session = new_session
        self.returncode = None  # set by stop()
        self._stop_problem = None
        self._temp_paths = []
        self.argv = [binary] + list(args)
        if not _has_flag(args, "--state-dir"):
            if state_dir is None:
                state_dir = tempfile.mkdtemp(prefix="colltestd-state-")
                self._temp_paths.append(state_dir)
            self.argv += ["--state-dir", state_dir]
        if log_path is None:
            fd, log_path = tempfile.mkstemp(prefix="colltestd-", suffix=".log")
            os.close(fd)
            self._temp_paths.append(log_path)
        self.log_path = log_path
        self.address = self.http_address = self.backend = self.devices = None
        self._stdout_lines = []
        with open(log_path, "w") as log:
            try:
                self._proc = subprocess.Popen(
                    self.argv, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL,
                    env=env, cwd=cwd, bufsize=0, start_new_session=new_session,
                    preexec_fn=die_with_parent)
            except OSError as error:
                self._remove_temp_paths()
                raise ColltestdError(f"cannot start colltestd ({shlex.join(self.argv)}): "
                                     f"{error}") from None
        self.pid = self._proc.pid
        self._wait_listening(time.monotonic() + start_timeout_s)
        # Nobody else reads its stdout: drained, so that it never blocks on a full pipe.
        threading.Thread(target=self._proc.stdout.read, daemon=True).start()

    def _wait_listening(self, deadline):
        # Raw reads of the descriptor: a buffered reader could hold a line that select() misses.
        fd = self._proc.stdout.fileno()
        buffer = b""
        closed = False
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.5)
            if ready:
                chunk = os.read(fd, 4096)
                if not chunk:
                    closed = True
                    break
                buffer += chunk
                while b"\n" in buffer:
                    raw, buffer = buffer.split(b"\n", 1)
                    text = raw.decode(errors="replace")
                    self._stdout_lines.append(text)
                    if self._parse_listening(text):
                        return
            elif self._proc.poll() is not None:
                break
        if closed:  # its stdout ends just before it exits: give the exit a moment to land
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        if self._proc.poll() is not None:
            why = "exited before it announced its address"
        elif closed:
            why = "closed its stdout without announcing its address"
        else:
            why = f"did not announce its address within {self.start_timeout_s} s"
        self._stop(remove_temp_paths=False)
        message = self._describe(f"colltestd {why}")
        self._remove_temp_paths()
        raise ColltestdError(message)

    def _parse_listening(self, text):
        match = LISTENING.match(text)
        if not match:
            return False
        fields = dict(f.split("=", 1) for f in match.group(2).split() if "=" in f)
        self.address = match.group(1)
        self.http_address = fields.get("http")
        self.backend = fields.get("backend")
        self.devices = int(fields["devices"]) if fields.get("devices", "").isdigit() else None
        return True

    def _describe(self, what):
        stdout = " | ".join(self._stdout_lines) or "(nothing)"
        return (f"{what} (ran as: {shlex.join(self.argv)}; exit {self._proc.returncode})\n"
                f"  stdout: {stdout}\n  log ({self.log_path}):\n{self.log_tail()}")

    def log_tail(self, lines=LOG_TAIL_LINES):
        """The last `lines` lines of its log."""
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError as error:
            return f"(log unreadable: {error})\n"

    def poll(self):
        """Its exit code once it has exited, else None."""
        return self._proc.poll()

    def _kill(self):
        if self.new_session:
            try:
                os.killpg(self._proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        else:
            self._proc.kill()

    def _stop(self, remove_temp_paths=True):
        """SIGTERM, the grace, then SIGKILL; records the exit code and what went wrong."""
        if self.returncode is not None:
            return
        timed_out = False
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(timeout=self.stop_timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
        if timed_out or self.new_session:
            self._kill()  # with new_session also whatever it left in its group
        self.returncode = self._proc.wait()
        if timed_out:
            self._stop_problem = f"colltestd did not stop within {self.stop_timeout_s} s of SIGTERM"
        elif self.returncode != 0:
            self._stop_problem = f"colltestd exited {self.returncode} after SIGTERM"
        if self._stop_problem:
            self._stop_problem = self._describe(self._stop_problem)
        if remove_temp_paths:
            self._remove_temp_paths()

    def _remove_temp_paths(self):
        for path in self._temp_paths:
            if os.path.isdir(path):
                shutil.rmtree(path, ignore_errors=True)
            elif os.path.exists(path):
                os.remove(path)
        self._temp_paths = []

    def stop(self, check=True):
        """Stops it (once; later calls repeat the outcome) and returns its exit code. With check,
        raises ColltestdError when it did not stop within the grace or exited non-zero."""
        self._stop()
        if check and self._stop_problem:
            raise ColltestdError(self._stop_problem)
        return self.returncode

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.stop()
            return
        # The block's own failure is the one to report; a bad stop is only printed beside it.
        self.stop(check=False)
        if self._stop_problem:
            print(self._stop_problem, file=sys.stderr)
