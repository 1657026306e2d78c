"""The connection to colltestd and one method per call of the public API, returning the typed
results of results.py. A failed call raises a ColltestError (errors.py) carrying the server's
status code and message; grpc.RpcError does not leave this module."""

from __future__ import annotations

from types import TracebackType
from typing import Any, Callable, Iterator, Optional, TypeVar, Union

import grpc

from . import colltest_pb2 as pb2
from . import colltest_pb2_grpc as pb2_grpc
from . import specs
from .enums import RunState
from .errors import from_rpc_error
from .results import (CompareReport, DevicesReport, HealthReport, RunPage, RunResult, RunSummary,
                      SweepEvent)

# A large sweep returns every case with its per-rank results in one message; gRPC's 4 MiB default
# would cut off a few thousand cases (the same limit as the colltest CLI).
_MAX_RECEIVE_BYTES = 64 << 20
MAX_PAGE = 1000  # the server's cap on one page of the history
_T = TypeVar("_T")
Pem = Union[str, bytes, None]


def _read_pem(value: Pem) -> Optional[bytes]:
    """PEM bytes from bytes, or from the file a path names."""
    if value is None or isinstance(value, bytes):
        return value
    with open(value, "rb") as f:
        return f.read()


def connect(address: str, token: Optional[str] = None, tls_ca: Pem = None, *,
            tls_cert: Pem = None, tls_key: Pem = None,
            server_name: Optional[str] = None) -> Client:
    """A Client of the colltestd at `address` ("host:port" or "unix:PATH").

    token: a bearer token, for a colltestd started with --token-file.
    tls_ca: the root CA (a PEM file's path, or its bytes): connect with TLS.
    tls_cert, tls_key: a client certificate and key, for mutual TLS (TLS even without tls_ca).
    server_name: the name expected in the server certificate when `address` is an IP address.

    Connecting is lazy: an unreachable server shows in the first call, as UnavailableError."""
    options: list[tuple[str, Any]] = [("grpc.max_receive_message_length", _MAX_RECEIVE_BYTES)]
    if (tls_cert is None) != (tls_key is None):
        raise ValueError("tls_cert and tls_key must be given together")
    if tls_ca is None and tls_cert is None:
        return Client(grpc.insecure_channel(address, options=options), token, address)
    credentials = grpc.ssl_channel_credentials(
        root_certificates=_read_pem(tls_ca), private_key=_read_pem(tls_key),
        certificate_chain=_read_pem(tls_cert))
    if server_name:
        options.append(("grpc.ssl_target_name_override", server_name))
    return Client(grpc.secure_channel(address, credentials, options=options), token, address)


