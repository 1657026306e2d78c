"""The Python client package against a real colltestd (cpu backend, 4 ranks, fault injection
allowed): the API, `python3 -m colltest_client` (its table and exit codes) and the example.

    client_test.py --colltestd PATH --example PATH   (colltest_client on PYTHONPATH)"""

import argparse
import io
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import unittest
import unittest.mock

import colltest_client

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from colltestd_process import Colltestd  # noqa: E402

ARGS = None  # the command line's --colltestd and --example
SWEEP = ["sweep", "--world", "2", "--m", "1,64", "--n", "1024", "--variants", "one_stage,lamport"]
HEADER = ["m", "n", "variant", "mode", "median us", "busbw GB/s", "status"]
# The four cases of SWEEP as (m, n, variant, mode).
SWEEP_CASES = {(m, 1024, variant, "eager") for m in (1, 64) for variant in ("one_stage", "lamport")}
# A fault the cpu backend turns into a WRONG case (tests/integration/fault_test.cc).
WRONG_SWEEP = ["sweep", "--world", "4", "--m", "8", "--n", "256", "--variants", "lamport",
               "--pattern", "integers", "--warmup", "1", "--iters", "3", "--timeout-ms", "1000",
               "--fault", "skip_rearm"]
# ... and one it turns into a HANG: rank 1 never reaches the end barrier.
HANG_SWEEP = ["sweep", "--world", "4", "--m", "8", "--n", "256", "--variants", "one_stage",
              "--pattern", "integers", "--warmup", "1", "--iters", "3", "--timeout-ms", "1000",
              "--fault", "hang_end_sync:1"]


def start_colltestd(test_class):
    """Starts colltestd in a temporary directory and registers its stop (SIGTERM; fails unless it
    exits 0) and the removal of the directory as class cleanups, which run also when a test or the
    start fails. Returns the address it listens at."""
    work_dir = tempfile.mkdtemp(prefix="colltest-python-")
    test_class.addClassCleanup(shutil.rmtree, work_dir, ignore_errors=True)
    daemon = Colltestd(
        ARGS.colltestd,
        ["--backend", "cpu", "--cpu-ranks", "4", "--listen", "127.0.0.1:0",
         "--allow-fault-injection", "--runtime-dir", work_dir],
        state_dir=os.path.join(work_dir, "state"), cwd=work_dir,
        log_path=os.path.join(work_dir, "colltestd.log"))
    test_class.addClassCleanup(daemon.stop)
    return daemon.address


def closed_port():
    """A loopback port nobody listens on (one the OS just handed out and took back)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def table_rows(stdout):
    """The rows of a sweep's table as lists of cells; asserts its header."""
    lines = stdout.splitlines()
    header = lines[0].split()
    # "median us" and "busbw GB/s" are two words each in the header.
    words = [w for title in HEADER for w in title.split()] + ["message"]
    assert header == words, f"header {lines[0]!r}"
    rows = []
    for line in lines[1:]:
        if line.startswith("run "):
            break
        rows.append(line.split(None, 7))
    return rows


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.address = start_colltestd(cls)

    def cli(self, *args, env=None, server=True):
        command = [sys.executable, "-m", "colltest_client"]
        command += ["--server", self.address] if server else []
        return subprocess.run(command + list(args), capture_output=True, text=True, timeout=120,
                              env=env)

    def assert_exit(self, result, code):
        self.assertEqual(result.returncode, code,
                         f"exit {result.returncode}\nstdout:\n{result.stdout}\n"
                         f"stderr:\n{result.stderr}")

    def test_api_lists_four_cpu_devices(self):
        with colltest_client.connect(self.address) as client:
            response = client.devices(timeout=30)
        self.assertEqual(response.backend, "cpu")
        self.assertEqual([d.index for d in response.devices], [0, 1, 2, 3])
        self.assertEqual({d.backend for d in response.devices}, {"cpu"})
        self.assertIn(colltest_client.VARIANT_LAMPORT, response.variants)

    def test_api_run_sweep_and_history(self):
        with colltest_client.connect(self.address) as client:
            run = client.run(world_size=2, m=[1], n=1024, variants="one_stage", label="py-run")
            events = list(client.sweep(colltest_client.sweep_spec(
                world_size=2, m=1, n=1024, variants=["lamport"], label="py-sweep")))
            history = client.history(limit=5, label="py-run")
        self.assertEqual(run.state, colltest_client.RUN_STATE_DONE)
        self.assertEqual(colltest_client.exit_code_for_run(run), colltest_client.EXIT_OK)
        kinds = [e.WhichOneof("event") for e in events]
        self.assertEqual(kinds.count("result"), 1, kinds)
        self.assertEqual(kinds[-1], "summary", kinds)
        self.assertEqual(events[-1].summary.cases[0].variant, colltest_client.pb2.VARIANT_LAMPORT)
        self.assertEqual([r.run_id for r in history], [run.run_id])

    def test_cli_devices(self):
        result = self.cli("devices")
        self.assert_exit(result, 0)
        self.assertIn("backend cpu, 4 devices", result.stdout)
        rows = [line for line in result.stdout.splitlines() if "cpu rank" in line]
        self.assertEqual(len(rows), 4, result.stdout)

    def check_sweep_table(self, rows):
        cases = set()
        for row in rows:
            m, n, variant, mode, median, busbw, status = row[:7]
            cases.add((int(m), int(n), variant, mode))
            self.assertEqual(status, "OK", row)
            self.assertGreater(float(median), 0, row)
            self.assertGreaterEqual(float(busbw), 0, row)
        self.assertEqual(len(rows), 4, rows)
        self.assertEqual(cases, SWEEP_CASES)

    def test_cli_sweep_prints_the_table_and_exits_0(self):
        result = self.cli(*SWEEP)
        self.assert_exit(result, 0)
        self.check_sweep_table(table_rows(result.stdout))
        self.assertRegex(result.stdout.splitlines()[-1], r"^run \S+: DONE, 4 cases: 4 OK$")

    def test_cli_server_from_environment(self):
        env = dict(os.environ, COLLTEST_SERVER=self.address)
        self.assert_exit(self.cli("devices", env=env, server=False), 0)

    def test_example_prints_the_table_and_exits_0(self):
        result = subprocess.run([sys.executable, ARGS.example, self.address],
                                capture_output=True, text=True, timeout=120)
        self.assert_exit(result, 0)
        lines = result.stdout.splitlines()
        self.assertEqual(lines[0].split(), [w for t in HEADER for w in t.split()])
        rows = [line.split() for line in lines[1:-1]]
        self.check_sweep_table(rows)
        self.assertRegex(lines[-1], r"^run \S+: DONE$")

    def test_cli_wrong_case_exits_1(self):
        result = self.cli(*WRONG_SWEEP)
        self.assert_exit(result, 1)
        rows = table_rows(result.stdout)
        self.assertEqual([row[6] for row in rows], ["WRONG"], result.stdout)
        self.assertIn("outside tolerance", rows[0][7])

    def test_cli_hang_case_exits_2(self):
        result = self.cli(*HANG_SWEEP)
        self.assert_exit(result, 2)
        self.assertEqual([row[6] for row in table_rows(result.stdout)], ["HANG"], result.stdout)

    def test_cli_unreachable_server_exits_3_with_a_message(self):
        address = f"127.0.0.1:{closed_port()}"
        for command in (["devices"], SWEEP):
            result = self.cli("--server", address, *command, server=False)
            self.assert_exit(result, 3)
            self.assertIn(f"colltest_client: {address}: UNAVAILABLE", result.stderr)
            self.assertEqual(result.stdout, "")

    def test_cli_usage_errors_exit_3(self):
        # argparse's own code would be 2, which here means HANG.
        for args in (["sweep", "--m", "x", "--n", "1", "--variants", "lamport"],
                     ["sweep", "--m", "1", "--n", "1", "--variants", "bogus"], ["nonsense"]):
            result = self.cli(*args)
            self.assert_exit(result, 3)
            self.assertIn("colltest_client", result.stderr)


