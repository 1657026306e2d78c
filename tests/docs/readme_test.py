#!/usr/bin/python3
"""Runs the command examples of the README (and of any other Markdown file given) so that they
cannot drift from the CLI.

Every fenced ```sh block is read; of its lines (backslash continuations joined):
  - `build/bin/colltestd ... &` starts a colltestd as that line says, except that --listen becomes
    127.0.0.1:0 (the address is read from its "colltestd listening on HOST:PORT" line), --state-dir
    a fresh directory, and --http 127.0.0.1:0 is added when the documents have curl lines;
    a later such line stops the previous server and starts its own;
  - `build/bin/colltestd ...` without `&` (e.g. --version) runs like a CLI line;
  - `build/bin/colltest ...` runs verbatim through bash in a temporary working directory (where
    build/bin links to --bin-dir, so files written with --out land there), with COLLTEST_SERVER
    set to the server's address;
  - `curl ... http://HOST:PORT/...` runs with HOST:PORT replaced by the server's --http address;
  - any other line (scripts, installs) is not run.
A trailing comment `# exit N` sets the exit code expected (default 0); `# doc-test: skip (reason)`
leaves a line out. Every line runs with a bounded timeout; each failure is reported with its file,
line number, text, exit code and output, and the test exits 1 when any line failed.

Usage: readme_test.py --bin-dir build/bin [--timeout 120] [README.md docs/x.md ...]
"""

import argparse
import dataclasses
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from colltestd_process import Colltestd, ColltestdError, die_with_parent  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI_PREFIX = "build/bin/colltest "
DAEMON_PREFIX = "build/bin/colltestd"
EXIT_DIRECTIVE = re.compile(r"(?:^|;)\s*exit\s+(\d+)\b")
SKIP_DIRECTIVE = re.compile(r"doc-test:\s*skip\b\s*(?:\(([^)]*)\))?")
HTTP_URL = re.compile(r"http://(?:127\.0\.0\.1|localhost|\[::1\]):\d+")
START_TIMEOUT_S = 60
STOP_TIMEOUT_S = 15


@dataclasses.dataclass
class Line:
    path: str
    number: int  # 1-based line of the file where the command starts
    text: str  # the command, continuations joined, comment removed
    comment: str  # the trailing comment without '#', "" when none

    def where(self):
        return f"{os.path.relpath(self.path)}:{self.number}"


def split_comment(line):
    """(command, comment): the comment starts at the first '#' outside quotes after a blank."""
    quote = None
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = None
            elif c == "\\" and quote == '"':
                continue
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1:].strip()
    return line.rstrip(), ""


def extract(path):
    """Every command of every ```sh block of `path`, continuations joined."""
    lines = []
    with open(path, encoding="utf-8") as f:
        raw = f.read().split("\n")
    in_block = False
    pending, start = "", 0
    for number, text in enumerate(raw, 1):
        fence = text.strip()
        if not in_block:
            in_block = fence == "```sh"
            continue
        if fence.startswith("```"):
            in_block = False
            continue
        command, comment = split_comment(text)
        if not pending:
            start = number
        if command.endswith("\\"):
            pending += command[:-1].rstrip() + " "
            continue
        full = (pending + command.strip()).strip()
        pending = ""
        if full:
            lines.append(Line(path, start, full, comment))
    return lines


def kind_of(line):
    if line.text.startswith(DAEMON_PREFIX + " ") or line.text == DAEMON_PREFIX:
        return "daemon" if line.text.endswith("&") else "cli"
    if line.text.startswith(CLI_PREFIX):
        return "cli"
    if line.text.startswith("curl ") and HTTP_URL.search(line.text):
        return "curl"
    return None


def expected_exit(line):
    match = EXIT_DIRECTIVE.search(line.comment)
    return int(match.group(1)) if match else 0


