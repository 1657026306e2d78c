"""The Python client package against a real colltestd (cpu backend, 4 ranks, fault injection
allowed): the typed API (dataclasses, enums, exceptions with the server's code and message),
`python3 -m colltest_client` (each command's table or JSON and exit codes) and the example; and
against a colltestd given the kernel plugin fixture oneshot_norm.so (docs/plugins.md).

    client_test.py --colltestd PATH --example PATH --plugin-fixture-dir DIR
    (colltest_client on PYTHONPATH)"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import grpc

import colltest_client as ct
from support import closed_port, exit_message, run_cli, start_colltestd

ARGS = None  # the command line's --colltestd, --example and --plugin-fixture-dir
SMALL = ["--warmup", "1", "--iters", "3"]
SWEEP = ["sweep", "--world", "2", "--m", "1,64", "--n", "1024", "--variants",
         "one_stage,lamport", "--modes", "eager", *SMALL]
HEADER = ["m", "n", "variant", "mode", "median us", "busbw GB/s", "status"]
SWEEP_CASES = {(m, 1024, variant, "eager") for m in (1, 64) for variant in ("one_stage", "lamport")}
# A fault the cpu backend turns into a WRONG case (tests/integration/fault_test.cc), and one it
# turns into a HANG: rank 1 never reaches the end barrier.
FAULTED = ["sweep", "--world", "4", "--m", "8", "--n", "256", "--pattern", "integers",
           "--modes", "eager", "--warmup", "1", "--iters", "3", "--timeout", "1s"]
WRONG_SWEEP = FAULTED + ["--variants", "lamport", "--fault", "skip_rearm"]
HANG_SWEEP = FAULTED + ["--variants", "one_stage", "--fault", "hang_end_sync:1"]
# A small run of the JSON and compare tests: 2 cases.
SMALL_RUN = ["--world", "2", "--m", "1,4", "--hidden", "256", "--variants", "one_stage",
             "--modes", "eager", *SMALL]

PLUGIN = "oneshot_norm"
PLUGIN_VARIANT = f"plugin:{PLUGIN}"
PLUGIN_VERSION = "1.0"
PLUGIN_SWEEP = ["sweep", "--world", "2", "--m", "1,8", "--n", "256", "--modes", "eager", *SMALL,
                "--variants", f"one_stage,{PLUGIN_VARIANT}"]
PLUGIN_SWEEP_CASES = {(m, 256, variant, "eager") for m in (1, 8)
                      for variant in ("one_stage", PLUGIN_VARIANT)}


def private_plugin_copy(test_class):
    """The fixture copied into a fresh folder (0755, the file 0644): the worker refuses a plugin
    that anybody but its owner could replace. Returns (path, sha256 of the file)."""
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


def table_rows(stdout):
    """The rows of a sweep's table as lists of cells; asserts its header."""
    lines = stdout.splitlines()
    words = [w for title in HEADER for w in title.split()] + ["message"]
    assert lines[0].split() == words, f"header {lines[0]!r}"
    rows = []
    for line in lines[1:]:
        if line.startswith("run "):
            break
        rows.append(line.split(None, 7))
    return rows


class CliCase(unittest.TestCase):
    address = None

    def cli(self, *args, env=None, server=True):
        return run_cli(*(["--server", self.address] if server else []), *args, env=env)

    def assert_exit(self, result, code):
        self.assertEqual(result.returncode, code, exit_message(result))

    def json_of(self, *args, code=0):
        result = self.cli(*args, "--format", "json")
        self.assert_exit(result, code)
        return json.loads(result.stdout)


