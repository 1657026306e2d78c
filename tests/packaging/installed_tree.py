"""Checks an installed colltest tree (a --prefix, or the usr/ of the extracted .debs): the files
it must hold, then a colltestd started from it that serves TLS and runs a sweep with its own
workers and its own TLS shim, nothing from the build tree."""

import glob
import gzip
import os
import ssl
import subprocess
import sys
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from colltestd_process import Colltestd  # noqa: E402

PROGRAMS = ["colltestd", "colltest", "colltest-worker"]
SHIM = "lib/colltest/libcolltest_civetweb_ssl.so"


def check_files(root, source_dir, sysconf_dir=None):
    """The relative paths under root that are missing or wrong; [] when the tree is complete.
    sysconf_dir: where colltestd.toml's etc/ is, root/etc unless given (the packages' /etc).
    Man pages may be gzipped (the packages')."""
    problems = []

    def need(relative, what=None, base=root):
        path = os.path.join(base, relative)
        if not os.path.isfile(path) and os.path.isfile(path + ".gz") and relative.startswith(
                "share/man/"):
            path, relative = path + ".gz", relative + ".gz"
        if not os.path.isfile(path) or os.path.getsize(path) == 0:
            problems.append(f"{relative}: missing or empty")
        elif what is not None:
            opener = gzip.open if path.endswith(".gz") else open
            with opener(path, "rt", errors="replace") as f:
                if what not in f.read():
                    problems.append(f"{relative}: does not mention {what!r}")

    for program in PROGRAMS:
        need(f"bin/{program}")
        need(f"share/man/man1/{program}.1", f".TH {program.upper()} \"1\"")
        need(f"share/bash-completion/completions/{program}", "complete -F")
    need(SHIM)
    # colltest.1 holds every subcommand's flags, not only the global ones.
    need("share/man/man1/colltest.1", "colltest baseline set")
    need("share/man/man1/colltest.1", "\\-\\-lamport\\-min\\-bytes")
    for table in glob.glob(os.path.join(source_dir, "tune", "*")):
        need(f"share/colltest/tune/{os.path.basename(table)}")
    # The Python client package (python/): its own modules and the generated stubs, which import
    # each other inside the package, and its example.
    package = "lib/python3/dist-packages/colltest_client"
    for module in glob.glob(os.path.join(source_dir, "python", "colltest_client", "*.py")):
        need(f"{package}/{os.path.basename(module)}")
    need(f"{package}/colltest_pb2.py", "'colltest_client.colltest_pb2'")
    need(f"{package}/colltest_pb2.pyi")
    need(f"{package}/colltest_pb2_grpc.py", "from . import colltest_pb2 as")
    need(f"{package}/_version.py", "__version__")
    need("share/colltest/examples/sweep_table.py", "colltest_client")
    need("share/colltest/schema/colltest-output.schema.json", '"colltest.run"')
    need("share/doc/colltest/README.md")
    # The config the unit's --config names, every line commented out.
    need("colltest/colltestd.toml", "# listen = ",
         base=sysconf_dir or os.path.join(root, "etc"))
    need("lib/systemd/system/colltestd.service", "--config /etc/colltest/colltestd.toml")
    need("lib/sysusers.d/colltest.conf", "u colltest")
    for doc in glob.glob(os.path.join(source_dir, "docs", "*.md")):
        need(f"share/doc/colltest/docs/{os.path.basename(doc)}")
    return problems


def clean_environment():
    """The caller's environment without what could lead the programs to the build tree."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("LD_LIBRARY_PATH", "LD_PRELOAD") and not key.startswith("COLLTEST_")}
    env["PATH"] = "/usr/bin:/bin"
    return env


def make_certificate(work_dir):
    """A self-signed certificate for localhost: (certificate, key)."""
    cert, key = os.path.join(work_dir, "server.crt"), os.path.join(work_dir, "server.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                    "-keyout", key, "-out", cert], check=True, capture_output=True)
    return cert, key


def children(pid):
    """The pids whose parent is pid."""
    found = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            fields = open(stat).read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.split("/")[2]))
    return found


def mapped_files(pid):
    paths = set()
    for line in open(f"/proc/{pid}/maps"):
        parts = line.split(maxsplit=5)
        if len(parts) == 6 and parts[5].startswith("/"):
            paths.add(parts[5].strip())
    return paths


def run_sweep(root, work_dir, forbidden_dir):
    """Starts root/bin/colltestd (cpu backend, 2 ranks, gRPC and HTTP over TLS), runs a sweep with
    root/bin/colltest, and stops colltestd with SIGTERM. Raises AssertionError on any failure;
    fails when colltestd or its workers use a file under forbidden_dir (the build tree)."""
    root, forbidden_dir = os.path.realpath(root), os.path.realpath(forbidden_dir)
    cert, key = make_certificate(work_dir)
    env = clean_environment()
    with Colltestd(
            os.path.join(root, "bin", "colltestd"),
            ["--backend", "cpu", "--cpu-ranks", "2", "--listen", "127.0.0.1:0",
             "--http", "127.0.0.1:0", "--tls-cert", cert, "--tls-key", key,
             "--runtime-dir", work_dir],
            state_dir=os.path.join(work_dir, "state"), env=env, cwd=work_dir,
            log_path=os.path.join(work_dir, "colltestd.log")) as daemon:
        address, http = daemon.address, daemon.http_address
        assert http, f"colltestd announced no http address: {daemon.log_tail()}"

        # The HTTP port under TLS works only with the shim, which must be the installed one.
        context = ssl.create_default_context(cafile=cert)
        with urllib.request.urlopen(f"https://{http}/healthz", context=context, timeout=10) as r:
            assert r.status == 200, f"/healthz answered {r.status}"
        shims = [path for path in mapped_files(daemon.pid) if path.endswith(os.path.basename(SHIM))]
        assert shims == [os.path.join(root, SHIM)], f"colltestd loaded the TLS shim from {shims}"

        sweep = subprocess.run(
            [os.path.join(root, "bin", "colltest"), "--server", address, "--tls-ca", cert,
             "--tls-server-name", "localhost", "sweep", "--m", "1,8", "--n", "1024",
             "--variants", "lamport"],
            capture_output=True, text=True, cwd=work_dir, env=env, timeout=120)
        assert sweep.returncode == 0, (
            f"colltest sweep exited {sweep.returncode}:\n{sweep.stdout}\n{sweep.stderr}")

        # The workers (idle, still running) are the installed colltest-worker.
        workers = children(daemon.pid)
        assert workers, "colltestd has no worker processes after the sweep"
        for pid in [daemon.pid] + workers:
            try:
                exe, maps = os.readlink(f"/proc/{pid}/exe"), mapped_files(pid)
            except OSError:  # a child that has just exited
                continue
            assert exe.startswith(root + "/"), f"process {pid} runs {exe}, not from {root}"
            used = [p for p in maps if p.startswith(forbidden_dir + "/")]
            assert not used, f"process {pid} ({exe}) maps files of the build tree: {used}"
    # Leaving the block stopped colltestd with SIGTERM and failed unless it exited 0 in 30 s.
    return sweep.stdout


def verify(root, source_dir, work_dir, forbidden_dir, problems=(), sysconf_dir=None):
    """check_files on `root` plus `problems` found before; prints each as FAIL and returns False
    when there is one, else runs run_sweep from `root` and returns True."""
    problems = list(problems) + check_files(root, source_dir, sysconf_dir)
    for problem in problems:
        print("FAIL:", problem)
    if problems:
        return False
    run_sweep(root, work_dir, forbidden_dir)
    return True
