"""Python client of colltestd, the service that tests fused all-reduce + RMSNorm collective
kernels (docs/python-client.md).

    import colltest_client
    with colltest_client.connect("127.0.0.1:50051") as client:
        for event in client.sweep(world_size=2, m=[1, 64], n=[1024], variants="lamport"):
            ...

Every message, enum and enum value of colltest.proto is also a name of this package
(colltest_client.SweepSpec, colltest_client.CASE_STATUS_OK); the generated modules are
colltest_client.pb2 and colltest_client.pb2_grpc, and CollectiveTestStub is the raw stub."""

from . import colltest_pb2 as pb2
from . import colltest_pb2_grpc as pb2_grpc
from ._version import __version__
from .client import Client, connect
from .colltest_pb2_grpc import CollectiveTestStub
from .names import case_variant_name, dtype_name, mode_name, state_name, status_name, variant_name
from .specs import health_request, split_variants, sweep_spec
from .verdict import (EXIT_BUSY, EXIT_ERROR, EXIT_HANG, EXIT_OK, EXIT_WRONG, exit_code_for_run,
                      exit_code_for_status)


def _reexport_api():
    """The proto's enums, their values and its messages as names of the package: a loop over the
    descriptor rather than a list, so that the names follow colltest.proto."""
    names = {}
    for enum in pb2.DESCRIPTOR.enum_types_by_name.values():
        names[enum.name] = getattr(pb2, enum.name)
        names.update((value.name, value.number) for value in enum.values)
    for message in pb2.DESCRIPTOR.message_types_by_name:
        names[message] = getattr(pb2, message)
    return names


__all__ = [
    "pb2", "pb2_grpc", "__version__", "Client", "connect", "CollectiveTestStub",
    "case_variant_name", "dtype_name", "mode_name", "state_name", "status_name", "variant_name",
    "health_request", "split_variants", "sweep_spec",
    "EXIT_BUSY", "EXIT_ERROR", "EXIT_HANG", "EXIT_OK", "EXIT_WRONG", "exit_code_for_run",
    "exit_code_for_status",
]
_api = _reexport_api()
globals().update(_api)
__all__ += sorted(_api)
del _reexport_api, _api