class TypedApiTest(CliCase):
    @classmethod
    def setUpClass(cls):
        cls.address = start_colltestd(cls, ARGS.colltestd).address

    def test_devices_are_typed(self):
        with ct.connect(self.address) as client:
            report = client.devices(timeout=30)
        self.assertIsInstance(report, ct.DevicesReport)
        self.assertEqual(report.backend, "cpu")
        self.assertEqual([d.index for d in report.devices], [0, 1, 2, 3])
        self.assertTrue(all(isinstance(d, ct.Device) for d in report.devices))
        self.assertIn(ct.Variant.LAMPORT, report.variants)
        self.assertTrue(all(isinstance(v, ct.Variant) for v in report.variants))

    def test_run_sweep_history_and_get_are_typed(self):
        with ct.connect(self.address) as client:
            run = client.run(world_size=2, m=[1], n=1024, variants="one_stage", label="py-run",
                             warmup=1, iters=3)
            events = list(client.sweep(ct.sweep_spec(
                world_size=2, m=1, n=1024, variants=[ct.Variant.LAMPORT], label="py-sweep",
                warmup=1, iters=3)))
            history = client.history(limit=5, label="py-run")
            again = client.get_run(run.run_id)
        self.assertIsInstance(run, ct.RunResult)
        self.assertIs(run.state, ct.RunState.DONE)
        self.assertNotEqual(run.state, 3)  # an enum, never the proto's number
        self.assertEqual(ct.exit_code_for_run(run), ct.EXIT_OK)
        (case,) = run.cases
        self.assertIsInstance(case, ct.CaseResult)
        self.assertEqual((case.variant, case.mode, case.status, case.dtype),
                         (ct.Variant.ONE_STAGE, ct.Mode.EAGER, ct.CaseStatus.OK, ct.DType.BF16))
        self.assertEqual((case.world, case.m, case.n, case.bytes), (2, 1, 1024, 2048))
        self.assertGreater(case.median_us, 0)
        self.assertEqual([r.rank for r in case.ranks], [0, 1])
        self.assertEqual(case.raw.timing.median_us, case.median_us)
        results = [e.result for e in events if e.result is not None]
        self.assertEqual([c.variant for c in results], [ct.Variant.LAMPORT])
        self.assertIsNotNone(events[-1].summary)
        self.assertEqual([r.run_id for r in history], [run.run_id])
        self.assertIsInstance(history[0], ct.RunSummary)
        self.assertIs(history[0].state, ct.RunState.DONE)
        self.assertEqual(again.cases[0].median_us, case.median_us)

    def test_health_and_compare_are_typed(self):
        with ct.connect(self.address) as client:
            health = client.health(devices=[0, 1], timeout=120)
            a = client.run(world_size=2, m=[1, 4], n=256, variants="one_stage", modes="eager",
                           warmup=1, iters=3)
            b = client.run(world_size=2, m=[1], n=256, variants="one_stage", modes="eager",
                           warmup=1, iters=3)
            report = client.compare(a.run_id, b.run_id)
        self.assertIsInstance(health, ct.HealthReport)
        self.assertIs(health.status, ct.CaseStatus.OK)
        self.assertIs(health.level, ct.HealthLevel.QUICK)
        self.assertEqual([t.devices for t in health.ranks], [[0], [1]])
        self.assertIsInstance(report, ct.CompareReport)
        verdicts = {c.m: c.verdict for c in report.cases}
        self.assertIs(verdicts[4], ct.CompareVerdict.ONLY_A)
        self.assertEqual(ct.exit_code_for_comparison(report), ct.EXIT_REGRESSED)

    def test_a_refused_request_raises_the_servers_code_and_message(self):
        with ct.connect(self.address) as client:
            with self.assertRaises(ct.InvalidArgumentError) as raised:
                client.run(world_size=5, m=[1], n=256, variants="one_stage")
            with self.assertRaises(ct.NotFoundError) as missing:
                client.get_run("r-" + "0" * 32)
        error = raised.exception
        self.assertEqual(error.code, "INVALID_ARGUMENT")
        self.assertIn("world_size = 5", error.message)
        self.assertEqual(error.server, self.address)
        self.assertIsInstance(error, ct.ColltestError)
        self.assertNotIsInstance(error, grpc.RpcError)
        self.assertEqual(missing.exception.code, "NOT_FOUND")
        self.assertIn("not in the history", missing.exception.message)

    def test_an_unreachable_server_raises_unavailable(self):
        with ct.connect(f"127.0.0.1:{closed_port()}") as client:
            with self.assertRaises(ct.UnavailableError) as raised:
                client.devices(timeout=10)
            with self.assertRaises(ct.UnavailableError):
                list(client.sweep(world_size=2, m=1, n=256, variants="one_stage"))
        self.assertEqual(raised.exception.code, "UNAVAILABLE")
        self.assertNotIsInstance(raised.exception, grpc.RpcError)


