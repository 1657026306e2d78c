"""The Python client package against a real colltestd (cpu backend, 4 ranks, fault injection
allowed): the API, `python3 -m colltest_client` (its table and exit codes) and the example; and
against a colltestd given the kernel plugin fixture oneshot_norm.so (docs/plugins.md): a sweep
with `--variants plugin:oneshot_norm`, and `devices` listing the plugin.

    client_test.py --colltestd PATH --example PATH --plugin-fixture-dir DIR
    (colltest_client on PYTHONPATH)"""

import argparse
import hashlib
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

ARGS = None  # the command line's --colltestd, --example and --plugin-fixture-dir
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


# The kernel plugin fixture (tests/plugins/fixtures, target colltest_fixture_oneshot_norm): the
# example examples/plugins/oneshot_norm built for the cpu backend; its struct's name and version.
PLUGIN = "oneshot_norm"
PLUGIN_VARIANT = f"plugin:{PLUGIN}"
PLUGIN_VERSION = "1.0"
PLUGIN_SWEEP = ["sweep", "--world", "2", "--m", "1,8", "--n", "256", "--warmup", "1", "--iters",
                "3", "--variants", f"one_stage,{PLUGIN_VARIANT}"]
PLUGIN_SWEEP_CASES = {(m, 256, variant, "eager") for m in (1, 8)
                      for variant in ("one_stage", PLUGIN_VARIANT)}


def private_plugin_copy(test_class):
    """The fixture copied into a fresh folder (0755, the file 0644): the worker refuses a plugin
    that anybody but its owner could replace, the file or a folder above it. Returns (path,
    sha256 of the file); the folder's removal is a class cleanup."""
    source = os.path.join(ARGS.plugin_fixture_dir, f"{PLUGIN}.so")
    if not os.path.isfile(source):
        raise AssertionError(f"no plugin fixture {source} (build the target "
                             "colltest_fixture_oneshot_norm)")
    folder = tempfile.mkdtemp(prefix="colltest-python-plugin-")
    test_class.addClassCleanup(shutil.rmtree, folder, ignore_errors=True)
    os.chmod(folder, 0o755)
    path = os.path.join(folder, f"{PLUGIN}.so")
    shutil.copyfile(source, path)
    os.chmod(path, 0o644)
    with open(path, "rb") as f:
        return path, hashlib.sha256(f.read()).hexdigest()


def start_colltestd(test_class, extra_args=()):
    """Starts colltestd in a temporary directory and registers its stop (SIGTERM; fails unless it
    exits 0) and the removal of the directory as class cleanups, which run also when a test or the
    start fails. Returns the address it listens at."""
    work_dir = tempfile.mkdtemp(prefix="colltest-python-")
    test_class.addClassCleanup(shutil.rmtree, work_dir, ignore_errors=True)
    daemon = Colltestd(
        ARGS.colltestd,
        ["--backend", "cpu", "--cpu-ranks", "4", "--listen", "127.0.0.1:0",
         "--allow-fault-injection", "--runtime-dir", work_dir, *extra_args],
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
                     ["sweep", "--m", "1", "--n", "1", "--variants", "bogus"], ["nonsense"],
                     ["sweep", "--m", "1", "--n", "1", "--variants", "plugin"],
                     ["sweep", "--m", "1", "--n", "1", "--variants", "lamport,plugin:Bad-Name"]):
            result = self.cli(*args)
            self.assert_exit(result, 3)
            self.assertIn("colltest_client", result.stderr)


