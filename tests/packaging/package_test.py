#!/usr/bin/python3
"""`cpack -G DEB` into a temporary directory: colltest (the service), colltest-client (the CLI and
the Python client), a colltest-worker-<backend> package and colltest-dev (the kernel plugin ABI,
Architecture: all), with the relations that let apt install them (colltest Depends on the
virtual colltest-worker of its version, on systemd-sysusers and on the libraries dpkg-shlibdeps
found, and only Recommends colltest-client; colltest-client depends on no worker and no daemon;
the worker Provides, Conflicts with and Replaces colltest-worker), each with its own files, a
copyright file and a changelog; colltest's conffile and maintainer scripts; the three packages
extracted into one root make a tree whose colltestd runs a sweep."""

import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile
import time

import debs
import installed_tree

CONFFILE = "/etc/colltest/colltestd.toml"


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


def control_files(deb, work_dir):
    """{name: (mode, text)} of the control archive's files."""
    out = tempfile.mkdtemp(dir=work_dir)
    subprocess.run(["dpkg-deb", "-e", deb, out], check=True)
    files = {}
    for name in os.listdir(out):
        path = os.path.join(out, name)
        files[name] = (os.stat(path).st_mode & 0o777, open(path, errors="replace").read())
    return files


def check_packages(packages, backend):
    main, client = packages["colltest"], packages["colltest-client"]
    worker = packages[f"colltest-worker-{backend}"]
    problems = []

    def expect(condition, message):
        if not condition:
            problems.append(message)

    version = field(main, "Version")
    for name, deb in packages.items():
        expect(field(deb, "Package") == name, f"{deb}: Package {field(deb, 'Package')}")
        expect(field(deb, "Version") == version, f"{name}'s version differs from colltest's")
        expect(field(deb, "Source") == "colltest", f"{name}: Source {field(deb, 'Source')!r}")
        maintainer = field(deb, "Maintainer")
        expect(re.fullmatch(r"[^<>]+ <[^@<>\s]+@[^@<>\s]+\.[a-z]+>", maintainer)
               and "localhost" not in maintainer, f"{name}: Maintainer {maintainer!r}")
        expect(field(deb, "Section") and field(deb, "Description"),
               f"{name}: Section or Description empty")
    # colltestd and its workers speak a private protocol: the same version, pinned both ways.
    expect(f"colltest-worker (= {version})" in field(main, "Depends"),
           f"colltest Depends: {field(main, 'Depends')!r} lacks colltest-worker (= {version})")
    expect(f"colltest-worker (= {version})" in field(worker, "Provides"),
           f"worker Provides: {field(worker, 'Provides')!r}")
    for name in ("Conflicts", "Replaces"):
        expect("colltest-worker" in relations(worker, name),
               f"worker {name}: {field(worker, name)!r}")
    # The postinst runs systemd-sysusers.
    expect("systemd-sysusers" in relations(main, "Depends"),
           f"colltest Depends: {field(main, 'Depends')!r} lacks systemd-sysusers")
    # colltestd never runs the CLI: a recommendation, not a dependency.
    expect("colltest-client" not in relations(main, "Depends")
           and "colltest-client" in relations(main, "Recommends"),
           f"colltest: Depends {field(main, 'Depends')!r}, Recommends "
           f"{field(main, 'Recommends')!r}: colltest-client should be recommended only")
    # A CI runner installs the CLI alone: no worker, no daemon, not even recommended.
    client_relations = set()
    for name in ("Depends", "Pre-Depends", "Recommends"):
        client_relations |= relations(client, name)
    expect(not {p for p in client_relations
                if p.startswith("colltest-worker") or p == "colltest" or p == "systemd"},
           f"colltest-client relations pull a worker, colltest or systemd: {client_relations}")
    expect({"python3-grpcio", "python3-protobuf"} <= relations(client, "Recommends"),
           f"colltest-client Recommends: {field(client, 'Recommends')!r}")
    # dpkg-shlibdeps named the libraries' packages.
    for library in ("libgrpc++", "libprotobuf", "libsqlite3", "libcivetweb", "libc6"):
        expect(any(package.startswith(library) for package in relations(main, "Depends")),
               f"colltest Depends: no {library} package in {field(main, 'Depends')!r}")
    for name, deb in (("worker", worker), ("colltest-client", client)):
        expect(any(package.startswith("libgrpc++") for package in relations(deb, "Depends")),
               f"{name} Depends: no libgrpc++ package in {field(deb, 'Depends')!r}")

    files = {name: contents(deb) for name, deb in packages.items()}
    main_files, client_files = files["colltest"], files["colltest-client"]
    worker_files = files[f"colltest-worker-{backend}"]
    for path in ("/usr/bin/colltestd", "/usr/lib/colltest/", "/usr/share/man/man1/colltestd.1.gz",
                 "/usr/share/doc/colltest/README.md", CONFFILE,
                 "/usr/lib/systemd/system/colltestd.service", "/usr/lib/sysusers.d/colltest.conf"):
        expect(any(f.startswith(path) for f in main_files), f"colltest package lacks {path}")
    for path in ("/usr/bin/colltest", "/usr/share/man/man1/colltest.1.gz",
                 "/usr/lib/python3/dist-packages/colltest_client/__init__.py",
                 "/usr/share/colltest/schema/colltest-output.schema.json"):
        expect(path in client_files, f"colltest-client package lacks {path}")
    expect("/usr/bin/colltest-worker" in worker_files,
           "worker package lacks /usr/bin/colltest-worker")
    for name, holds in files.items():
        others = [f for f in holds if not f.endswith("/")
                  and any(f in files[o] for o in files if o != name)]
        expect(not others, f"{name} shares files with another package: {others}")
        # Debian's conventions: a copyright file and a changelog in every package, compressed
        # man pages, nothing under /usr/etc.
        for doc in ("copyright", "changelog.gz"):
            expect(f"/usr/share/doc/{name}/{doc}" in holds, f"{name} lacks /usr/share/doc/{name}/"
                   f"{doc}")
        expect(not [f for f in holds if f.startswith("/usr/share/man/") and not f.endswith("/")
                    and not f.endswith(".gz")], f"{name} has uncompressed man pages")
        expect(not [f for f in holds if f.startswith("/usr/etc")], f"{name} installs /usr/etc")
    expect("/usr/bin/colltest" not in main_files and "/usr/bin/colltestd" not in client_files,
           "colltest holds the CLI, or colltest-client the daemon")
    return problems