class CliTest(CliCase):
    @classmethod
    def setUpClass(cls):
        cls.address = start_colltestd(cls, ARGS.colltestd).address

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

    def test_devices_table_and_json(self):
        result = self.cli("devices")
        self.assert_exit(result, 0)
        self.assertIn("backend cpu, 4 devices", result.stdout)
        self.assertEqual(len([ln for ln in result.stdout.splitlines() if "cpu rank" in ln]), 4)
        doc = self.json_of("devices")
        self.assertEqual((doc["schema_version"], doc["kind"]), (1, "colltest.devices"))
        self.assertEqual([d["index"] for d in doc["devices"]], [0, 1, 2, 3])
        self.assertIn("lamport", doc["variants"])

    def test_sweep_prints_the_table_and_exits_0(self):
        result = self.cli(*SWEEP)
        self.assert_exit(result, 0)
        self.check_sweep_table(table_rows(result.stdout))
        self.assertRegex(result.stdout.splitlines()[-1], r"^run \S+: DONE, 4 cases: 4 OK$")

    def test_run_and_sweep_json(self):
        for command in ("run", "sweep"):
            doc = self.json_of(command, *SMALL_RUN)
            self.assertEqual(doc["kind"], "colltest.run")
            self.assertEqual(doc["state"], "DONE")
            cases = [(c["m"], c["n"], c["variant"], c["mode"], c["world"], c["status"])
                     for c in doc["cases"]]
            self.assertEqual(cases, [(m, 256, "one_stage", "eager", 2, "OK") for m in (1, 4)])
            self.assertEqual([r["rank"] for r in doc["cases"][0]["ranks"]], [0, 1])

    def test_run_defaults_to_the_servers_variants_and_both_modes(self):
        doc = self.json_of("run", "--world", "2", "--m", "1", "--hidden", "64", *SMALL)
        with ct.connect(self.address) as client:
            offered = [v.cli_name for v in client.devices(timeout=30).variants]
        ran = sorted((c["variant"], c["mode"]) for c in doc["cases"])
        self.assertEqual(ran, sorted((v, mode) for v in offered for mode in ("eager", "graph")))

    def test_health_history_get_and_compare_json(self):
        health = self.json_of("health", "--devices", "0,1")
        self.assertEqual((health["kind"], health["status"]), ("colltest.health", "OK"))
        self.assertEqual([t["devices"] for t in health["ranks"]], [[0], [1]])
        a = self.json_of("run", *SMALL_RUN, "--label", "py-cli-a")["run_id"]
        b = self.json_of("run", *SMALL_RUN[:3], "1", *SMALL_RUN[4:])["run_id"]
        history = self.json_of("history", "--label", "py-cli-a")
        self.assertEqual(history["kind"], "colltest.history")
        self.assertEqual([r["run_id"] for r in history["runs"]], [a])
        self.assertEqual(history["runs"][0]["state"], "DONE")
        self.assertEqual(self.json_of("get", a)["run_id"], a)
        same = self.json_of("compare", a, a)
        self.assertEqual({c["verdict"] for c in same["cases"]}, {"SAME"})
        missing = self.json_of("compare", a, b, code=4)
        self.assertEqual(missing["kind"], "colltest.compare")
        self.assertEqual({c["m"]: c["verdict"] for c in missing["cases"]}[4], "ONLY_A")
        table = self.cli("history", "--label", "py-cli-a")
        self.assert_exit(table, 0)
        self.assertIn(a, table.stdout)

    def test_server_from_environment(self):
        env = dict(os.environ, COLLTEST_SERVER=self.address)
        self.assert_exit(self.cli("devices", env=env, server=False), 0)

    def test_example_prints_the_table_and_exits_0(self):
        result = subprocess.run([sys.executable, ARGS.example, self.address],
                                capture_output=True, text=True, timeout=120)
        self.assert_exit(result, 0)
        lines = result.stdout.splitlines()
        self.assertEqual(lines[0].split(), [w for t in HEADER for w in t.split()])
        self.check_sweep_table([line.split() for line in lines[1:-1]])
        self.assertRegex(lines[-1], r"^run \S+: DONE$")

    def test_wrong_case_exits_1(self):
        result = self.cli(*WRONG_SWEEP)
        self.assert_exit(result, 1)
        rows = table_rows(result.stdout)
        self.assertEqual([row[6] for row in rows], ["WRONG"], result.stdout)
        self.assertIn("outside tolerance", rows[0][7])

    def test_hang_case_exits_2(self):
        result = self.cli(*HANG_SWEEP)
        self.assert_exit(result, 2)
        self.assertEqual([row[6] for row in table_rows(result.stdout)], ["HANG"], result.stdout)

    def test_a_refused_request_exits_3_with_the_servers_message(self):
        result = self.cli("run", "--world", "5", "--m", "1", "--hidden", "256",
                          "--variants", "one_stage")
        self.assert_exit(result, 3)
        self.assertIn(f"colltest_client: {self.address}: INVALID_ARGUMENT: world_size = 5",
                      result.stderr)
        self.assertNotIn("Traceback", result.stderr)

    def test_unreachable_server_exits_3_with_a_message(self):
        address = f"127.0.0.1:{closed_port()}"
        for command in (["devices"], SWEEP, ["history"], ["health"]):
            result = self.cli("--server", address, *command, server=False)
            self.assert_exit(result, 3)
            self.assertIn(f"colltest_client: {address}: UNAVAILABLE", result.stderr)
            self.assertEqual(result.stdout, "")

    def test_usage_errors_exit_3(self):
        # argparse's own code would be 2, which here means HANG.
        for args in (["sweep", "--m", "x"], ["sweep", "--variants", "bogus"], ["nonsense"],
                     ["sweep", "--variants", "plugin"], ["run", "--m", "1:8:x1"],
                     ["sweep", "--variants", "lamport,plugin:Bad-Name"], ["compare", "a"],
                     ["history", "--since", "2026"], ["health", "--warn-ratio", "1"],
                     ["run", "--format", "xml"]):
            result = self.cli(*args)
            self.assert_exit(result, 3)
            self.assertIn("colltest_client", result.stderr)
            self.assertNotIn("Traceback", result.stderr)


