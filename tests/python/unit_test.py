"""The Python client's pieces without a server: its enums against colltest.proto, the
exceptions a failed call becomes, the JSON of a typed result, the duration and --since grammar,
the run/sweep flags and the exit codes.

    unit_test.py   (colltest_client on PYTHONPATH)"""

import calendar
import io
import json
import sys
import unittest

import grpc

import colltest_client as ct
from colltest_client import cli, convert, durations, errors, request_flags
from colltest_client import colltest_pb2 as pb2


class FakeRpcError(grpc.RpcError):
    def __init__(self, code, details):
        super().__init__()
        self._code, self._details = code, details

    def code(self):
        return self._code

    def details(self):
        return self._details


class EnumsTest(unittest.TestCase):
    def test_every_enum_lists_the_protos_values(self):
        python = {cls.__name__: cls for cls in ct.enums.ALL_ENUMS}
        self.assertEqual(set(python), set(pb2.DESCRIPTOR.enum_types_by_name))
        for name, descriptor in pb2.DESCRIPTOR.enum_types_by_name.items():
            prefix = descriptor.values_by_number[0].name[:-len("UNSPECIFIED")]
            proto = {v.name: v.number for v in descriptor.values}
            ours = {prefix + m.name: m.value for m in python[name]}
            self.assertEqual(ours, proto, name)

    def test_members_are_not_numbers(self):
        self.assertNotEqual(ct.RunState.DONE, 3)
        self.assertIs(ct.RunState.from_pb(3), ct.RunState.DONE)
        self.assertIs(ct.RunState.from_pb(99), ct.RunState.UNSPECIFIED)
        self.assertEqual((ct.Variant.ONE_STAGE.cli_name, ct.CaseStatus.OK.cli_name),
                         ("one_stage", "OK"))
        self.assertIs(ct.Mode.parse(" Graph "), ct.Mode.GRAPH)
        with self.assertRaises(ValueError) as raised:
            ct.DType.parse("fp8")
        self.assertEqual(str(raised.exception),
                         "unknown dtype 'fp8': expected one of bf16, fp16, fp32")


class ErrorsTest(unittest.TestCase):
    def test_each_code_has_its_class_with_the_servers_message(self):
        table = {
            grpc.StatusCode.INVALID_ARGUMENT: ct.InvalidArgumentError,
            grpc.StatusCode.NOT_FOUND: ct.NotFoundError,
            grpc.StatusCode.UNAVAILABLE: ct.UnavailableError,
            grpc.StatusCode.DEADLINE_EXCEEDED: ct.DeadlineExceededError,
            grpc.StatusCode.PERMISSION_DENIED: ct.PermissionDeniedError,
            grpc.StatusCode.UNAUTHENTICATED: ct.UnauthenticatedError,
            grpc.StatusCode.FAILED_PRECONDITION: ct.FailedPreconditionError,
            grpc.StatusCode.RESOURCE_EXHAUSTED: ct.ResourceExhaustedError,
            grpc.StatusCode.INTERNAL: ct.InternalError,
            grpc.StatusCode.DATA_LOSS: ct.InternalError,
        }
        for code, cls in table.items():
            error = errors.from_rpc_error(FakeRpcError(code, "why"), "host:1")
            self.assertIs(type(error), cls, code)
            self.assertEqual((error.code, error.message, error.server), (code.name, "why",
                                                                         "host:1"))
            self.assertNotIsInstance(error, grpc.RpcError)
        busy = errors.from_rpc_error(FakeRpcError(grpc.StatusCode.FAILED_PRECONDITION,
                                                  "BUSY: pid 7 uses device 0"))
        self.assertIsInstance(busy, ct.BusyError)
        self.assertEqual(ct.verdict.exit_code_for_error(busy), ct.EXIT_BUSY)


