"""The argparse parser of `python3 -m colltest_client`: the colltest CLI's commands and flags.
Values stay text here; their grammar is checked where they are used (sweep_flags.py,
request_flags.py), so that every bad value is named with its flag and exits 3."""

from __future__ import annotations

import argparse
import sys
from typing import Any, NoReturn

EXIT_USAGE = 3  # argparse's own 2 would read as HANG


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        print(f"{self.prog}: {message}", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def _connection(parser: argparse.ArgumentParser, default: Any) -> None:
    """The connection flags, before the command or after it (as colltest takes them)."""
    add = parser.add_argument
    add("--server", default=default,
        help="colltestd HOST:PORT or unix:PATH (default $COLLTEST_SERVER, else 127.0.0.1:50051)")
    add("--token-file", default=default, help="file holding a bearer token (default none)")
    add("--tls-ca", default=default, help="root CA (PEM): connect with TLS (default plaintext)")
    add("--tls-cert", default=default, help="client certificate (PEM) for mutual TLS")
    add("--tls-key", default=default, help="client private key (PEM) for mutual TLS")
    add("--tls-server-name", default=default,
        help="name expected in the server certificate (default: the --server host)")


def _output(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=("table", "json"), default="table",
                        help="table or json (default table)")
    parser.add_argument("--out", default="", help="write the report to this file (default "
                                                  "stdout)")


_SWEEP_HELP = {
    "--pattern": "normal|integers|neg_zero|large|denormal|same|amax_last_rank|quant_ties|"
                 "quant_saturate|zero_rows (default normal)",
    "--tolerance": "strict|aiter|trtllm (default strict)",
    "--epilogue": "none,fp8_token,fp8_tensor,nvfp4 or all: each a dimension of the sweep "
                  "(default none)",
    "--fp8-format": "e4m3fn|e4m3fnuz (default: the device's)",
    "--fp8-scale": "static scale of fp8_tensor, above 0, at most 2^64 (default 1/32)",
    "--nvfp4-global-scale": "global scale of nvfp4, above 0, at most 2^64 (default 256)",
    "--quant-tolerance": "strict|ulp (default strict)",
    "--stress": "stress calls, every one checked (default 0)",
    "--seed": "input seed (default 0)",
    "--eps": "RMSNorm epsilon (default 1e-6)",
    "--fault": "fault injection KIND[:RANK] (the server must allow it)",
    "--grid-blocks": "force the grid size (default 0, the variant's own)",
    "--threads-per-block": "256 or 512 (default 0, the variant's own)",
    "--lamport-min-bytes": "byte-size gate of auto (default 0, the variant's own)",
    "--arm-repeat": "repeat count of the re-arm store (default 0, one store)",
    "--label": "free text kept in the run history (default none)",
}


def _sweep_flags(p: argparse.ArgumentParser) -> None:
    add = p.add_argument
    add("--world", help="ranks (default: one per selected device)")
    add("--devices", help="device indices, e.g. 0,1 (default: the first --world devices)")
    add("--m", help="rows (tokens), e.g. 1,8,64 or 1:1024:x4 (default 1,4,16,64,256,1024)")
    add("--bytes", help="per-rank sizes instead of --m, e.g. 8K:128M:x2")
    add("-b", "--minbytes", help="smallest per-rank size (nccl-tests -b)")
    add("-e", "--maxbytes", help="largest per-rank size (nccl-tests -e)")
    add("-f", "--stepfactor", help="multiply the size by X from -b to -e (default 2)")
    add("--hidden", "--n", dest="n", help="hidden sizes, e.g. 4096,7168 (default 7168)")
    add("-d", "--dtype", help="bf16|fp16|fp32, or bfloat16|half|float (default bf16)")
    add("--variants", help="one_stage,two_kernel,lamport,lamport_tb,lamport_two_shot,nccl,auto, "
                           "plugin:NAME or all (default: the server's variants)")
    add("--modes", help="eager,graph or all (default eager,graph)")
    for flag, text in _SWEEP_HELP.items():
        add(flag, help=text)
    add("-w", "--warmup", help="warm-up calls (default 5)")
    add("-n", "--iters", help="timed calls (default 20)")
    add("-c", "--check", help="nccl-tests -c: only 1 (every case is checked)")
    add("--timeout", "--timeout-ms", dest="timeout",
        help="per-case timeout: 5s, 500ms or milliseconds (default 5s)")
    add("--keep-normed", action="store_true", help="with an epilogue, check the normed output too")
    add("--no-residual", action="store_true", help="no residual add (default: with it)")
    add("--stop-on-failure", action="store_true", help="stop at the first WRONG, HANG or ERROR")
    add("--force", action="store_true", help="run even when other processes use the devices")
    add("--compare-baseline", nargs="?", const="", metavar="NAME",
        help="compare the run with this baseline (no NAME: default); exit 4 on a regression")
    add("--compare-threshold", help="tolerated slowdown, 0.05 or 5%% (default 5%%)")


def _health_flags(p: argparse.ArgumentParser) -> None:
    add = p.add_argument
    add("--pairs", action="store_true", help="also check every pair of devices")
    add("--force", action="store_true", help="check even when the devices are in use")
    add("--level", help="quick|standard|long (default quick)")
    add("--timeout", help="per-case timeout, e.g. 5s (default 5s)")
    add("--devices", help="device indices, e.g. 0,1 (default: all)")
    add("--fault", help="fault injection KIND[:RANK] (the server must allow it)")
    add("--warn-ratio", help="WARN above this multiple of the median latency (default 1.5)")
    add("--variants", help="kernel plugins to check too: plugin:NAME,...")
    add("--max-verdict-age", help="answer with the last verdict when at most this old, e.g. 60s")


def _history_flags(p: argparse.ArgumentParser) -> None:
    add = p.add_argument
    add("--label", help="only runs with exactly this label")
    add("--state", help="only runs in this state: done|cancelled|failed|interrupted|queued|running")
    add("--since", help="only runs created since a date (2026-11-01), an RFC 3339 time or a "
                        "duration ago (24h, 7d)")
    add("--variant", help="only runs that asked for this variant")
    add("--limit", help="runs per page (server default 50, at most 1000)")
    add("--page-token", default="", help="continue where a previous page ended")
    add("--all", action="store_true", help="follow the pages to the end (at most 100)")


def _compare_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", nargs="+", metavar="RUN", help="RUN_A RUN_B, or RUN with --baseline")
    p.add_argument("--baseline", nargs="?", const="", metavar="NAME",
                   help="compare RUN with this baseline of its machine (no NAME: default)")
    p.add_argument("--threshold", help="tolerated slowdown, 0.05 or 5%% (default 5%%)")


_COMMANDS = {
    "devices": ("list the server's devices, variants and kernel plugins", None),
    "run": ("run a sweep and print every case when it is done", _sweep_flags),
    "sweep": ("run a sweep, printing a row per case as it completes", _sweep_flags),
    "get": ("print a run from the server's history", None),
    "health": ("check that collectives complete, correctly, on every device", _health_flags),
    "history": ("list runs of the server's history, newest first", _history_flags),
    "compare": ("compare two runs case by case; exit 4 on a regression", _compare_flags),
}


def build_parser(prog: str, version: str) -> argparse.ArgumentParser:
    parser = _Parser(prog=f"python3 -m {prog}", description="Client of colltestd.",
                     epilog="Exit codes: 0 every case OK or UNSUPPORTED, 1 some case WRONG, 2 "
                            "some case HANG, 3 error, 4 regression (compare), 5 BUSY.")
    parser.add_argument("--version", action="version", version=f"{prog} {version}")
    _connection(parser, None)
    commands = parser.add_subparsers(dest="command", required=True,
                                     metavar="{" + ",".join(_COMMANDS) + "}")
    for name, (text, add_flags) in _COMMANDS.items():
        sub = commands.add_parser(name, help=text, aliases=["runs"] if name == "history" else [])
        _connection(sub, argparse.SUPPRESS)
        _output(sub)
        if name == "get":
            sub.add_argument("run_id", metavar="RUN_ID")
        if add_flags is not None:
            add_flags(sub)
    return parser
