#!/usr/bin/python3
"""The kernel plugin SDK as a kernel team gets it (docs/plugins.md): `cmake --install --component
dev` into a temporary prefix holds the header and the CMake package; a project of its own
(tests/plugins/consumer) finds it with find_package(colltest 0.1), builds a plugin against
colltest::kernel_plugin, and colltest-worker --check-plugin loads that plugin; asking for an
older minor release (0.0) fails at configure time, as SameMinorVersion says for a 0.x package.
The example examples/plugins/oneshot_norm, built the same way (cpu only), runs through a colltestd
as plugin:oneshot_norm, exact in eager and graph mode at W = 2, its SHA-256 in the results."""

import argparse
import filecmp
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from colltestd_process import Colltestd  # noqa: E402


def run(args, **kwargs):
    return subprocess.run(args, capture_output=True, text=True, **kwargs)


def example_runs(args, prefix, work, plugins):
    """Builds the example against `prefix` as its README says and runs it through colltestd;
    returns the problems found."""
    example = os.path.join(args.source_dir, "examples", "plugins", "oneshot_norm")
    build = os.path.join(work, "build-example")
    configure = run([args.cmake, "-S", example, "-B", build, "-G", "Ninja",
                     f"-DCMAKE_PREFIX_PATH={prefix}", "-DONESHOT_NORM_GPU=OFF"])
    if configure.returncode != 0 or run([args.cmake, "--build", build]).returncode != 0:
        return [f"the example did not configure and build: {configure.stdout} {configure.stderr}"]
    plugin = os.path.join(plugins, "oneshot_norm_cpu.so")
    shutil.copy(os.path.join(build, "oneshot_norm_cpu.so"), plugin)
    os.chmod(plugin, 0o644)
    with open(plugin, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    bin_dir = os.path.join(args.build_dir, "bin")
    with Colltestd(os.path.join(bin_dir, "colltestd"),
                   ["--backend", "cpu", "--cpu-ranks", "2", "--listen", "127.0.0.1:0",
                    "--kernel-plugin", plugin]) as daemon:
        result = run([os.path.join(bin_dir, "colltest"), "--server", daemon.address, "run",
                      "--world", "2", "--m", "1,64", "--n", "256", "--variants",
                      "plugin:oneshot_norm", "--modes", "eager,graph", "--pattern", "neg_zero",
                      "--format", "json"], timeout=120)
    try:
        cases = json.loads(result.stdout)["cases"]
    except (ValueError, KeyError):
        return [f"colltest run: exit {result.returncode}, {result.stdout} {result.stderr}"]
    problems = [f"case {c['index']}: {c['status']} {c['message']}" for c in cases
                if c["status"] != "OK" or c["variant"] != "plugin:oneshot_norm"]
    problems += [f"case {c['index']}: sha256 {c.get('plugin', {}).get('sha256')}, file {sha}"
                 for c in cases if c.get("plugin", {}).get("sha256") != sha]
    if result.returncode != 0 or len(cases) != 4:
        problems.append(f"colltest run: exit {result.returncode}, {len(cases)} cases")
    return problems


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

        problems += example_runs(args, prefix, work, plugins)

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
                  f"them loads ({report.get('sha256', '')[:12]}...); the example built against "
                  f"them runs exact through colltestd")
        return 1 if problems else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
