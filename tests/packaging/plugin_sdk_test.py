#!/usr/bin/python3
"""The kernel plugin SDK as a kernel team gets it (docs/plugins.md): `cmake --install --component
dev` into a temporary prefix holds the header and the CMake package; a project of its own
(tests/plugins/consumer) finds it with find_package(colltest 0.1), builds a plugin against
colltest::kernel_plugin, and colltest-worker --check-plugin loads that plugin; asking for an
older minor release (0.0) fails at configure time, as SameMinorVersion says for a 0.x package."""

import argparse
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile


def run(args, **kwargs):
    return subprocess.run(args, capture_output=True, text=True, **kwargs)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--cmake", default="cmake")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="colltest-plugin-sdk-")
    os.chmod(work, 0o700)
    problems = []
    try:
        prefix = os.path.join(work, "prefix")
        install = run([args.cmake, "--install", args.build_dir, "--component", "dev",
                       "--prefix", prefix])
        if install.returncode != 0:
            print("FAIL: cmake --install --component dev:", install.stdout, install.stderr)
            return 1
        header = os.path.join(prefix, "include", "colltest", "kernel_plugin.h")
        source_header = os.path.join(args.source_dir, "include", "colltest", "kernel_plugin.h")
        if not (os.path.isfile(header) and filecmp.cmp(header, source_header, shallow=False)):
            problems.append(f"{header}: missing or not the source's header")
        for name in ("colltestConfig.cmake", "colltestConfigVersion.cmake",
                     "colltestTargets.cmake"):
            if not os.path.isfile(os.path.join(prefix, "share", "cmake", "colltest", name)):
                problems.append(f"share/cmake/colltest/{name} not installed")

        consumer = os.path.join(args.source_dir, "tests", "plugins", "consumer")
        plugin_source = os.path.join(args.source_dir, "tests", "plugins", "fixtures",
                                     "noop_cpu.c")
        build = os.path.join(work, "build")
        configure = run([args.cmake, "-S", consumer, "-B", build, "-G", "Ninja",
                         f"-DCMAKE_PREFIX_PATH={prefix}", f"-DPLUGIN_SOURCE={plugin_source}"])
        compiled = configure.returncode == 0 and run(
            [args.cmake, "--build", build]).returncode == 0
        if not compiled:
            print("FAIL: the consumer project did not configure and build:", configure.stdout,
                  configure.stderr)
            return 1
        plugins = os.path.join(work, "plugins")
        os.mkdir(plugins, 0o755)
        plugin = os.path.join(plugins, "consumer_plugin.so")
        shutil.copy(os.path.join(build, "consumer_plugin.so"), plugin)
        check = run([os.path.join(args.build_dir, "bin", "colltest-worker"), "--check-plugin",
                     plugin, "--backend", "cpu"])
        report = json.loads(check.stdout) if check.stdout.strip() else {}
        if check.returncode != 0 or not report.get("loaded") or report.get("name") != "noop":
            problems.append(f"colltest-worker --check-plugin: exit {check.returncode}, "
                            f"{check.stdout.strip()} {check.stderr.strip()}")

        # SameMinorVersion: in 0.x each minor release is its own; AnyNewerVersion would take it.
        other = run([args.cmake, "-S", consumer, "-B", os.path.join(work, "build-0.0"), "-G",
                     "Ninja", f"-DCMAKE_PREFIX_PATH={prefix}", f"-DPLUGIN_SOURCE={plugin_source}",
                     "-DCOLLTEST_WANT=0.0"])
        if other.returncode == 0:
            problems.append("find_package(colltest 0.0) took the 0.1 package")
        for problem in problems:
            print("FAIL:", problem)
        if not problems:
            print(f"plugin_sdk_test: header and CMake package installed; a plugin built against "
                  f"them loads ({report.get('sha256', '')[:12]}...)")
        return 1 if problems else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
