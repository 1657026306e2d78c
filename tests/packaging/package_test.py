#!/usr/bin/python3
"""`cpack -G DEB` into a temporary directory: a colltest package, a colltest-worker-<backend>
package and colltest-dev (the kernel plugin ABI, Architecture: all), with the relations that let
apt install them (colltest Depends on the virtual colltest-worker of its version and on the
libraries dpkg-shlibdeps found; the worker Provides, Conflicts with and Replaces it), each with its
own files; the first two extracted into one root make a tree whose colltestd runs a sweep."""

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import installed_tree


def field(deb, name):
    return subprocess.run(["dpkg-deb", "-f", deb, name], capture_output=True, text=True,
                          check=True).stdout.strip()


def relations(deb, name):
    """The package names of a relation field: "a (>= 1), b | c" -> {"a", "b", "c"}."""
    text = field(deb, name)
    parts = [part for part in re.split(r"[,|]", text) if part.strip()]
    return {re.match(r"\s*([^\s(]+)", part).group(1) for part in parts}


def contents(deb):
    listing = subprocess.run(["dpkg-deb", "-c", deb], capture_output=True, text=True,
                             check=True).stdout
    return {line.split()[-1].lstrip(".") for line in listing.splitlines()}


def check_packages(main, worker, backend):
    problems = []

    def expect(condition, message):
        if not condition:
            problems.append(message)

    version = field(main, "Version")
    expect(field(main, "Package") == "colltest", f"{main}: Package {field(main, 'Package')}")
    expect(field(worker, "Package") == f"colltest-worker-{backend}",
           f"{worker}: Package {field(worker, 'Package')}")
    expect(field(worker, "Version") == version, "the two packages' versions differ")
    # colltestd and its workers speak a private protocol: the same version, pinned both ways.
    expect(f"colltest-worker (= {version})" in field(main, "Depends"),
           f"colltest Depends: {field(main, 'Depends')!r} lacks colltest-worker (= {version})")
    expect(f"colltest-worker (= {version})" in field(worker, "Provides"),
           f"worker Provides: {field(worker, 'Provides')!r}")
    for name in ("Conflicts", "Replaces"):
        expect("colltest-worker" in relations(worker, name),
               f"worker {name}: {field(worker, name)!r}")
    # dpkg-shlibdeps named the libraries' packages.
    for library in ("libgrpc++", "libprotobuf", "libsqlite3", "libcivetweb", "libc6"):
        expect(any(package.startswith(library) for package in relations(main, "Depends")),
               f"colltest Depends: no {library} package in {field(main, 'Depends')!r}")
    expect(any(package.startswith("libgrpc++") for package in relations(worker, "Depends")),
           f"worker Depends: no libgrpc++ package in {field(worker, 'Depends')!r}")
    for deb in (main, worker):
        expect(field(deb, "Maintainer") and field(deb, "Section") and field(deb, "Description"),
               f"{deb}: Maintainer, Section or Description empty")

    main_files, worker_files = contents(main), contents(worker)
    for path in ("/usr/bin/colltestd", "/usr/bin/colltest", "/usr/lib/colltest/",
                 "/usr/share/man/man1/colltest.1", "/usr/share/doc/colltest/README.md"):
        expect(any(f.startswith(path) for f in main_files), f"colltest package lacks {path}")
    expect("/usr/bin/colltest-worker" in worker_files,
           "worker package lacks /usr/bin/colltest-worker")
    expect("/usr/bin/colltest-worker" not in main_files, "colltest package holds the worker")
    expect(not any(f.startswith("/usr/bin/colltestd") for f in worker_files),
           "worker package holds colltestd")
    return problems


def check_dev_package(dev_debs, main, worker):
    """colltest-dev: the plugin ABI's header and CMake package, for every architecture."""
    if len(dev_debs) != 1:
        return [f"expected one colltest-dev .deb, got {dev_debs}"]
    dev = dev_debs[0]
    problems = []
    if field(dev, "Architecture") != "all":
        problems.append(f"colltest-dev Architecture: {field(dev, 'Architecture')!r}, not all")
    if field(dev, "Version") != field(main, "Version"):
        problems.append("colltest-dev's version differs from colltest's")
    files = contents(dev)
    for path in ("/usr/include/colltest/kernel_plugin.h",
                 "/usr/share/cmake/colltest/colltestConfig.cmake",
                 "/usr/share/cmake/colltest/colltestConfigVersion.cmake"):
        if path not in files:
            problems.append(f"colltest-dev lacks {path}")
    if any(f.startswith("/usr/include/") for f in contents(main) | contents(worker)):
        problems.append("a header is in colltest or the worker package")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--cpack", default="cpack")
    parser.add_argument("--gpu", default="off", help="COLLTEST_GPU of the build")
    args = parser.parse_args()
    backend = "cpu" if args.gpu == "off" else args.gpu

    start = time.monotonic()
    work_dir = tempfile.mkdtemp(prefix="colltest-package-")
    try:
        out = os.path.join(work_dir, "debs")
        cpack = subprocess.run([args.cpack, "-G", "DEB", "-B", out], cwd=args.build_dir,
                               capture_output=True, text=True)
        if cpack.returncode != 0:
            print(f"FAIL: cpack exited {cpack.returncode}:\n{cpack.stdout}\n{cpack.stderr}")
            return 1
        main_debs = glob.glob(os.path.join(out, "colltest_*.deb"))
        worker_debs = glob.glob(os.path.join(out, f"colltest-worker-{backend}_*.deb"))
        if len(main_debs) != 1 or len(worker_debs) != 1:
            print("FAIL: expected one colltest and one colltest-worker-{backend} .deb, got",
                  sorted(os.path.basename(d) for d in glob.glob(os.path.join(out, "*.deb"))))
            return 1
        problems = check_packages(main_debs[0], worker_debs[0], backend)
        problems += check_dev_package(glob.glob(os.path.join(out, "colltest-dev_*.deb")),
                                      main_debs[0], worker_debs[0])
        root = os.path.join(work_dir, "root")
        for deb in main_debs + worker_debs:
            subprocess.run(["dpkg-deb", "-x", deb, root], check=True)
        if not installed_tree.verify(os.path.join(root, "usr"), args.source_dir, work_dir,
                                     args.build_dir, problems):
            return 1
        sizes = ", ".join(f"{os.path.basename(d)} {os.path.getsize(d) / 2**20:.1f} MiB"
                          for d in main_debs + worker_debs)
        print(f"package_test: {sizes}; extracted, they run a sweep "
              f"({time.monotonic() - start:.1f} s)")
        return 0
    except (AssertionError, subprocess.CalledProcessError) as error:
        print("FAIL:", error)
        return 1
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
