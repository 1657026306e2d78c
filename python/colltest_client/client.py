"""The connection to colltestd and one method per call of the public API. Failed calls raise
grpc.RpcError, whose code() and details() are what colltestd answered."""

import grpc

from . import colltest_pb2 as pb2
from . import colltest_pb2_grpc as pb2_grpc
from . import specs

# A large sweep returns every case with its per-rank results in one message; gRPC's 4 MiB default
# would cut off a few thousand cases (the same limit as the colltest CLI).
_MAX_RECEIVE_BYTES = 64 << 20
# The server's own cap on one page of the history.
_MAX_PAGE = 1000


def _read_pem(value):
    """PEM bytes from bytes, or from the file a path names."""
    if value is None or isinstance(value, bytes):
        return value
    with open(value, "rb") as f:
        return f.read()


def connect(address, token=None, tls_ca=None, *, tls_cert=None, tls_key=None, server_name=None):
    """A Client of the colltestd at `address` ("host:port" or "unix:PATH").

    token: a bearer token, for a colltestd started with --token-file.
    tls_ca: the root CA (a PEM file's path, or its bytes): connect with TLS.
    tls_cert, tls_key: a client certificate and key, for a server that requires mutual TLS.
    server_name: the name expected in the server certificate when `address` is an IP address.

    Connecting is lazy: an unreachable server shows in the first call, as grpc.RpcError
    UNAVAILABLE."""
    options = [("grpc.max_receive_message_length", _MAX_RECEIVE_BYTES)]
    if tls_ca is None and tls_cert is None:
        return Client(grpc.insecure_channel(address, options=options), token)
    if (tls_cert is None) != (tls_key is None):
        raise ValueError("tls_cert and tls_key must be given together")
    credentials = grpc.ssl_channel_credentials(
        root_certificates=_read_pem(tls_ca), private_key=_read_pem(tls_key),
        certificate_chain=_read_pem(tls_cert))
    if server_name:
        options.append(("grpc.ssl_target_name_override", server_name))
    return Client(grpc.secure_channel(address, credentials, options=options), token)


class Client:
    """Calls of colltestd's CollectiveTest service. `stub` is the generated stub, for calls this
    class does not wrap (pass metadata=client.metadata to them)."""

    def __init__(self, channel, token=None):
        self._channel = channel
        self.stub = pb2_grpc.CollectiveTestStub(channel)
        # Per-call metadata rather than call credentials: gRPC refuses call credentials on an
        # insecure channel, and a token over plain TCP is a setup colltestd supports.
        self.metadata = (("authorization", f"Bearer {token}"),) if token else ()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self._channel.close()

    def devices(self, timeout=None):
        """ListDevicesResponse: the backend, its devices, variants and groups."""
        return self.stub.ListDevices(pb2.ListDevicesRequest(), timeout=timeout,
                                     metadata=self.metadata)

    def run(self, spec=None, timeout=None, **fields):
        """Runs a sweep to completion: its RunResult. `spec` is a SweepSpec, or give its fields
        as keywords (see specs.sweep_spec)."""
        request = pb2.RunRequest(spec=spec if spec is not None else specs.sweep_spec(**fields))
        return self.stub.Run(request, timeout=timeout, metadata=self.metadata)

    def sweep(self, spec=None, timeout=None, **fields):
        """Runs a sweep, yielding its SweepEvents as they come: progress, one result per case,
        then the summary (the whole RunResult). Leaving the loop early ends the stream."""
        request = pb2.RunRequest(spec=spec if spec is not None else specs.sweep_spec(**fields))
        call = self.stub.Sweep(request, timeout=timeout, metadata=self.metadata)
        try:
            yield from call
        finally:
            call.cancel()  # a no-op once the stream has ended

    def get_run(self, run_id, timeout=None):
        return self.stub.GetRun(pb2.GetRunRequest(run_id=run_id), timeout=timeout,
                                metadata=self.metadata)

    def cancel(self, run_id, timeout=None):
        return self.stub.Cancel(pb2.CancelRequest(run_id=run_id), timeout=timeout,
                                metadata=self.metadata)

    def health(self, request=None, timeout=None, **fields):
        """HealthResponse of a health check (see specs.health_request for the fields)."""
        if request is None:
            request = specs.health_request(**fields)
        return self.stub.Health(request, timeout=timeout, metadata=self.metadata)

    def history(self, limit=50, timeout=None, **filters):
        """The newest `limit` runs (RunSummary, newest first) matching the filters of
        ListRunsRequest (label, state, since_unix_ms, variant), following the pages."""
        runs, page_token = [], ""
        while len(runs) < limit:
            request = specs.message("ListRunsRequest", limit=min(limit - len(runs), _MAX_PAGE),
                                       page_token=page_token, **filters)
            page = self.stub.ListRuns(request, timeout=timeout, metadata=self.metadata)
            runs.extend(page.runs)
            page_token = page.next_page_token
            if not page_token or not page.runs:
                break
        return runs[:limit]
