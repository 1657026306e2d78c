#!/usr/bin/env python3
"""Every message, field, enum, enum value, service and RPC of a .proto file has a comment.

The public API is documented in the proto itself (units, limits, defaults), so that the generated
stubs of every language carry it. A declaration counts as documented when a `//` comment ends on
the line just above it or follows it on the same line. Usage: proto_comments_test.py FILE...
"""
import re
import sys

DECLARATION = re.compile(
    r"^\s*(?:(?:message|enum|service)\s+\w+\s*\{"  # a type or service
    r"|rpc\s+\w+\s*\("  # a method
    r"|(?:repeated\s+|optional\s+)?[\w.]+\s+\w+\s*=\s*\d+\s*;"  # a field
    r"|\w+\s*=\s*-?\d+\s*;"  # an enum value
    r"|map<[^>]+>\s+\w+\s*=\s*\d+\s*;)")


def documented(lines, index):
    """True when lines[index] has a trailing comment or a comment on the line above."""
    return "//" in lines[index] or (index > 0 and lines[index - 1].strip().startswith("//"))


def undocumented(lines):
    return [(i + 1, line.strip()) for i, line in enumerate(lines)
            if DECLARATION.match(line) and not documented(lines, i)]


def main(paths):
    failures = 0
    for path in paths:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        for number, text in undocumented(lines):
            print(f"{path}:{number}: no comment: {text}")
            failures += 1
    if failures:
        print(f"FAIL: {failures} declarations without a comment")
        return 1
    print(f"ok: every declaration of {len(paths)} file(s) has a comment")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
