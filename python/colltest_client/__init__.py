"""Python client of colltestd, the service that tests fused all-reduce + RMSNorm collective
kernels (docs/python-client.md).

    import colltest_client as ct
    with ct.connect("127.0.0.1:50051") as client:
        run = client.run(world_size=2, m=[1, 64], n=1024, variants="lamport")
        if run.state is ct.RunState.DONE: ...

Results are dataclasses (results.py), enums are Python enums (enums.py), and a failed call raises
a ColltestError subclass carrying the server's code and message (errors.py). The generated
modules are colltest_client.pb2 and colltest_client.pb2_grpc."""

from . import colltest_pb2 as pb2
from . import colltest_pb2_grpc as pb2_grpc
from ._version import __version__
from .client import Client, connect
from .enums import (CaseStatus, CompareVerdict, DType, Epilogue, Fp8Format, GroupState,
                    HealthLevel, Mode, Pattern, ProtoEnum, QuantRule, QuantTolerance, RunState,
                    Tolerance, Variant)
from .errors import (AlreadyExistsError, BusyError, CancelledError, ColltestError,
                     DeadlineExceededError, FailedPreconditionError, InternalError,
                     InvalidArgumentError, NotFoundError, PermissionDeniedError,
                     ResourceExhaustedError, UnauthenticatedError, UnavailableError)
from .ranges import parse_byte_size, parse_byte_size_list, parse_count, parse_list
from .results import (CaseComparison, CaseResult, CompareReport, Device, DevicesReport,
                      GroupHealth, HealthReport, HealthSelfTest, HealthTarget, KernelPlugin,
                      PluginIdentity, RankResult, RunPage, RunResult, RunSummary, SweepEvent,
                      SweepProgress)
from .specs import health_request, split_variants, sweep_spec
from .verdict import (EXIT_BUSY, EXIT_ERROR, EXIT_HANG, EXIT_OK, EXIT_REGRESSED, EXIT_WRONG,
                      exit_code_for_comparison, exit_code_for_health, exit_code_for_run,
                      exit_code_for_status)

__all__ = [
    "pb2", "pb2_grpc", "__version__", "Client", "connect",
    "CaseStatus", "CompareVerdict", "DType", "Epilogue", "Fp8Format", "GroupState",
    "HealthLevel", "Mode", "Pattern", "ProtoEnum", "QuantRule", "QuantTolerance", "RunState",
    "Tolerance", "Variant",
    "AlreadyExistsError", "BusyError", "CancelledError", "ColltestError",
    "DeadlineExceededError", "FailedPreconditionError", "InternalError", "InvalidArgumentError",
    "NotFoundError", "PermissionDeniedError", "ResourceExhaustedError", "UnauthenticatedError",
    "UnavailableError",
    "parse_byte_size", "parse_byte_size_list", "parse_count", "parse_list",
    "CaseComparison", "CaseResult", "CompareReport", "Device", "DevicesReport", "GroupHealth",
    "HealthReport", "HealthSelfTest", "HealthTarget", "KernelPlugin", "PluginIdentity",
    "RankResult", "RunPage", "RunResult", "RunSummary", "SweepEvent", "SweepProgress",
    "health_request", "split_variants", "sweep_spec",
    "EXIT_BUSY", "EXIT_ERROR", "EXIT_HANG", "EXIT_OK", "EXIT_REGRESSED", "EXIT_WRONG",
    "exit_code_for_comparison", "exit_code_for_health", "exit_code_for_run",
    "exit_code_for_status",
]
