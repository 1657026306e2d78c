"""`python3 -m colltest_client [--server ADDR] {devices,sweep} ...`: a small command line over the
package, with the exit codes of the colltest CLI (verdict.py)."""

import argparse
import os
import sys

import grpc

from . import client as client_module
from . import colltest_pb2 as pb2
from . import specs, table, verdict
from ._version import __version__

PROG = "colltest_client"
DEFAULT_SERVER = "127.0.0.1:50051"


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on a bad flag, which is the code of a HANG here: a usage error is an
    error, 3, as in the colltest CLI."""

    def error(self, message):
        self.print_usage(sys.stderr)
        print(f"{PROG}: {message}", file=sys.stderr)
        sys.exit(verdict.EXIT_ERROR)


def _uint_list(text):
    try:
        values = [int(item) for item in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a comma-separated list of numbers: {text!r}")
    if any(v < 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected numbers >= 0: {text!r}")
    return values


def _scale(text):
    """A quantising epilogue's scale: above 0 (the proto's 0 is the default) and at most 2^64."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number: {text!r}")
    if not 0 < value <= 2.0 ** 64:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number above 0, at most 2^64")
    return value


def _all_of(enum_name, text):
    """`text`, or every value of the enum when it is "all"."""
    if text is None or text.strip().lower() != "all":
        return text
    return [v.number for v in pb2.DESCRIPTOR.enum_types_by_name[enum_name].values if v.number]


def _add_sweep_flags(sweep):
    sweep.add_argument("--world", type=int, help="ranks (default: one per selected device)")
    sweep.add_argument("--devices", type=_uint_list, help="device indices, e.g. 0,1")
    sweep.add_argument("--m", type=_uint_list, required=True, help="rows (tokens), e.g. 1,8,64")
    sweep.add_argument("--n", type=_uint_list, required=True, help="hidden sizes, e.g. 7168")
    sweep.add_argument("--variants", required=True,
                       help="one_stage,two_kernel,lamport,lamport_tb,lamport_two_shot,nccl,auto, "
                            "plugin:NAME (a kernel plugin colltestd loaded) or all")
    sweep.add_argument("--modes", help="eager,graph")
    sweep.add_argument("--dtype", help="bf16|fp16|fp32")
    sweep.add_argument("--pattern", help="normal|integers|neg_zero|large|denormal|same|"
                                          "amax_last_rank|quant_ties|quant_saturate|zero_rows")
    sweep.add_argument("--tolerance", help="strict|aiter|trtllm")
    sweep.add_argument("--epilogue", help="none,fp8_token,fp8_tensor,nvfp4 or all: the quantised "
                                          "outputs, each a dimension of the sweep (default none)")
    sweep.add_argument("--keep-normed", action="store_true",
                       help="with a quantising epilogue, also write and check the normed output")
    sweep.add_argument("--fp8-format", help="e4m3fn|e4m3fnuz (default: the device's)")
    sweep.add_argument("--fp8-scale", type=_scale, help="fp8_tensor's static scale (default 1/32)")
    sweep.add_argument("--nvfp4-global-scale", type=_scale,
                       help="nvfp4's global scale (default 256)")
    sweep.add_argument("--quant-tolerance", help="strict|ulp")
    sweep.add_argument("--warmup", type=int, help="warm-up calls")
    sweep.add_argument("--iters", type=int, help="timed calls")
    sweep.add_argument("--stress", type=int, help="stress calls, every one checked")
    sweep.add_argument("--seed", type=int, help="input seed")
    sweep.add_argument("--timeout-ms", type=int, help="per-case timeout in milliseconds")
    sweep.add_argument("--fault", help="fault injection KIND[:RANK] (the server must allow it)")
    sweep.add_argument("--label", help="free text kept in the run history")
    sweep.add_argument("--stop-on-failure", action="store_true",
                       help="stop at the first WRONG, HANG or ERROR case")
    sweep.add_argument("--force", action="store_true",
                       help="run even when other processes use the devices (else BUSY, exit 5)")


