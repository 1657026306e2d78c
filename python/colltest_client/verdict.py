"""The exit codes of the colltest CLI (docs/python-client.md), which scripts branch on:
0 every case OK or UNSUPPORTED, 1 some case WRONG, 2 some case HANG, 3 an error (a failed call,
an ERROR case, a run that did not complete), 4 a regression found by compare, 5 BUSY (the devices
were in use; nothing ran)."""

from __future__ import annotations

from typing import Iterable

from .enums import CaseStatus, CompareVerdict
from .errors import BusyError, ColltestError
from .results import CompareReport, HealthReport, RunResult

EXIT_OK = 0
EXIT_WRONG = 1
EXIT_HANG = 2
EXIT_ERROR = 3
EXIT_REGRESSED = 4
EXIT_BUSY = 5


def exit_code_for_status(status: CaseStatus) -> int:
    if status in (CaseStatus.OK, CaseStatus.UNSUPPORTED):
        return EXIT_OK
    if status is CaseStatus.WRONG:
        return EXIT_WRONG
    if status is CaseStatus.HANG:
        return EXIT_HANG
    # ERROR, and a status the server left unset: the results are incomplete.
    return EXIT_ERROR


def _worst(statuses: Iterable[CaseStatus]) -> int:
    return max((exit_code_for_status(s) for s in statuses), default=EXIT_OK)


def exit_code_for_run(run: RunResult) -> int:
    """The worst outcome of a run, in the order error > hang > wrong > ok: an aborted run or an
    ERROR case means the results are incomplete, which outranks any verdict drawn from them."""
    if run.state.aborted:
        return EXIT_ERROR
    return _worst(case.status for case in run.cases)


def exit_code_for_health(health: HealthReport) -> int:
    """BUSY wins: the fields of a BUSY answer hold an earlier verdict, not this check's."""
    if health.busy:
        return EXIT_BUSY
    statuses = [health.status] + [t.status for t in health.ranks + health.pairs]
    return _worst(statuses + [c.status for c in health.cases])


def exit_code_for_comparison(report: CompareReport) -> int:
    """4 when a case got slower or worse, or is missing from the candidate."""
    regressed = report.regressed or report.regressions > 0 or any(
        c.verdict in (CompareVerdict.REGRESSION, CompareVerdict.ONLY_A) for c in report.cases)
    return EXIT_REGRESSED if regressed else EXIT_OK


def exit_code_for_error(error: ColltestError) -> int:
    return EXIT_BUSY if isinstance(error, BusyError) else EXIT_ERROR
