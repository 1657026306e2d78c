#!/usr/bin/python3
"""Checks the room rules (docs/rooms.md): who may include whom, read from the rooms' READMEs.

A room is a folder whose README.md has the lines
    # <folder> — <short title>
    Targets: colltest::<name>[, <executable>...]   (or `Targets: none`)
    May include: <room>, <room>, ...               (folders from the repository root, or `nothing`)
Every .h/.cc/.cu/.cuh belongs to the deepest folder above it that is a room; tests/, bench/ and
examples/ (plugins built against the installed SDK) are no rooms and may include anything.
`#include "..."` is resolved against the including file's folder, then the repository root, then include/ (where the public header's INTERFACE target points); the
generated headers of proto/ ("colltest/v1/*.pb.h") are room `proto`;
a header found nowhere in the repository is a system or third-party one and is not checked.

Reported, each as one line naming the file (and line):
  - an include of a room that the including room neither is nor lists under May include;
  - a cycle in the graph of May include (a room that reaches itself);
  - a May include naming a room that does not exist;
  - a Targets entry that no add_library(<alias> ALIAS ...) or add_executable(<name> ...) of the
    room's own CMake files (its folder and the non-room folders below it) defines;
  - a README with a May include line but no Targets line, or a heading that does not name its folder;
  - a source file outside every room (tests/, bench/ and examples/ excepted).
Exit status 1 when anything was reported, else 0. Python's standard library only.

Usage: check_includes.py [--repo DIR]
"""

import argparse
import dataclasses
import os
import re
import sys

SOURCE_SUFFIXES = (".h", ".cc", ".cu", ".cuh")
# Folders of the repository root that hold no room code: outputs, tests, benchmarks and examples.
SKIPPED_TOP = ("out", "bench", "tests", "examples")
SKIPPED_PATHS = ("dashboard/web/vendor",)
# Code that is no room and may include anything.
FREE_TOP = ("tests", "bench", "examples")
PROTO_ROOM = "proto"
PROTO_PREFIX = "colltest/v1/"
PUBLIC_INCLUDE = "include"
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
HEADING = re.compile(r"^#\s+(\S+?)/?\s+[—-]+\s+\S")
ALIAS = re.compile(r"\badd_library\s*\(\s*([^\s()]+)\s+ALIAS\b", re.IGNORECASE)
EXECUTABLE = re.compile(r"\badd_executable\s*\(\s*([^\s()]+)", re.IGNORECASE)


@dataclasses.dataclass
class Room:
    name: str  # the folder, relative to the repository root ("worker/backends/cpu")
    readme: str  # README.md, relative to the repository root
    may_include: list  # [(room, line number)]
    may_include_text: str  # the line's list, as written, for the messages
    targets: list  # [(target, line number)]
    findings: list  # problems of the README itself


def parse_list(text):
    items = [item.strip().strip("`").rstrip("/") for item in text.split(",")]
    items = [item for item in items if item]
    return [] if items in (["nothing"], ["none"]) else items


def read_room(repo, folder):
    """The room of `folder` when its README.md has a May include line, else None."""
    readme = os.path.join(folder, "README.md") if folder else "README.md"
    try:
        with open(os.path.join(repo, readme), encoding="utf-8") as f:
            lines = f.read().split("\n")
    except OSError:
        return None
    room = Room(folder, readme, [], "", [], [])
    seen_may_include = seen_targets = False
    for number, line in enumerate(lines, 1):
        if line.startswith("May include:"):
            seen_may_include = True
            room.may_include_text = line[len("May include:"):].strip()
            room.may_include = [(r, number) for r in parse_list(room.may_include_text)]
        elif line.startswith("Targets:"):
            seen_targets = True
            room.targets = [(t, number) for t in parse_list(line[len("Targets:"):])]
    if not seen_may_include:
        return None
    if not seen_targets:
        room.findings.append(f"{readme}:1: room {folder} has no 'Targets:' line "
                             "(`Targets: none` for a room that builds nothing)")
    heading = HEADING.match(lines[0]) if lines else None
    if not heading or heading.group(1).rstrip("/") != folder:
        room.findings.append(f"{readme}:1: the heading must be '# {folder}/ — <short title>', "
                             f"not {lines[0]!r}")
    return room


def walk(repo):
    """(rooms by folder, source files): every room README and every source file to check."""
    rooms, sources = {}, []
    for top, dirs, files in os.walk(repo):
        rel = os.path.relpath(top, repo)
        rel = "" if rel == "." else rel.replace(os.sep, "/")
        dirs[:] = sorted(d for d in dirs if not skipped(rel, d))
        if "README.md" in files and rel:
            room = read_room(repo, rel)
            if room:
                rooms[rel] = room
        sources.extend(f"{rel}/{f}" if rel else f for f in sorted(files)
                       if f.endswith(SOURCE_SUFFIXES))
    return rooms, sources


