"""Failures: the checks of a test script that goes on after a failed check, so that one run
lists every broken rule, then exits non-zero if any failed."""

import sys


class Failures:
    def __init__(self, echo=False):
        self.items = []
        self.checks = 0
        self.echo = echo  # also print each failure to stderr as it happens

    def check(self, condition, where, message):
        self.checks += 1
        if not condition:
            self.items.append(f"{where}: {message}")
            if self.echo:
                print(f"FAIL {where}: {message}", file=sys.stderr)
        return condition