class Client:
    """Calls of colltestd's CollectiveTest service. `stub` is the generated stub, for calls this
    class does not wrap (pass metadata=client.metadata to them; they raise grpc.RpcError)."""

    def __init__(self, channel: grpc.Channel, token: Optional[str] = None,
                 address: str = "") -> None:
        self._channel = channel
        self.address = address
        self.stub: Any = pb2_grpc.CollectiveTestStub(channel)  # type: ignore[no-untyped-call]
        # Per-call metadata rather than call credentials: gRPC refuses call credentials on an
        # insecure channel, and a token over plain TCP is a setup colltestd supports.
        self.metadata: tuple[tuple[str, str], ...] = (
            (("authorization", f"Bearer {token}"),) if token else ())

    def __enter__(self) -> Client:
        return self

    def __exit__(self, kind: Optional[type[BaseException]], value: Optional[BaseException],
                 traceback: Optional[TracebackType]) -> None:
        self.close()

    def close(self) -> None:
        self._channel.close()

    def _call(self, method: Callable[..., Any], request: Any, timeout: Optional[float],
              wrap: Callable[[Any], _T]) -> _T:
        try:
            response = method(request, timeout=timeout, metadata=self.metadata)
        except grpc.RpcError as e:
            raise from_rpc_error(e, self.address) from None
        return wrap(response)

    def devices(self, timeout: Optional[float] = None) -> DevicesReport:
        """The backend, its devices, variants, groups and kernel plugins."""
        return self._call(self.stub.ListDevices, pb2.ListDevicesRequest(), timeout,
                          DevicesReport.from_pb)

    def run(self, spec: Optional[pb2.SweepSpec] = None, timeout: Optional[float] = None,
            **fields: Any) -> RunResult:
        """Runs a sweep to completion. `spec` is a SweepSpec, or give its fields as keywords
        (specs.sweep_spec)."""
        request = pb2.RunRequest(spec=spec if spec is not None else specs.sweep_spec(**fields))
        return self._call(self.stub.Run, request, timeout, RunResult.from_pb)

    def sweep(self, spec: Optional[pb2.SweepSpec] = None, timeout: Optional[float] = None,
              **fields: Any) -> Iterator[SweepEvent]:
        """Runs a sweep, yielding its events as they come: progress, one result per case, then
        the summary (the whole run). Leaving the loop early ends the stream."""
        request = pb2.RunRequest(spec=spec if spec is not None else specs.sweep_spec(**fields))
        call = self.stub.Sweep(request, timeout=timeout, metadata=self.metadata)
        try:
            for event in call:
                yield SweepEvent.from_pb(event)
        except grpc.RpcError as e:
            raise from_rpc_error(e, self.address) from None
        finally:
            call.cancel()  # a no-op once the stream has ended

    def get_run(self, run_id: str, timeout: Optional[float] = None) -> RunResult:
        return self._call(self.stub.GetRun, pb2.GetRunRequest(run_id=run_id), timeout,
                          RunResult.from_pb)

    def cancel(self, run_id: str, timeout: Optional[float] = None) -> RunState:
        """Cancels a queued or running run: the state it was in."""
        return self._call(self.stub.Cancel, pb2.CancelRequest(run_id=run_id), timeout,
                          lambda r: RunState.from_pb(r.state))

    def health(self, request: Optional[pb2.HealthRequest] = None,
               timeout: Optional[float] = None, **fields: Any) -> HealthReport:
        """A health check (specs.health_request for the fields)."""
        if request is None:
            request = specs.health_request(**fields)
        return self._call(self.stub.Health, request, timeout, HealthReport.from_pb)

    def list_runs(self, timeout: Optional[float] = None, **fields: Any) -> RunPage:
        """One page of the history, newest first. Fields of ListRunsRequest: limit (0: the
        server's 50), label, state, since_unix_ms, variant, page_token, machine_key."""
        request = specs.message("ListRunsRequest", **fields)
        return self._call(self.stub.ListRuns, request, timeout, lambda page: RunPage(
            [RunSummary.from_pb(r) for r in page.runs], page.next_page_token))

    def history(self, limit: int = 50, timeout: Optional[float] = None,
                **filters: Any) -> list[RunSummary]:
        """The newest `limit` runs matching the filters (label, state, since_unix_ms, variant),
        following the pages."""
        runs: list[RunSummary] = []
        token = ""
        while len(runs) < limit:
            page = self.list_runs(timeout, limit=min(limit - len(runs), MAX_PAGE),
                                  page_token=token, **filters)
            runs += page.runs
            token = page.next_page_token
            if not token or not page.runs:
                break
        return runs[:limit]

    def compare(self, run_a: str = "", run_b: str = "", baseline: Optional[str] = None,
                threshold: float = 0.0, timeout: Optional[float] = None) -> CompareReport:
        """Compares run_b (the candidate) with run_a, or with the baseline of its machine named
        `baseline` ("" is the default baseline). threshold: the slowdown tolerated, 0 = 5 %."""
        request = pb2.CompareRequest(run_a=run_a, run_b=run_b, baseline=baseline or "",
                                     threshold=threshold)
        return self._call(self.stub.Compare, request, timeout, CompareReport.from_pb)
