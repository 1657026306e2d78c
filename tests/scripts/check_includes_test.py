#!/usr/bin/python3
"""scripts/check_includes.py on small fake repositories: each room rule is broken once and must be
reported, and a tree that keeps every rule must pass.

Usage: check_includes_test.py [unittest arguments, e.g. CheckIncludesTest.test_cycle]
"""

import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(REPO, "scripts", "check_includes.py")


def readme(folder, targets, may_include):
    return textwrap.dedent(f"""\
        # {folder}/ — a room of the fake tree

        What the room owns.

        Targets: {targets}
        May include: {may_include}
        """)


def cmake(name):
    return f"add_library(colltest_{name} STATIC x.cc)\nadd_library(colltest::{name} ALIAS colltest_{name})\n"


# Two rooms, `base` below `app`, and a test that includes both: every rule kept.
CLEAN_TREE = {
    "base/README.md": readme("base", "colltest::base", "proto"),
    "base/CMakeLists.txt": cmake("base"),
    "base/base.h": ('#pragma once\n#include "colltest/v1/api.pb.h"\n#include "absl/status/status.h"\n'
                    '#include "ext/v1/ext.grpc.pb.h"\n'),
    "base/base.cc": '#include "base/base.h"\n#include "local.h"\n',
    "base/local.h": "#pragma once\n",
    "app/README.md": readme("app", "colltest::app, app-main", "base, proto"),
    "app/CMakeLists.txt": cmake("app") + "add_executable(app-main main.cc)\n",
    "app/main.cc": '#include "app/../base/base.h"\n#include <vector>\n',
    "proto/README.md": readme("proto", "colltest::proto", "nothing"),
    "proto/CMakeLists.txt": cmake("proto"),
    "proto/ext/v1/ext.proto": 'syntax = "proto3";\n',
    "tests/app_test.cc": '#include "app/main.cc"\n#include "base/base.h"\n',
    "build/gen/anything.h": '#include "app/main.cc"\n',
}


class CheckIncludesTest(unittest.TestCase):

    def run_check(self, changes):
        """(exit status, output) of the check on CLEAN_TREE with `changes` (path -> text, or None to
        remove the file)."""
        files = dict(CLEAN_TREE)
        files.update(changes)
        with tempfile.TemporaryDirectory() as repo:
            for path, text in files.items():
                if text is None:
                    continue
                full = os.path.join(repo, path)
                os.makedirs(os.path.dirname(full), exist_ok=True)
                with open(full, "w", encoding="utf-8") as f:
                    f.write(text)
            proc = subprocess.run([sys.executable, CHECK, "--repo", repo], capture_output=True,
                                  text=True, timeout=60)
        return proc.returncode, proc.stdout + proc.stderr

    def assert_reported(self, changes, *expected):
        rc, out = self.run_check(changes)
        self.assertEqual(rc, 1, out)
        for text in expected:
            self.assertIn(text, out)

    def test_clean_tree(self):
        rc, out = self.run_check({})
        self.assertEqual(rc, 0, out)
        self.assertIn("OK: 3 rooms", out)

    def test_upward_include(self):
        self.assert_reported(
            {"base/base.cc": '#include "base/base.h"\n\n#include "app/main.cc"\n'},
            "base/base.cc:3: includes app/main.cc (room app), which room base may not include "
            "(May include: proto)")

    def test_include_relative_to_the_folder(self):
        # "../app/x.h" from base/ is app's file, however it is spelt.
        self.assert_reported({"base/local.h": '#include "../app/main.cc"\n'},
                             "base/local.h:1: includes ../app/main.cc (room app)")

    def test_proto_include(self):
        # The generated headers are proto's, though no such file is in the tree: colltest/v1/'s
        # and those of any .proto under proto/. absl's are no room's and never checked.
        self.assert_reported(
            {"app/README.md": readme("app", "colltest::app, app-main", "base"),
             "base/README.md": readme("base", "colltest::base", "nothing")},
            "base/base.h:2: includes colltest/v1/api.pb.h (room proto), which room base may not "
            "include (May include: nothing)",
            "base/base.h:4: includes ext/v1/ext.grpc.pb.h (room proto)")

    def test_sub_room(self):
        # A file belongs to the deepest room: app/sub/ may not include app/ unless it says so.
        sub = {"app/sub/README.md": readme("app/sub", "none", "base"),
               "app/sub/sub.h": '#include "base/base.h"\n#include "app/main.cc"\n'}
        self.assert_reported(sub, "app/sub/sub.h:2: includes app/main.cc (room app), which room "
                             "app/sub may not include (May include: base)")
        sub["app/sub/README.md"] = readme("app/sub", "none", "app, base")
        self.assertEqual(self.run_check(sub)[0], 0)

    def test_cycle(self):
        self.assert_reported({"base/README.md": readme("base", "colltest::base", "proto, app")},
                             "cycle in the rooms' May include: app -> base -> app")

    def test_unknown_room(self):
        self.assert_reported(
            {"app/README.md": readme("app", "colltest::app, app-main", "base, proto, nowhere")},
            "app/README.md:6: May include names room nowhere, which does not exist")

    def test_missing_target(self):
        self.assert_reported(
            {"app/CMakeLists.txt": cmake("app") + "# add_executable(app-main main.cc)\n"},
            "app/README.md:5: Targets names app-main, which no add_library(app-main ALIAS ...) or "
            "add_executable(app-main ...) of app/'s CMake files defines")
        # A sub-room's CMake files are its own, not its parent's.
        self.assert_reported(
            {"app/CMakeLists.txt": "", "app/main/README.md": readme("app/main", "none", "base"),
             "app/main/CMakeLists.txt": cmake("app") + "add_executable(app-main main.cc)\n"},
            "Targets names colltest::app, which")

    def test_source_outside_rooms(self):
        self.assert_reported({"tools/tool.cc": "int main() {}\n"},
                             "tools/tool.cc: is in no room")

    def test_readme_format(self):
        self.assert_reported(
            {"base/README.md": "# base/ — a room\n\nMay include: proto\n"},
            "base/README.md:1: room base has no 'Targets:' line")
        self.assert_reported(
            {"base/README.md": readme("base", "colltest::base", "proto").replace("# base/", "# bse/")},
            "base/README.md:1: the heading must be '# base/ — <short title>'")


if __name__ == "__main__":
    unittest.main()
