#!/usr/bin/python3
"""Every file of the repository that the docs name in backticks exists, so that a move of a file
cannot leave the docs pointing at nothing.

Read: README.md and docs/*.md (or the files given), prose only (fenced code blocks are commands,
whose paths are often outputs). A backticked word that starts with one of the repository's top
folders is a path; `{a,b}` alternatives and `*` are expanded as the shell would, and a path with
a `:LINE` suffix is checked without it. Paths under build*/ and out/ are generated and skipped.
Each path must match at least one file or folder. Exit 1 naming file:line and the path otherwise.

Usage: doc_paths_test.py [--repo DIR] [FILE.md ...]
"""

import argparse
import glob
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOP_FOLDERS = ("bench", "client", "cmake", "common", "dashboard", "deploy", "docs", "http",
               "proto", "python", "scripts", "server", "store", "tests", "tune", "worker")
BACKTICKED = re.compile(r"`([^`\s]+)`")
FENCE = re.compile(r"^\s*```")


def expand_braces(path):
    """`a/{b,c}.h` -> [`a/b.h`, `a/c.h`] (one level of braces is all the docs use)."""
    match = re.search(r"\{([^{}]*)\}", path)
    if not match:
        return [path]
    head, tail = path[:match.start()], path[match.end():]
    return [alt for choice in match.group(1).split(",") for alt in expand_braces(head + choice + tail)]


def candidate_paths(text):
    """The repository paths named in backticks in one line of prose."""
    for word in BACKTICKED.findall(text):
        word = re.sub(r":\d+(-\d+)?$", "", word).rstrip(".,;")
        if "/" not in word or word.split("/", 1)[0] not in TOP_FOLDERS:
            continue
        if "=" in word or "$" in word or "<" in word:  # a flag, a variable or a placeholder
            continue
        yield word


def exists(repo, path):
    for alternative in expand_braces(path):
        if glob.glob(os.path.join(repo, alternative)):
            return True
    return False


def missing_paths(repo, markdown):
    """(line number, path) for every named path that matches nothing."""
    found = []
    in_fence = False
    with open(markdown, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if FENCE.match(line):
                in_fence = not in_fence
                continue
            if in_fence:
                continue
            for path in candidate_paths(line):
                if not exists(repo, path):
                    found.append((number, path))
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", default=REPO)
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    files = args.files or [os.path.join(args.repo, "README.md")] + sorted(
        glob.glob(os.path.join(args.repo, "docs", "*.md")))
    failures = 0
    for markdown in files:
        for number, path in missing_paths(args.repo, markdown):
            print(f"{os.path.relpath(markdown, args.repo)}:{number}: `{path}` names no file")
            failures += 1
    print(f"doc paths: {failures} missing in {len(files)} files")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