def build_parser():
    parser = _Parser(prog=f"python3 -m {PROG}",
                     description="Client of colltestd: list its devices, run a sweep.",
                     epilog="Exit codes: 0 every case OK or UNSUPPORTED, 1 some case WRONG, "
                            "2 some case HANG, 3 error, 5 BUSY.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    parser.add_argument("--server", default=os.environ.get("COLLTEST_SERVER") or DEFAULT_SERVER,
                        help="colltestd address (default: $COLLTEST_SERVER, else "
                             f"{DEFAULT_SERVER})")
    parser.add_argument("--token-file", help="file holding a bearer token")
    parser.add_argument("--tls-ca", help="root CA (PEM): connect with TLS")
    parser.add_argument("--tls-server-name", help="name expected in the server certificate")
    commands = parser.add_subparsers(dest="command", required=True, metavar="{devices,sweep}")
    commands.add_parser("devices", help="list the server's devices, variants and kernel plugins")
    _add_sweep_flags(commands.add_parser(
        "sweep", help="run a sweep, printing a row per case as it completes"))
    return parser


def sweep_spec_from_args(args):
    """The SweepSpec of the sweep flags; flags not given stay unset (the server's defaults)."""
    return specs.sweep_spec(
        world_size=args.world, devices=args.devices, m=args.m, n=args.n,
        variants=args.variants, modes=args.modes, dtype=args.dtype,
        pattern=args.pattern, tolerance=args.tolerance,
        epilogues=_all_of("Epilogue", args.epilogue), keep_normed=args.keep_normed or None,
        fp8_format=args.fp8_format, fp8_scale=args.fp8_scale,
        nvfp4_global_scale=args.nvfp4_global_scale, quant_tolerance=args.quant_tolerance,
        warmup=args.warmup, iters=args.iters, stress_calls=args.stress, seed=args.seed,
        timeout_ms=args.timeout_ms, fault=args.fault, label=args.label,
        stop_on_failure=args.stop_on_failure or None, force=args.force or None)


def read_token(path):
    """The one printable token of a token file, surrounding blanks ignored."""
    with open(path) as f:
        token = f.read().strip()
    if not token or not token.isprintable() or not token.isascii():
        raise ValueError(f"--token-file: '{path}' must hold one printable ASCII token")
    return token


def run_devices(client, out):
    print(table.devices_table(client.devices(timeout=30)), file=out)
    return verdict.EXIT_OK


def run_sweep(client, spec, out):
    """Prints a row per case as it completes, then the run's summary line; the run's exit code."""
    header_printed, summary = False, None
    for event in client.sweep(spec):
        kind = event.WhichOneof("event")
        if kind in ("result", "summary") and not header_printed:
            print(table.sweep_header(), file=out)
            header_printed = True
        if kind == "result":
            print(table.sweep_row(event.result), file=out, flush=True)
        elif kind == "summary":
            summary = event.summary
    if summary is None:
        raise RuntimeError("the sweep's stream ended without the run's summary")
    print(table.run_summary(summary), file=out)
    if note := table.shared_gpu_note(summary):
        print(f"note: {note}", file=out)
    return verdict.exit_code_for_run(summary)


def main(argv=None, out=sys.stdout, err=sys.stderr):
    args = build_parser().parse_args(argv)
    try:
        spec = sweep_spec_from_args(args) if args.command == "sweep" else None
        token = read_token(args.token_file) if args.token_file else None
        client = client_module.connect(args.server, token=token, tls_ca=args.tls_ca,
                                       server_name=args.tls_server_name)
    except (ValueError, OSError) as e:
        print(f"{PROG}: {e}", file=err)
        return verdict.EXIT_ERROR
    with client:
        try:
            if args.command == "devices":
                return run_devices(client, out)
            return run_sweep(client, spec, out)
        except grpc.RpcError as e:
            print(f"{PROG}: {args.server}: {e.code().name}: {e.details()}", file=err)
            return verdict.exit_code_for_error(e)
        except RuntimeError as e:
            print(f"{PROG}: {args.server}: {e}", file=err)
            return verdict.EXIT_ERROR
