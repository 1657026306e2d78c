"""The exit codes of the colltest CLI (docs/python-client.md), which scripts branch on:
0 every case OK or UNSUPPORTED, 1 some case WRONG, 2 some case HANG, 3 an error (a failed call,
an ERROR case, a run that did not complete), 5 BUSY (the devices were in use; nothing ran)."""

import grpc

from . import colltest_pb2 as pb2

EXIT_OK = 0
EXIT_WRONG = 1
EXIT_HANG = 2
EXIT_ERROR = 3
EXIT_BUSY = 5

_ABORTED = (pb2.RUN_STATE_CANCELLED, pb2.RUN_STATE_FAILED, pb2.RUN_STATE_INTERRUPTED)


def exit_code_for_status(status):
    if status in (pb2.CASE_STATUS_OK, pb2.CASE_STATUS_UNSUPPORTED):
        return EXIT_OK
    if status == pb2.CASE_STATUS_WRONG:
        return EXIT_WRONG
    if status == pb2.CASE_STATUS_HANG:
        return EXIT_HANG
    # ERROR, and a status the server left unset: the results are incomplete.
    return EXIT_ERROR


def exit_code_for_run(run):
    """The worst outcome of a RunResult, in the order error > hang > wrong > ok: an aborted run
    or an ERROR case means the results are incomplete, which outranks any verdict drawn from
    them."""
    if run.state in _ABORTED:
        return EXIT_ERROR
    return max((exit_code_for_status(case.status) for case in run.cases), default=EXIT_OK)


def is_busy_refusal(error):
    """Whether a grpc.RpcError is colltestd refusing because other processes use the devices."""
    return (error.code() == grpc.StatusCode.FAILED_PRECONDITION
            and (error.details() or "").startswith("BUSY:"))


def exit_code_for_error(error):
    return EXIT_BUSY if is_busy_refusal(error) else EXIT_ERROR
