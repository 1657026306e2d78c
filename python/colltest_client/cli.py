"""`python3 -m colltest_client [--server ADDR] COMMAND ...`: devices, run, sweep, get, health,
history and compare, with the flags, defaults and exit codes of the colltest CLI (verdict.py)
and its JSON output (`--format json`)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Callable, NoReturn, Optional, Sequence, TextIO

from . import client as client_module
from . import commands, verdict
from ._version import __version__
from .cli_parser import build_parser
from .errors import ColltestError
from .output import Output

PROG = "colltest_client"
Command = Callable[[client_module.Client, argparse.Namespace, Output, TextIO], int]
COMMANDS: dict[str, Command] = {
    "devices": commands.devices, "run": commands.run, "sweep": commands.run,
    "get": commands.get, "health": commands.health, "history": commands.history,
    "runs": commands.history, "compare": commands.compare,
}


def read_token(path: str) -> str:
    """The one printable ASCII token of a token file, surrounding blanks ignored (as colltest)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        token = f.read().strip(" \t\n\v\f\r")
    if not token:
        raise ValueError(f"--token-file: '{path}' is empty")
    if not (token.isascii() and token.isprintable()):
        raise ValueError(f"--token-file: '{path}' must hold one printable ASCII token")
    return token


def connect(args: argparse.Namespace) -> client_module.Client:
    token = read_token(args.token_file) if args.token_file else None
    return client_module.connect(args.server, token=token, tls_ca=args.tls_ca,
                                 tls_cert=args.tls_cert, tls_key=args.tls_key,
                                 server_name=args.tls_server_name)


def main(argv: Optional[Sequence[str]] = None, out: TextIO = sys.stdout,
         err: TextIO = sys.stderr) -> int:
    args = build_parser(PROG, __version__).parse_args(argv)
    args.server = args.server or os.environ.get("COLLTEST_SERVER") or "127.0.0.1:50051"
    output = Output(args.format, args.out, out)
    try:
        client = connect(args)
    except (ValueError, OSError) as e:
        print(f"{PROG}: {e}", file=err)
        return verdict.EXIT_ERROR
    with client:
        try:
            return COMMANDS[args.command](client, args, output, err)
        except ColltestError as e:
            print(f"{PROG}: {args.server}: {e.code}: {e.message}", file=err)
            return verdict.exit_code_for_error(e)
        except (ValueError, OSError) as e:
            print(f"{PROG}: {e}", file=err)
            return verdict.EXIT_ERROR


def run() -> NoReturn:
    sys.exit(main())