def stop_group(proc, grace_s):
    """SIGTERM to the process, then SIGKILL to its whole group (it leads one) after `grace_s`."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


class Server:
    """A colltestd started from a README line, on an ephemeral port, with its own state dir."""

    def __init__(self, line, bin_dir, work_dir, index, want_http):
        args = shlex.split(line.text.rstrip("&").strip())[1:]
        args = self._rewrite(args, "--listen", "127.0.0.1:0")
        state_dir = os.path.join(work_dir, f".state-{index}")
        args = self._rewrite(args, "--state-dir", state_dir)
        if want_http or any(a == "--http" or a.startswith("--http=") for a in args):
            args = self._rewrite(args, "--http", "127.0.0.1:0")
        self.line = line
        env = dict(os.environ, XDG_STATE_HOME=state_dir)
        # Its own process group, killed whole after the stop: nothing it started outlives it.
        # The README's servers are not checked for a clean exit, only for staying up.
        try:
            self.daemon = Colltestd(os.path.join(bin_dir, "colltestd"), args, env=env,
                                    cwd=work_dir,
                                    log_path=os.path.join(work_dir, f".colltestd-{index}.log"),
                                    new_session=True, start_timeout_s=START_TIMEOUT_S,
                                    stop_timeout_s=STOP_TIMEOUT_S)
        except ColltestdError as error:
            raise RuntimeError(f"{line.where()}: {line.text}\n  {error}") from None
        self.argv = self.daemon.argv
        self.address, self.http = self.daemon.address, self.daemon.http_address

    @staticmethod
    def _rewrite(argv, flag, value):
        out, skip = [], False
        for a in argv:
            if skip:
                skip = False
                continue
            if a == flag:
                skip = True
                continue
            if a.startswith(flag + "="):
                continue
            out.append(a)
        return out + [flag, value]

    def log_tail(self):
        return self.daemon.log_tail()

    def stop(self):
        self.daemon.stop(check=False)


def run_line(line, command, work_dir, env, timeout_s):
    """(exit code or None on timeout, output) of `command` run by bash in `work_dir`."""
    proc = subprocess.Popen(["bash", "-c", command], cwd=work_dir, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True,
                            preexec_fn=die_with_parent)
    try:
        output, _ = proc.communicate(timeout=timeout_s)
        return proc.returncode, output.decode(errors="replace")
    except subprocess.TimeoutExpired:
        stop_group(proc, 2)
        output, _ = proc.communicate()
        return None, output.decode(errors="replace")


def prepare_out_dirs(line, work_dir):
    """The README's lines run from the repository root: a directory that --out writes into and that
    exists there (tune/, out/) is made in the working directory too."""
    try:
        words = shlex.split(line.text)
    except ValueError:
        return
    for i, word in enumerate(words):
        target = words[i + 1] if word == "--out" and i + 1 < len(words) else None
        if word.startswith("--out="):
            target = word[len("--out="):]
        if not target or os.path.isabs(target):
            continue
        parent = os.path.dirname(target)
        if parent and os.path.isdir(os.path.join(REPO, parent)):
            os.makedirs(os.path.join(work_dir, parent), exist_ok=True)


def indent(text, limit=60):
    lines = text.rstrip("\n").split("\n")
    if len(lines) > limit:
        lines = [f"... ({len(lines) - limit} lines left out)"] + lines[-limit:]
    return "\n".join("    | " + l for l in lines)


class ReadmeRun:
    def __init__(self, bin_dir, work_dir, timeout_s, want_http, first_daemon):
        self.bin_dir = bin_dir
        self.work_dir = work_dir
        self.timeout_s = timeout_s
        self.want_http = want_http
        self.first_daemon = first_daemon
        self.server = None
        self.started = 0
        self.failures = []
        self.ran = 0

    def start(self, line):
        if self.server is not None:
            self.server.stop()
            self.server = None
        self.started += 1
        self.server = Server(line, self.bin_dir, self.work_dir, self.started, self.want_http)
        print(f"{line.where()}: started {shlex.join(self.server.argv)} -> {self.server.address}"
              + (f" http={self.server.http}" if self.server.http else ""))

    def ensure_server(self, line):
        if self.server is not None:
            return True
        if self.first_daemon is None:
            self.fail(line, "", "no `build/bin/colltestd ... &` line to start a server from")
            return False
        self.start(self.first_daemon)
        return True

    def fail(self, line, output, why):
        self.failures.append(f"{line.where()}: {line.text}\n  {why}, expected exit "
                             f"{expected_exit(line)}\n{indent(output)}")

    def run(self, line, kind):
        if not self.ensure_server(line):
            return
        command = line.text
        if kind == "curl":
            if not self.server.http:
                self.fail(line, "", "the server serves no --http address")
                return
            command = HTTP_URL.sub("http://" + self.server.http, command)
        prepare_out_dirs(line, self.work_dir)
        env = dict(os.environ, COLLTEST_SERVER=self.server.address, NO_COLOR="1")
        self.ran += 1
        started = time.monotonic()
        code, output = run_line(line, command, self.work_dir, env, self.timeout_s)
        want = expected_exit(line)
        verdict = "ok" if code == want else "FAILED"
        print(f"{line.where()}: {verdict} exit {code} (want {want}) in "
              f"{time.monotonic() - started:.1f} s: {line.text}", flush=True)
        if code is None:
            self.fail(line, output, f"timed out after {self.timeout_s} s")
        elif code != want:
            self.fail(line, output, f"exit {code}")
        if self.server.daemon.poll() is not None:
            self.fail(line, self.server.log_tail(),
                      f"colltestd exited ({self.server.daemon.poll()}) during this line")
            self.server.stop()
            self.server = None

    def close(self):
        if self.server is not None:
            self.server.stop()
            self.server = None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin-dir", default=os.path.join(REPO, "build", "bin"))
    parser.add_argument("--timeout", type=float, default=120, help="seconds per line")
    parser.add_argument("docs", nargs="*", default=[os.path.join(REPO, "README.md")])
    args = parser.parse_args()
    bin_dir = os.path.abspath(args.bin_dir)
    for tool in ("colltest", "colltestd"):
        if not os.access(os.path.join(bin_dir, tool), os.X_OK):
            sys.exit(f"{bin_dir}/{tool}: not an executable (build it, or pass --bin-dir)")

    lines = [line for path in args.docs for line in extract(path)]
    classified = [(line, kind_of(line)) for line in lines]
    bad_skips = [l for l, k in classified
                 if k and SKIP_DIRECTIVE.search(l.comment)
                 and not (SKIP_DIRECTIVE.search(l.comment).group(1) or "").strip()]
    if bad_skips:
        sys.exit("\n".join(f"{l.where()}: `doc-test: skip` needs a reason in parentheses"
                           for l in bad_skips))
    runnable = [(l, k) for l, k in classified if k and not SKIP_DIRECTIVE.search(l.comment)]
    if not any(k in ("cli", "curl") for _, k in runnable):
        sys.exit(f"no `{CLI_PREFIX}` line in {', '.join(args.docs)}: nothing to test")
    want_http = any(k == "curl" for _, k in runnable)
    first_daemon = next((l for l, k in runnable if k == "daemon"), None)

    work_dir = tempfile.mkdtemp(prefix="colltest-doc-")
    os.makedirs(os.path.join(work_dir, "build"))
    os.symlink(bin_dir, os.path.join(work_dir, "build", "bin"))
    readme = ReadmeRun(bin_dir, work_dir, args.timeout, want_http, first_daemon)
    # SIGTERM (ctest's timeout, a CI cancel) goes through the finally below.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        for line, kind in classified:
            if kind is None:
                continue
            if SKIP_DIRECTIVE.search(line.comment):
                print(f"{line.where()}: skipped ({SKIP_DIRECTIVE.search(line.comment).group(1)})")
            elif kind == "daemon":
                readme.start(line)
            else:
                readme.run(line, kind)
    except RuntimeError as error:
        readme.failures.append(str(error))
    finally:
        readme.close()
        shutil.rmtree(work_dir, ignore_errors=True)

    print(f"{readme.ran} lines run, {len(readme.failures)} failed")
    if readme.failures:
        print("\n\n".join(readme.failures), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
