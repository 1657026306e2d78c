#!/usr/bin/python3
"""`cmake --install` into a temporary prefix: the tree holds every program, the TLS shim, the tune
tables, the docs, the man pages and the completions, and a colltestd started from it (TLS, cpu
backend) runs a sweep with the installed colltest and workers, using nothing of the build tree."""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import installed_tree


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--cmake", default="cmake")
    args = parser.parse_args()

    start = time.monotonic()
    work_dir = tempfile.mkdtemp(prefix="colltest-install-")
    try:
        prefix = os.path.join(work_dir, "prefix")
        subprocess.run([args.cmake, "--install", args.build_dir, "--prefix", prefix], check=True,
                       stdout=subprocess.DEVNULL)
        if not installed_tree.verify(prefix, args.source_dir, work_dir, args.build_dir):
            return 1
        size = subprocess.run(["du", "-sh", prefix], capture_output=True, text=True).stdout
        print(f"install_test: the installed tree ({size.split()[0]}) runs a sweep "
              f"({time.monotonic() - start:.1f} s)")
        return 0
    except (AssertionError, subprocess.CalledProcessError) as error:
        print("FAIL:", error)
        return 1
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
