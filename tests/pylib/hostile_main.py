"""The entry point the hostile tests (tests/hostile/*_test.py) share. Each is run as

    <name>_test.py --colltestd PATH --colltest PATH [its own flags]

and hands its check to main(): the check gets the parsed arguments and returns the problems it
found (strings), printed one per line as `FAIL: <problem>`, or none, and then `PASS` is printed.
The test exits 1 with problems, 0 without. A check that cannot run where it is raises Skip: the
test prints `SKIP: <why>` and exits 0.

    def check(args):
        ...
        return problems

    if __name__ == "__main__":
        hostile_main.main(check, __doc__)
"""

import argparse
import os
import sys


def write_private(directory, name, text):
    """Writes `text` to DIRECTORY/NAME readable by its owner only, as colltestd wants its token
    file (and colltest a client's token file); returns the path."""
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)
    return path


class Skip(Exception):
    """The check cannot run here (say, it needs root); the message says why."""


def main(check, doc, add_arguments=None):
    """Parses --colltestd and --colltest (and what add_arguments(parser) adds), runs
    check(args), prints its verdict and exits with it. `doc`, the test's docstring, is its help."""
    parser = argparse.ArgumentParser(description=doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--colltestd", required=True, help="the colltestd binary to attack")
    parser.add_argument("--colltest", required=True, help="the colltest CLI")
    if add_arguments is not None:
        add_arguments(parser)
    args = parser.parse_args()
    try:
        problems = list(check(args))
    except Skip as skip:
        print(f"SKIP: {skip}")
        sys.exit(0)
    for problem in problems:
        print(f"FAIL: {problem}")
    if not problems:
        print("PASS")
    sys.exit(1 if problems else 0)