def check_control(packages, work_dir):
    """colltest's conffiles and maintainer scripts; no other package has an /etc file or a
    maintainer script."""
    problems = []
    for name, deb in packages.items():
        control = control_files(deb, work_dir)
        etc_files = sorted(f for f in contents(deb)
                           if f.startswith("/etc/") and not f.endswith("/"))
        conffiles = sorted(control.get("conffiles", (0, ""))[1].split())
        if etc_files != conffiles:
            problems.append(f"{name}: files under /etc {etc_files} but conffiles {conffiles}")
        scripts = {s for s in ("preinst", "postinst", "prerm", "postrm") if s in control}
        if name != "colltest":
            if scripts:
                problems.append(f"{name} has maintainer scripts {sorted(scripts)}")
            continue
        if conffiles != [CONFFILE]:
            problems.append(f"colltest conffiles: {conffiles}, expected [{CONFFILE}]")
        # What each script must do (deploy/debian/colltest/): the user, the unit registered
        # without enabling it, a restart on upgrade only where it ran, a stop on remove, the
        # purge.
        needed = {
            "postinst": ["systemd-sysusers", "colltest.conf", "deb-systemd-helper update-state",
                         "deb-systemd-helper debian-installed", "/run/systemd/system",
                         "deb-systemd-invoke restart"],
            "prerm": ["deb-systemd-invoke stop", "/run/systemd/system"],
            "postrm": ["deb-systemd-helper purge", "deb-systemd-helper mask"],
        }
        for script, words in needed.items():
            if script not in control:
                problems.append(f"colltest lacks the {script}")
                continue
            mode, text = control[script]
            if mode != 0o755 or not text.startswith("#!/bin/sh"):
                problems.append(f"colltest {script}: mode {mode:o} or no #!/bin/sh")
            problems += [f"colltest {script} lacks {w!r}" for w in words if w not in text]
            syntax = subprocess.run(["sh", "-n"], input=text, capture_output=True, text=True)
            if syntax.returncode != 0:
                problems.append(f"colltest {script}: sh -n: {syntax.stderr.strip()}")
        # A first install leaves the unit disabled: enabling happens only under was-enabled.
        postinst = control.get("postinst", (0, ""))[1]
        for line in postinst.splitlines():
            if line.lstrip().startswith("#"):
                continue
            if "deb-systemd-helper enable" in line or "systemctl enable" in line:
                before = postinst[:postinst.index(line)]
                if "was-enabled" not in before.splitlines()[-1]:
                    problems.append(f"colltest postinst enables the unit unconditionally: {line}")
    return problems


def check_dev_package(packages):
    """colltest-dev: the plugin ABI's header and CMake package, for every architecture."""
    dev = packages["colltest-dev"]
    problems = []
    if field(dev, "Architecture") != "all":
        problems.append(f"colltest-dev Architecture: {field(dev, 'Architecture')!r}, not all")
    files = contents(dev)
    for path in ("/usr/include/colltest/kernel_plugin.h",
                 "/usr/share/cmake/colltest/colltestConfig.cmake",
                 "/usr/share/cmake/colltest/colltestConfigVersion.cmake"):
        if path not in files:
            problems.append(f"colltest-dev lacks {path}")
    if any(f.startswith("/usr/include/") for name, deb in packages.items()
           if name != "colltest-dev" for f in contents(deb)):
        problems.append("a header is in a package other than colltest-dev")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--cpack", default="cpack")
    parser.add_argument("--debs-dir", help="the .debs already made (test packaging.debs)")
    parser.add_argument("--gpu", default="off", help="COLLTEST_GPU of the build")
    args = parser.parse_args()
    backend = "cpu" if args.gpu == "off" else args.gpu

    start = time.monotonic()

    def run(work_dir):
        packages = debs.make(args.cpack, args.build_dir, os.path.join(work_dir, "debs"),
                             args.debs_dir)
        expected = {"colltest", "colltest-client", f"colltest-worker-{backend}", "colltest-dev"}
        if set(packages) != expected:
            print(f"FAIL: expected the packages {sorted(expected)}, got {sorted(packages)}")
            return 1
        problems = check_packages(packages, backend)
        problems += check_control(packages, work_dir)
        problems += check_dev_package(packages)
        installed = [packages[p] for p in sorted(expected - {"colltest-dev"})]
        root = os.path.join(work_dir, "root")
        for deb in installed:
            subprocess.run(["dpkg-deb", "-x", deb, root], check=True)
        if not installed_tree.verify(os.path.join(root, "usr"), args.source_dir, work_dir,
                                     args.build_dir, problems,
                                     sysconf_dir=os.path.join(root, "etc")):
            return 1
        sizes = ", ".join(f"{os.path.basename(d)} {os.path.getsize(d) / 2**20:.1f} MiB"
                          for d in installed)
        print(f"package_test: {sizes}; extracted, they run a sweep "
              f"({time.monotonic() - start:.1f} s)")
        return 0

    return debs.in_work_dir("colltest-package-", run)


if __name__ == "__main__":
    sys.exit(main())