def skipped(parent, name):
    path = f"{parent}/{name}" if parent else name
    if name.startswith(".") or name == "__pycache__":
        return True
    if not parent and (name.startswith("build") or name in SKIPPED_TOP):
        return True
    return path in SKIPPED_PATHS


def room_of(path, rooms):
    """The deepest room above `path` (a file), or None."""
    folder = os.path.dirname(path)
    while folder:
        if folder in rooms:
            return folder
        folder = os.path.dirname(folder)
    return None


def resolve(repo, including, target):
    """('file', path) for a repository file, ('proto', header) for proto's generated headers, or
    None for a header that is not the repository's."""
    # "include": the public plugin ABI's folder, on every target's path (include/CMakeLists.txt).
    for base in (os.path.dirname(including), "", PUBLIC_INCLUDE):
        candidate = os.path.normpath(os.path.join(base, target)).replace(os.sep, "/")
        if not candidate.startswith("../") and os.path.isfile(os.path.join(repo, candidate)):
            return ("file", candidate)
    if target.startswith(PROTO_PREFIX):
        return ("proto", target)
    stem = re.sub(r"(\.grpc)?\.pb\.h$", "", target)
    if stem != target and os.path.isfile(os.path.join(repo, PROTO_ROOM, stem + ".proto")):
        return ("proto", target)
    return None


def check_includes(repo, rooms, sources):
    findings = []
    for path in sources:
        owner = room_of(path, rooms)
        if owner is None:
            if path.split("/", 1)[0] not in FREE_TOP:
                findings.append(f"{path}: is in no room (no folder above it has a README.md "
                                "with a 'May include:' line)")
            continue
        allowed = {owner} | {r for r, _ in rooms[owner].may_include}
        with open(os.path.join(repo, path), encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                resolved = resolve(repo, path, match.group(1))
                if resolved is None:
                    continue
                kind, target = resolved
                target_room = PROTO_ROOM if kind == "proto" else room_of(target, rooms)
                if target_room in allowed:
                    continue
                shown = target_room if target_room else "no room"
                findings.append(f"{path}:{number}: includes {match.group(1)} (room {shown}), which "
                                f"room {owner} may not include (May include: "
                                f"{rooms[owner].may_include_text or 'nothing'})")
    return findings


def check_graph(rooms):
    """Unknown rooms named under May include, and every cycle of the graph (each once)."""
    findings = []
    for room in rooms.values():
        for name, number in room.may_include:
            if name not in rooms:
                findings.append(f"{room.readme}:{number}: May include names room {name}, which "
                                f"does not exist (no {name}/README.md with a 'May include:' line)")
    graph = {name: [r for r, _ in room.may_include if r in rooms] for name, room in rooms.items()}
    state = {}  # room -> "open" while on the DFS stack, "done" after
    reported = set()

    def visit(node, stack):
        state[node] = "open"
        stack.append(node)
        for nxt in graph[node]:
            if state.get(nxt) == "open":
                cycle = stack[stack.index(nxt):]
                key = frozenset(cycle)
                if key not in reported:
                    reported.add(key)
                    findings.append(f"{rooms[nxt].readme}: cycle in the rooms' May include: "
                                    + " -> ".join(cycle + [nxt]))
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [])
    return findings


def cmake_files(repo, room, rooms):
    """The CMake files of a room: CMakeLists.txt and *.cmake of its folder and of the folders
    below it that are no rooms of their own."""
    found = []
    for top, dirs, files in os.walk(os.path.join(repo, room)):
        rel = os.path.relpath(top, repo).replace(os.sep, "/")
        dirs[:] = [d for d in dirs if f"{rel}/{d}" not in rooms and not skipped(rel, d)]
        found.extend(os.path.join(top, f) for f in files
                     if f == "CMakeLists.txt" or f.endswith(".cmake"))
    return found


def defined_targets(paths):
    names = set()
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = "\n".join(line.split("#", 1)[0] for line in f)
        names.update(ALIAS.findall(text))
        names.update(EXECUTABLE.findall(text))
    return names


def check_targets(repo, rooms):
    findings = []
    for room in rooms.values():
        defined = defined_targets(cmake_files(repo, room.name, rooms))
        for target, number in room.targets:
            if target not in defined:
                findings.append(f"{room.readme}:{number}: Targets names {target}, which no "
                                f"add_library({target} ALIAS ...) or add_executable({target} ...) "
                                f"of {room.name}/'s CMake files defines")
    return findings


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default_repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--repo", default=default_repo, help="the repository root")
    repo = os.path.abspath(parser.parse_args().repo)
    rooms, sources = walk(repo)
    findings = [f for room in rooms.values() for f in room.findings]
    findings += check_graph(rooms)
    findings += check_targets(repo, rooms)
    findings += check_includes(repo, rooms, sources)
    for finding in findings:
        print(finding)
    if findings:
        print(f"check_includes: {len(findings)} finding(s) in {len(rooms)} rooms "
              "(docs/rooms.md has the rules)", file=sys.stderr)
        return 1
    print(f"check_includes: OK: {len(rooms)} rooms, {len(sources)} source files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