class KernelPluginTest(CliCase):
    """A colltestd given the fixture plugin: `devices` lists it, and a sweep with
    --variants one_stage,plugin:oneshot_norm runs it beside one_stage."""

    @classmethod
    def setUpClass(cls):
        cls.plugin_path, cls.sha256 = private_plugin_copy(cls)
        cls.address = start_colltestd(cls, ARGS.colltestd,
                                      ["--kernel-plugin", cls.plugin_path]).address

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
        self.assertEqual({(int(r[0]), int(r[1]), r[2], r[3]) for r in rows}, PLUGIN_SWEEP_CASES)
        self.assertEqual([r[6] for r in rows], ["OK"] * 4, result.stdout)
        summary = result.stdout.splitlines()[-1]
        self.assertRegex(summary, r"^run \S+: DONE, 4 cases: 4 OK$")
        with ct.connect(self.address) as client:
            run = client.get_run(summary.split()[1].rstrip(":"), timeout=30)
        self.assertEqual(list(run.raw.spec.plugins), [PLUGIN])
        self.assertEqual(list(run.raw.spec.variants), [ct.Variant.ONE_STAGE.value])
        ran = [(c.plugin.name, c.plugin.version, c.plugin.sha256) for c in run.cases
               if c.variant is ct.Variant.PLUGIN and c.plugin is not None]
        self.assertEqual(ran, [(PLUGIN, PLUGIN_VERSION, self.sha256)] * 2)

    def test_api_sweep_of_the_plugin_alone(self):
        with ct.connect(self.address) as client:
            events = list(client.sweep(world_size=2, m=[1, 8], n=256, warmup=1, iters=3,
                                       variants=PLUGIN_VARIANT, label="py-plugin"))
            devices = client.devices(timeout=30)
        summary = events[-1].summary
        self.assertIs(summary.state, ct.RunState.DONE)
        self.assertEqual([c.kernel for c in summary.cases], [PLUGIN_VARIANT] * 2)
        self.assertEqual({c.status for c in summary.cases}, {ct.CaseStatus.OK})
        self.assertEqual([(p.name, p.version, p.sha256, p.loaded) for p in devices.kernel_plugins],
                         [(PLUGIN, PLUGIN_VERSION, self.sha256, True)])


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
