#!/usr/bin/python3
"""Debian's lintian on every .deb of `cpack -G DEB`: it fails on any error or warning it reports
(--fail-on error,warning), and on an override (deploy/debian/<component>/lintian-overrides,
shipped as /usr/share/lintian/overrides/<package>) without a comment giving its reason, or one
that no longer matches anything (lintian's unused-override, made an error here)."""

import argparse
import os
import re
import subprocess
import sys
import time

import debs


def check_overrides(source_dir):
    """Each override line is preceded by a comment: [] when all are justified."""
    problems = []
    debian_dir = os.path.join(source_dir, "deploy", "debian")
    for component in sorted(os.listdir(debian_dir)):
        path = os.path.join(debian_dir, component, "lintian-overrides")
        if not os.path.isfile(path):
            continue
        previous = ""
        for number, line in enumerate(open(path), 1):
            line = line.strip()
            if line and not line.startswith("#") and not previous.startswith("#"):
                problems.append(f"{path}:{number}: override without a comment above it: {line}")
            previous = line if line else ""
    return problems


def lint(debs_to_check):
    """lintian on the .debs: its tags printed, the problems returned."""
    # Errors and warnings fail; info tags are listed. Overrides that match nothing are reported
    # as the info tag unused-override, failed on here. (No --show-overrides: with it, lintian
    # fails on the overridden tags too.)
    result = subprocess.run(["lintian", "--fail-on", "error,warning", "--display-info",
                             "--tag-display-limit", "0", *debs_to_check],
                            capture_output=True, text=True)
    tags = [line for line in result.stdout.splitlines() if re.match(r"^[EWIPXO]: ", line)]
    for line in tags:
        print(line)
    problems = [f"lintian: {line}" for line in tags
                if "unused-override" in line or "mismatched-override" in line]
    if result.returncode != 0:
        problems.append(f"lintian exited {result.returncode}:\n{result.stdout}{result.stderr}")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--cpack", default="cpack")
    parser.add_argument("--debs-dir", help="the .debs already made (test packaging.debs)")
    args = parser.parse_args()
    start = time.monotonic()

    def run(work_dir):
        packages = debs.make(args.cpack, args.build_dir, os.path.join(work_dir, "debs"),
                             args.debs_dir)
        problems = check_overrides(args.source_dir) + lint(packages.values())
        for problem in problems:
            print("FAIL:", problem)
        if problems:
            return 1
        print(f"lintian_test: {', '.join(sorted(packages))}: no error or warning, every "
              f"override justified ({time.monotonic() - start:.1f} s)")
        return 0

    return debs.in_work_dir("colltest-lintian-", run)


if __name__ == "__main__":
    sys.exit(main())
