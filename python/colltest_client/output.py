"""Where a command's report goes: a table (the default) or one JSON document, on stdout or into
--out FILE. A JSON document is {"schema_version": 1, "kind": "colltest.KIND", ...} with the
fields of the typed result (results.py), enums by their CLI names, as the colltest CLI's JSON
starts (docs/output-formats.md)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, TextIO

from .convert import to_json

SCHEMA_VERSION = 1


@dataclass
class Output:
    """--format and --out of a command, and the stream a report goes to without --out."""
    format: str
    path: str
    stdout: TextIO

    def report(self, kind: str, result: Any, table: Callable[[], str]) -> None:
        """Writes `result` as the table `table()` makes, or as the JSON document `kind`."""
        if self.format == "json":
            document = {"schema_version": SCHEMA_VERSION, "kind": f"colltest.{kind}"}
            document.update(to_json(result))
            text = json.dumps(document, indent=2) + "\n"
        else:
            text = table() + "\n"
        if self.path:
            with open(self.path, "w", encoding="utf-8") as f:
                f.write(text)
        else:
            self.stdout.write(text)
            self.stdout.flush()
