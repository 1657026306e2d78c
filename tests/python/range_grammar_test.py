"""The shared range grammar and the run/sweep defaults: the same command lines through the C++
`colltest` and through `python3 -m colltest_client`, each against a stand-in server (a Python
gRPC server here that records the SweepSpec it is sent and refuses it), must send the same
SweepSpec or be refused with the same message. The vectors are those of the C++ unit tests
(tests/unit/common/parse_test.cc, tests/unit/client/size_flags_test.cc), with the values they
expect where the C++ tests name them.

    range_grammar_test.py --colltest PATH   (colltest_client on PYTHONPATH)"""

import argparse
import io
import subprocess
import sys
import threading
import unittest
from concurrent import futures

import grpc

from colltest_client import cli, colltest_pb2 as pb2, colltest_pb2_grpc as pb2_grpc
from colltest_client import ranges

ARGS = None
MAX = (1 << 64) - 1
# --m TEXT: the rows the C++ unit test expects (None: refused).
M_VECTORS = {
    "1,8,64": [1, 8, 64], " 1 , 8k ": [1, 8192], "8..128": [8, 16, 32, 64, 128],
    "1..64": [1, 2, 4, 8, 16, 32, 64], "8..100": [8, 16, 32, 64], "8..128:x4": [8, 32, 128],
    "1..8:+1": list(range(1, 9)), "0..10:+5": [0, 5, 10], "1..3:+7": [1],
    "1K..4K": [1024, 2048, 4096], "7..7": [7], "1,4..16,3": [1, 4, 8, 16, 3],
    "1:1024:x2": [1 << i for i in range(11)], "8:128": [8, 16, 32, 64, 128],
    "8:128:X4": [8, 32, 128], "1:8:+1": list(range(1, 9)), "0:10:+5": [0, 5, 10],
    " 1K : 4K ": [1024, 2048, 4096], "1,2:8:x4,3": [1, 2, 8, 3], "1:64:x4": [1, 4, 16, 64],
    "1:64:+8": [1, 9, 17, 25, 33, 41, 49, 57], "1:1024:x4": [1, 4, 16, 64, 256, 1024],
    "1..4096:+1": list(range(1, 4097)), "4294967295": [4294967295],
    "": None, "1,,8": None, "1,": None, "8..": None, "..8": None, "128..8": None,
    "8..128:x1": None, "8..128:x": None, "1..8:+0": None, "1..8:-1": None, "0..8": None,
    "8..128:y2": None, "a..b": None, "1...8": None, "8..9..10": None, "128:8": None,
    "1:8:x1": None, "1:8:x0": None, "1:8:+0": None, "0:8": None, "1:100000:+1": None,
    "1:": None, ":8": None, "1:8:": None, "1:8:x2:3": None, "1:8:*2": None, "1:8:-1": None,
    "1:8:2": None, "a:b": None, "1::8": None, "1:8..16": None, "1..4096:+1,5": None,
    "4294967296": None, "8q": None, "8 K": None, "1.5M": None, "512B": None, "1..8G": None,
    "99999999999999999999": None, "1:8:x99999999999999999999": None,
}
# Other command lines of `run` (after --world 2): the defaults, the byte sizes, nccl-tests'
# short flags and the rest of the spec.
OTHER_VECTORS = [
    [], ["--variants", "one_stage"], ["--variants", "all,lamport"], ["--modes", "all"],
    ["--bytes", "8K:1M:x2", "--hidden", "1024"], ["--bytes", "512B:2KiB", "--hidden", "256"],
    ["--bytes", "1KB..4KB:+1K", "--hidden", "512"], ["-b", "8K", "-e", "1M", "-f", "4",
                                                    "--hidden", "1024"],
    ["-b", "8K", "--hidden", "1024", "-d", "fp32"], ["-b", "2K", "-e", "1K", "--hidden", "512"],
    ["-b", "3000", "--hidden", "1024"], ["-b", "100", "--hidden", "1024"],
    ["-e", "1M", "--hidden", "1024"], ["--bytes", "8K", "-b", "8K", "--hidden", "1024"],
    ["--bytes", "8K", "--m", "1"], ["--bytes", "8K", "--hidden", "1024,2048"],
    ["-b", "8K", "-f", "1", "--hidden", "1024"], ["--bytes", "8K:1M:x2"],
    ["--n", "4096,7168", "-d", "bfloat16", "-n", "7", "-w", "2"], ["-d", "half"],
    ["--timeout", "1.5s"], ["--timeout", "100us"], ["--timeout", "1m30s"], ["--timeout", "250"],
    ["--timeout=-1s"], ["--timeout", "5 s"], ["--epilogue", "all", "--keep-normed"],
    ["--epilogue", "fp8_token,nvfp4,fp8_token", "--fp8-scale", "0.0625",
     "--nvfp4-global-scale", "512", "--fp8-format", "e4m3fnuz", "--quant-tolerance", "ulp"],
    ["--pattern", "integers", "--tolerance", "aiter", "--stress", "4", "--seed", "8K"],
    ["--grid-blocks", "8", "--lamport-min-bytes", "64K", "--arm-repeat", "2", "--eps", "1e-5"],
    ["--variants", "one_stage,plugin:oneshot_norm", "--no-residual", "--stop-on-failure",
     "--force", "--label", "x y", "--devices", "0:1:+1", "--fault", "delay_rank:1:5"],
    ["--variants", "plugin:a_b"], ["-c", "1"], ["-c", "0"], ["-c", "2"],
    ["--fp8-scale", "0"], ["--iters", "4294967296"], ["--m", "1:8:x1", "--hidden", "x"],
]