class SweepFlagsTest(unittest.TestCase):
    """The sweep flags into a SweepSpec, without a server."""

    def spec(self, *flags):
        from colltest_client import cli
        args = cli.build_parser().parse_args(["sweep", "--m", "1", "--n", "64", *flags])
        return cli.sweep_spec_from_args(args)

    def test_epilogue_flags_map_to_the_spec(self):
        pb2 = colltest_client.pb2
        spec = self.spec("--variants", "lamport", "--epilogue", "fp8_token,nvfp4", "--keep-normed",
                         "--fp8-format", "e4m3fnuz", "--fp8-scale", "0.0625",
                         "--nvfp4-global-scale", "512", "--quant-tolerance", "ulp",
                         "--pattern", "quant_ties")
        self.assertEqual(list(spec.epilogues), [pb2.EPILOGUE_FP8_TOKEN, pb2.EPILOGUE_NVFP4])
        self.assertTrue(spec.keep_normed)
        self.assertEqual(spec.fp8_format, pb2.FP8_FORMAT_E4M3FNUZ)
        self.assertEqual((spec.fp8_scale, spec.nvfp4_global_scale), (0.0625, 512.0))
        self.assertEqual(spec.quant_tolerance, pb2.QUANT_TOLERANCE_ULP)
        self.assertEqual(spec.pattern, pb2.PATTERN_QUANT_TIES)
        every = self.spec("--variants", "lamport", "--epilogue", "all")
        self.assertEqual(list(every.epilogues), [pb2.EPILOGUE_NONE, pb2.EPILOGUE_FP8_TOKEN,
                                                 pb2.EPILOGUE_FP8_TENSOR, pb2.EPILOGUE_NVFP4])
        plain = self.spec("--variants", "lamport")
        self.assertEqual((list(plain.epilogues), plain.keep_normed, plain.fp8_scale), ([], False, 0))

    def test_a_scale_of_0_is_refused_not_read_as_the_default(self):
        from colltest_client import cli
        for flag in ("--fp8-scale", "--nvfp4-global-scale"):
            for value in ("0", "-1", "nan", "1e30"):
                with self.assertRaises(SystemExit) as raised, \
                        unittest.mock.patch("sys.stderr", new_callable=io.StringIO) as err:
                    cli.build_parser().parse_args(["sweep", "--m", "1", "--n", "64",
                                                   "--variants", "lamport", flag, value])
                self.assertEqual(raised.exception.code, 3)
                self.assertIn(flag, err.getvalue())
                self.assertIn("at most 2^64", err.getvalue())


class TableTest(unittest.TestCase):
    """The package's text without a server."""

    def test_shared_gpu_note_says_the_times_are_no_link_measurement(self):
        from colltest_client import table
        run = colltest_client.pb2.RunResult(run_id="r-1", ranks_per_gpu=4)
        self.assertEqual(table.shared_gpu_note(run),
                         "ranks share a GPU (4 per GPU): times are kernel overhead, not a link "
                         "measurement; busbw is not a link figure")
        run.time_sliced = True
        self.assertIn("timings are meaningless (time-sliced)", table.shared_gpu_note(run))
        for ranks in (0, 1):
            self.assertEqual(table.shared_gpu_note(colltest_client.pb2.RunResult(
                ranks_per_gpu=ranks)), "")


def main():
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--colltestd", required=True)
    parser.add_argument("--example", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
