#!/usr/bin/python3
"""docs/rooms.md's table of rooms agrees with the rooms' README.md files (docs/rooms.md, the room
rules): every folder the table names is a room (its README.md has a `May include:` line), every
room is in the table, and each row lists exactly the targets its rooms' READMEs list.

The table is the first one of the file whose header has the columns `folder` and `targets`. In a
row, the folder cell names each room's folder in backticks, from the repository root and ending
in `/` (`worker/backends/cpu/`); the targets cell names in backticks every target of the READMEs'
`Targets:` lines of those folders (`colltest::numerics`, `colltest-worker`), or none for rooms
whose READMEs say `Targets: none`. Other text of the cells is free. The rooms are read with
scripts/check_includes.py, the check that enforces them.

Usage: rooms_doc_test.py [--repo DIR] [--self-test]
  --self-test  checks the test itself on fake repositories: a table that agrees passes, and a room
               left out, a target too many and a folder that is no room are each reported.
"""

import argparse
import os
import re
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "scripts"))
sys.dont_write_bytecode = True  # nothing written into the source tree
import check_includes  # noqa: E402

BACKTICKED = re.compile(r"`([^`]+)`")


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def read_table(path):
    """[(line number, folder cell, targets cell)] of the rooms table, or None when there is none."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for start, line in enumerate(lines):
        if not line.lstrip().startswith("|"):
            continue
        header = [c.lower() for c in cells(line)]
        if "folder" not in header or "targets" not in header:
            continue
        folder_col, targets_col = header.index("folder"), header.index("targets")
        rows = []
        for number in range(start + 2, len(lines)):  # after the |---| line
            if not lines[number].lstrip().startswith("|"):
                break
            row = cells(lines[number])
            rows.append((number + 1, row[folder_col], row[targets_col]))
        return rows
    return None


def check(repo):
    doc = os.path.join(repo, "docs", "rooms.md")
    rows = read_table(doc)
    if rows is None:
        return ["docs/rooms.md: no table with the columns `folder` and `targets`"]
    rooms, _ = check_includes.walk(repo)
    errors, seen = [], {}
    for number, folder_cell, targets_cell in rows:
        where = f"docs/rooms.md:{number}"
        folders = []
        for word in BACKTICKED.findall(folder_cell):
            if not word.endswith("/"):
                errors.append(f"{where}: `{word}` is no room folder (a folder from the repository "
                              "root, ending in /)")
                continue
            folder = word.rstrip("/")
            if folder not in rooms:
                errors.append(f"{where}: `{word}` has no room README ({folder}/README.md with a "
                              "'May include:' line)")
            elif folder in seen:
                errors.append(f"{where}: `{word}` is already in the row of line {seen[folder]}")
            else:
                seen[folder] = number
                folders.append(folder)
        if not folders:
            errors.append(f"{where}: the row names no room folder")
            continue
        listed = set(BACKTICKED.findall(targets_cell))
        expected = {t for folder in folders for t, _ in rooms[folder].targets}
        if listed != expected:
            errors.append(f"{where}: targets {sorted(listed)}, but the READMEs of "
                          f"{', '.join(f + '/' for f in folders)} list {sorted(expected)}")
    for folder in sorted(set(rooms) - set(seen)):
        errors.append(f"{rooms[folder].readme}: room {folder}/ is not in docs/rooms.md's table")
    return errors


FAKE_README = "# {0}/ — a room\n\nWhat it owns.\n\nTargets: {1}\nMay include: nothing\n"
FAKE_TABLE = """# Rooms

| room | folder | targets | what it owns |
|---|---|---|---|
| base | `base/`, `data/` | `colltest::base` (header-only) | the rest |
| app | `app/` | `colltest::app`, `app-main` | the program |

Other text.
"""


def fake_repo_errors(table):
    """check() on a fake repository with the rooms base/, data/ and app/ and `table`."""
    files = {"base/README.md": FAKE_README.format("base", "colltest::base"),
             "data/README.md": FAKE_README.format("data", "none"),
             "app/README.md": FAKE_README.format("app", "colltest::app, app-main"),
             "docs/rooms.md": table}
    with tempfile.TemporaryDirectory() as repo:
        for path, text in files.items():
            os.makedirs(os.path.join(repo, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(repo, path), "w", encoding="utf-8") as f:
                f.write(text)
        return check(repo)


def self_test():
    cases = [
        ("agrees", FAKE_TABLE, None),
        ("room left out", FAKE_TABLE.replace(", `data/`", ""), "room data/ is not in"),
        ("target too many", FAKE_TABLE.replace("`app-main`", "`app-main`, `app-extra`"),
         "docs/rooms.md:6: targets ['app-extra', 'app-main', 'colltest::app'], but"),
        ("no room", FAKE_TABLE.replace("`app/`", "`app/`, `docs/`"), "`docs/` has no room README"),
        ("glob", FAKE_TABLE.replace("`app/`", "`app/*.cc`"), "`app/*.cc` is no room folder"),
    ]
    failed = 0
    for name, table, expected in cases:
        errors = fake_repo_errors(table)
        ok = not errors if expected is None else any(expected in e for e in errors)
        print(f"self-test {name}: {'ok' if ok else 'FAILED'} {errors}")
        failed += not ok
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repo", default=REPO)
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    errors = check(os.path.abspath(args.repo))
    for error in errors:
        print(error)
    if errors:
        print(f"rooms_doc_test: {len(errors)} problem(s)", file=sys.stderr)
        return 1
    print("rooms_doc_test: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