class KernelPluginTest(unittest.TestCase):
    """A colltestd given the fixture plugin: `devices` lists it, and a sweep with
    --variants one_stage,plugin:oneshot_norm runs it beside one_stage."""

    @classmethod
    def setUpClass(cls):
        cls.plugin_path, cls.sha256 = private_plugin_copy(cls)
        cls.address = start_colltestd(cls, ["--kernel-plugin", cls.plugin_path])

    def cli(self, *args):
        return subprocess.run([sys.executable, "-m", "colltest_client", "--server", self.address,
                               *args], capture_output=True, text=True, timeout=120)

    def assert_exit(self, result, code):
        self.assertEqual(result.returncode, code,
                         f"exit {result.returncode}\nstdout:\n{result.stdout}\n"
                         f"stderr:\n{result.stderr}")

    def test_cli_devices_lists_the_plugin(self):
        result = self.cli("devices")
        self.assert_exit(result, 0)
        lines = result.stdout.splitlines()
        self.assertIn("kernel plugins:", lines, result.stdout)
        plugin_lines = lines[lines.index("kernel plugins:") + 1:]
        self.assertEqual(plugin_lines[0].split(), ["variant", "version", "sha256", "state"])
        self.assertEqual([line.split() for line in plugin_lines[1:]],
                         [[PLUGIN_VARIANT, PLUGIN_VERSION, self.sha256[:12], "loaded"]],
                         result.stdout)

    def test_cli_sweep_runs_the_plugin(self):
        result = self.cli(*PLUGIN_SWEEP)
        self.assert_exit(result, 0)
        rows = table_rows(result.stdout)
        cases = {(int(row[0]), int(row[1]), row[2], row[3]) for row in rows}
        self.assertEqual(len(rows), 4, result.stdout)
        self.assertEqual(cases, PLUGIN_SWEEP_CASES)
        self.assertEqual({row[6] for row in rows}, {"OK"}, result.stdout)
        summary = result.stdout.splitlines()[-1]
        self.assertRegex(summary, r"^run \S+: DONE, 4 cases: 4 OK$")
        # The flag went out as SweepSpec.plugins, and the record keeps the build that ran.
        with colltest_client.connect(self.address) as client:
            run = client.get_run(summary.split()[1].rstrip(":"), timeout=30)
        self.assertEqual(list(run.spec.plugins), [PLUGIN])
        self.assertEqual(list(run.spec.variants), [colltest_client.VARIANT_ONE_STAGE])
        ran = [(c.plugin.name, c.plugin.version, c.plugin.sha256) for c in run.cases
               if c.variant == colltest_client.VARIANT_PLUGIN]
        self.assertEqual(ran, [(PLUGIN, PLUGIN_VERSION, self.sha256)] * 2)

    def test_api_sweep_of_the_plugin_alone(self):
        with colltest_client.connect(self.address) as client:
            events = list(client.sweep(world_size=2, m=[1, 8], n=256, warmup=1, iters=3,
                                       variants=PLUGIN_VARIANT, label="py-plugin"))
            devices = client.devices(timeout=30)
        summary = events[-1].summary
        self.assertEqual(summary.state, colltest_client.RUN_STATE_DONE)
        self.assertEqual((list(summary.spec.variants), list(summary.spec.plugins)), ([], [PLUGIN]))
        self.assertEqual([colltest_client.case_variant_name(c) for c in summary.cases],
                         [PLUGIN_VARIANT] * 2)
        self.assertEqual({c.status for c in summary.cases}, {colltest_client.CASE_STATUS_OK})
        self.assertEqual([(p.name, p.version, p.sha256, p.loaded) for p in devices.kernel_plugins],
                         [(PLUGIN, PLUGIN_VERSION, self.sha256, True)])


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

    def test_plugin_variants_go_to_the_spec_plugins(self):
        pb2 = colltest_client.pb2
        spec = self.spec("--variants", "one_stage,plugin:oneshot_norm,lamport,plugin:b_2,"
                         "plugin:oneshot_norm")
        self.assertEqual(list(spec.variants), [pb2.VARIANT_ONE_STAGE, pb2.VARIANT_LAMPORT])
        self.assertEqual(list(spec.plugins), ["oneshot_norm", "b_2"])
        alone = self.spec("--variants", "plugin:oneshot_norm")
        self.assertEqual((list(alone.variants), list(alone.plugins)), ([], ["oneshot_norm"]))
        # "all" is colltest's own variants: a plugin is only ever named.
        every = self.spec("--variants", "all")
        self.assertNotIn(pb2.VARIANT_PLUGIN, every.variants)
        self.assertEqual(len(every.variants), len(pb2.Variant.values()) - 2)
        self.assertEqual(list(every.plugins), [])
        plain = self.spec("--variants", "lamport")
        self.assertEqual(list(plain.plugins), [])

    def test_a_plugin_needs_a_name_a_plugin_can_have(self):
        from colltest_client import cli, specs
        for variants in ("plugin", "plugin:", "plugin:Upper", "plugin:a-b", "plugin:" + "x" * 33):
            with self.assertRaises(ValueError) as raised:
                self.spec("--variants", f"lamport,{variants}")
            self.assertIn("plugin", str(raised.exception))
        with self.assertRaises(ValueError) as raised:
            specs.sweep_spec(variants="bogus")
        self.assertIn("plugin:NAME", str(raised.exception))
        out, err = io.StringIO(), io.StringIO()
        code = cli.main(["sweep", "--m", "1", "--n", "64", "--variants", "plugin"],
                        out=out, err=err)
        self.assertEqual(code, colltest_client.EXIT_ERROR)
        self.assertIn("'plugin' needs the plugin's name: plugin:NAME", err.getvalue())

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

    def test_a_plugin_case_is_named_by_its_plugin(self):
        from colltest_client import table
        pb2 = colltest_client.pb2
        case = pb2.CaseResult(m=8, n=256, variant=pb2.VARIANT_PLUGIN,
                              status=pb2.CASE_STATUS_OK,
                              plugin=pb2.PluginIdentity(name="oneshot_norm", version="1.0"))
        self.assertEqual(table.sweep_row(case).split()[2], "plugin:oneshot_norm")
        other = pb2.CaseResult(variant=pb2.VARIANT_PLUGIN, plugin=pb2.PluginIdentity(name="b"))
        self.assertEqual(colltest_client.case_variant_name(other), "plugin:b")
        compared = pb2.CaseComparison(variant=pb2.VARIANT_PLUGIN, plugin="oneshot_norm")
        self.assertEqual(colltest_client.case_variant_name(compared), "plugin:oneshot_norm")
        self.assertEqual(colltest_client.case_variant_name(
            pb2.CaseResult(variant=pb2.VARIANT_LAMPORT)), "lamport")
        self.assertEqual(colltest_client.variant_name(pb2.VARIANT_PLUGIN, "x"), "plugin:x")

    def test_devices_lists_loaded_and_refused_plugins(self):
        from colltest_client import table
        pb2 = colltest_client.pb2
        response = pb2.ListDevicesResponse(backend="cpu", kernel_plugins=[
            pb2.KernelPlugin(path="/p/a.so", sha256="0123456789abcdef" * 4, loaded=True,
                             name="a", version="2.0", variant="plugin:a"),
            pb2.KernelPlugin(path="/p/wrong.so", sha256="fedcba9876543210" * 4,
                             refused="abi_version = 2: this worker loads version 1")])
        lines = table.devices_table(response).splitlines()
        start = lines.index("kernel plugins:")
        self.assertEqual(lines[start + 2].split(), ["plugin:a", "2.0", "0123456789ab", "loaded"])
        self.assertEqual(lines[start + 3].split(None, 3),
                         ["wrong.so", "-", "fedcba987654",
                          "refused: abi_version = 2: this worker loads version 1"])
        self.assertNotIn("kernel plugins:", table.devices_table(pb2.ListDevicesResponse()))

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
    parser.add_argument("--plugin-fixture-dir", required=True,
                        help="folder with the kernel plugin fixture oneshot_norm.so")
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