class Recorder(pb2_grpc.CollectiveTestServicer):
    """Answers ListDevices with two variants, and records then refuses every sweep."""

    def __init__(self):
        self.specs = []
        self.lock = threading.Lock()

    def ListDevices(self, request, context):
        return pb2.ListDevicesResponse(backend="cpu", variants=[pb2.VARIANT_ONE_STAGE,
                                                                pb2.VARIANT_LAMPORT])

    def _record(self, request, context):
        with self.lock:
            self.specs.append(request.spec)
        context.abort(grpc.StatusCode.FAILED_PRECONDITION, "recorded")

    def Run(self, request, context):
        self._record(request, context)

    def Sweep(self, request, context):
        self._record(request, context)
        yield pb2.SweepEvent()

    def take(self):
        with self.lock:
            specs, self.specs = self.specs, []
        return specs


def message_of(stderr, prefix):
    """The flag error's text: the lines after `prefix`, without the status name."""
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    if not lines or not lines[0].startswith(prefix):
        return stderr
    lines[0] = lines[0][len(prefix):].removeprefix("INVALID_ARGUMENT: ")
    return "\n".join(lines)


class GrammarParityTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.recorder = Recorder()
        cls.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        pb2_grpc.add_CollectiveTestServicer_to_server(cls.recorder, cls.server)
        port = cls.server.add_insecure_port("127.0.0.1:0")
        cls.server.start()
        cls.addClassCleanup(cls.server.stop, None)
        cls.address = f"127.0.0.1:{port}"

    def cxx(self, args):
        result = subprocess.run([ARGS.colltest, "--server", self.address, "-q", "run", *args],
                                capture_output=True, text=True, timeout=60)
        return result.returncode, self.recorder.take(), message_of(result.stderr, "colltest: ")

    def python(self, args):
        err = io.StringIO()
        code = cli.main(["--server", self.address, "run", *args], out=io.StringIO(), err=err)
        return code, self.recorder.take(), message_of(err.getvalue(), "colltest_client: ")

    def check_same(self, args):
        """Both send the same spec, or both refuse the line with the same message. The spec."""
        cxx_code, cxx_specs, cxx_error = self.cxx(args)
        py_code, py_specs, py_error = self.python(args)
        self.assertEqual(py_code, cxx_code, f"{args}: C++ said {cxx_error!r}")
        self.assertEqual(py_specs, cxx_specs, args)
        if not cxx_specs:
            self.assertEqual(py_error, cxx_error, args)
            return None
        return cxx_specs[0]

    def test_m_lists_and_ranges(self):
        for text, expected in M_VECTORS.items():
            with self.subTest(m=text):
                spec = self.check_same(["--world", "2", "--m", text, "--variants", "lamport"])
                self.assertEqual(list(spec.m) if spec else None, expected)

    def test_defaults_byte_sizes_and_other_flags(self):
        for args in OTHER_VECTORS:
            with self.subTest(args=args):
                self.check_same(["--world", "2", *args])

    def test_the_defaults_are_colltests(self):
        spec = self.check_same([])
        self.assertEqual((list(spec.n), list(spec.m)), ([7168], [1, 4, 16, 64, 256, 1024]))
        self.assertEqual(list(spec.modes), [pb2.MODE_EAGER, pb2.MODE_GRAPH])
        self.assertEqual(list(spec.variants), [pb2.VARIANT_ONE_STAGE, pb2.VARIANT_LAMPORT])
        self.assertEqual(spec.dtype, pb2.DTYPE_BF16)


class GrammarTest(unittest.TestCase):
    """The grammar module alone, for the values and limits the C++ unit tests name."""

    def test_values(self):
        self.assertEqual(ranges.parse_list("--m", "1..16T:x1024"),
                         [1, 1 << 10, 1 << 20, 1 << 30, 1 << 40])
        top = str(MAX)
        self.assertEqual(ranges.parse_list("--m", f"{top}..{top}:+1"), [MAX])
        self.assertEqual(len(ranges.parse_list("--m", f"1..{top}")), 64)
        self.assertEqual(ranges.parse_byte_size_list("--bytes", "512B,32MiB"), [512, 32 << 20])
        self.assertEqual(ranges.parse_byte_size("--x", "8KB"), 8192)

    def test_messages(self):
        cases = {
            "128..8": "--m: range '128..8' runs backwards (128 > 8)",
            "1:8:x1": "--m: range '1:8:x1': the factor 1 must be 2 or more",
            "1:8:+0": "--m: range '1:8:+0': the step 0 must be 1 or more",
            "0:8": "--m: range '0:8': a multiplying range cannot start at 0 (use :+STEP)",
            "1:100000:+1": "--m: more than 4096 values (range '1:100000:+1'), the limit is 4096",
        }
        for text, message in cases.items():
            with self.assertRaises(ValueError) as raised:
                ranges.parse_list("--m", text)
            self.assertEqual(str(raised.exception), message)
        with self.assertRaises(ValueError) as raised:
            ranges.parse_list("--m", "1..8G", 1 << 20)
        self.assertEqual(str(raised.exception), "--m: '8G' is 8589934592, the limit is 1048576")


def main():
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--colltest", required=True, help="the C++ colltest CLI")
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