class ResultsTest(unittest.TestCase):
    def run_result(self):
        case = pb2.CaseResult(variant=pb2.VARIANT_PLUGIN, mode=pb2.MODE_GRAPH, world_size=2, m=8,
                              n=256, dtype=pb2.DTYPE_FP32, status=pb2.CASE_STATUS_WRONG,
                              plugin=pb2.PluginIdentity(name="oneshot_norm", version="1.0"),
                              timing=pb2.TimingStats(median_us=12.5))
        return ct.RunResult.from_pb(pb2.RunResult(run_id="r-1", state=pb2.RUN_STATE_DONE,
                                                  cases=[case]))

    def test_a_case_is_typed(self):
        run = self.run_result()
        (case,) = run.cases
        self.assertEqual((case.kernel, case.variant, case.mode, case.dtype, case.status),
                         ("plugin:oneshot_norm", ct.Variant.PLUGIN, ct.Mode.GRAPH, ct.DType.FP32,
                          ct.CaseStatus.WRONG))
        self.assertEqual((case.world, case.bytes, case.median_us), (2, 8 * 256 * 4, 12.5))
        self.assertEqual(run.counts(), {ct.CaseStatus.WRONG: 1})
        self.assertEqual(ct.exit_code_for_run(run), ct.EXIT_WRONG)

    def test_json_names_enums_and_leaves_out_the_message(self):
        doc = json.loads(json.dumps(convert.to_json(self.run_result())))
        self.assertEqual(doc["state"], "DONE")
        self.assertNotIn("raw", doc)
        self.assertEqual((doc["cases"][0]["variant"], doc["cases"][0]["mode"],
                          doc["cases"][0]["status"]), ("plugin", "graph", "WRONG"))
        self.assertEqual(doc["cases"][0]["plugin"]["name"], "oneshot_norm")

    def test_exit_codes(self):
        aborted = ct.RunResult.from_pb(pb2.RunResult(state=pb2.RUN_STATE_CANCELLED))
        self.assertEqual(ct.exit_code_for_run(aborted), ct.EXIT_ERROR)
        health = ct.HealthReport.from_pb(pb2.HealthResponse(
            status=pb2.CASE_STATUS_OK, pairs=[pb2.HealthTarget(status=pb2.CASE_STATUS_HANG)]))
        self.assertEqual(ct.exit_code_for_health(health), ct.EXIT_HANG)
        health.busy = True
        self.assertEqual(ct.exit_code_for_health(health), ct.EXIT_BUSY)
        same = ct.CompareReport.from_pb(pb2.CompareResponse(cases=[pb2.CaseComparison(
            verdict=pb2.COMPARE_VERDICT_ONLY_B)]))
        self.assertEqual(ct.exit_code_for_comparison(same), ct.EXIT_OK)
        same.cases[0].verdict = ct.CompareVerdict.ONLY_A
        self.assertEqual(ct.exit_code_for_comparison(same), ct.EXIT_REGRESSED)


class GrammarTest(unittest.TestCase):
    def test_durations(self):
        ms = durations.parse_timeout_ms
        self.assertEqual([ms("--t", t) for t in ("5s", "250", "1.5s", "1m30s", "100us", "2d")],
                         [5000, 250, 1500, 90000, 1, 2 * 86400 * 1000])
        for text in ("-1s", "inf", "5 s", "1.5", "s", "", "5parsecs", "36501d"):
            with self.assertRaises(ValueError, msg=text):
                ms("--t", text)

    def test_since(self):
        now = 1_800_000_000_000
        since = durations.parse_since_ms
        self.assertEqual(since("--since", "2026-11-01", now),
                         calendar.timegm((2026, 11, 1, 0, 0, 0)) * 1000)
        self.assertEqual(since("--since", "2026-11-01T10:00:00+02:00", now),
                         calendar.timegm((2026, 11, 1, 8, 0, 0)) * 1000)
        self.assertEqual(since("--since", "24h", now), now - 86400 * 1000)
        for text in ("2026", "2026-13", "yesterday"):
            with self.assertRaises(ValueError, msg=text):
                since("--since", text, now)

    def test_threshold(self):
        self.assertEqual(request_flags.parse_threshold("--threshold", "5%"), 0.05)
        self.assertEqual(request_flags.parse_threshold("--threshold", "0.1"), 0.1)
        with self.assertRaises(ValueError) as raised:
            request_flags.parse_threshold("--threshold", "5")
        self.assertEqual(str(raised.exception),
                         "--threshold: '5' would be 500 %: write 0.05 or 5% for 5 %")

    def test_every_bad_flag_is_reported_at_once(self):
        err = io.StringIO()
        code = cli.main(["--server", "127.0.0.1:1", "run", "--m", "1:8:x1", "--hidden", "x",
                         "--modes", "eagre"], out=io.StringIO(), err=err)
        self.assertEqual(code, ct.EXIT_ERROR)
        lines = err.getvalue().removeprefix("colltest_client: ").splitlines()
        self.assertEqual([line.split(":")[0] for line in lines], ["--m", "--hidden", "--modes"])


if __name__ == "__main__":
    unittest.main(argv=sys.argv, verbosity=2)
