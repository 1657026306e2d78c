"""Exceptions of the client: a failed call is a ColltestError carrying colltestd's status code and
message, of a subclass per kind of failure, so that callers branch on the type rather than on
grpc's codes. grpc.RpcError never leaves the package (client.py converts it)."""

from __future__ import annotations

from typing import Optional

import grpc


class ColltestError(Exception):
    """A call colltestd refused or that failed. `code` is the gRPC status name
    ("INVALID_ARGUMENT"), `message` the server's text, `server` the address asked."""

    def __init__(self, code: str, message: str, server: str = "") -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.server = server


class InvalidArgumentError(ColltestError):
    """The request was refused as invalid; the message names the field and the limit."""


class NotFoundError(ColltestError):
    """No such run or baseline."""


class AlreadyExistsError(ColltestError):
    pass


class FailedPreconditionError(ColltestError):
    """The server cannot do it in its present state (a run that is not finished, ...)."""


class BusyError(FailedPreconditionError):
    """Other processes use the devices: nothing ran (SweepSpec.force runs anyway)."""


class PermissionDeniedError(ColltestError):
    """The caller's role does not allow the call."""


class UnauthenticatedError(ColltestError):
    """No token or certificate, or one the server does not know."""


class UnavailableError(ColltestError):
    """The server could not be reached (not running, wrong port, TLS mismatch)."""


class DeadlineExceededError(ColltestError):
    """No answer within the call's timeout."""


class ResourceExhaustedError(ColltestError):
    """A limit of the server (queue, connections, message size) was reached."""


class CancelledError(ColltestError):
    pass


class InternalError(ColltestError):
    """INTERNAL, UNKNOWN, DATA_LOSS and any other code: a fault of the server or the link."""


_BY_CODE: dict[grpc.StatusCode, type[ColltestError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgumentError,
    grpc.StatusCode.OUT_OF_RANGE: InvalidArgumentError,
    grpc.StatusCode.NOT_FOUND: NotFoundError,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExistsError,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPreconditionError,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDeniedError,
    grpc.StatusCode.UNAUTHENTICATED: UnauthenticatedError,
    grpc.StatusCode.UNAVAILABLE: UnavailableError,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceededError,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhaustedError,
    grpc.StatusCode.CANCELLED: CancelledError,
}


def from_rpc_error(error: grpc.RpcError, server: str = "") -> ColltestError:
    """The ColltestError of a failed call: its class from the status code, its message the
    server's details. A BUSY refusal (FAILED_PRECONDITION starting "BUSY:") is a BusyError."""
    code: Optional[grpc.StatusCode] = error.code() if hasattr(error, "code") else None
    details = error.details() if hasattr(error, "details") else None
    message = str(details or "")
    name = code.name if code is not None else "UNKNOWN"
    cls: type[ColltestError] = _BY_CODE.get(code, InternalError) if code else InternalError
    if cls is FailedPreconditionError and message.startswith("BUSY:"):
        cls = BusyError
    return cls(name, message, server)
