"""What the Python client's tests share: a colltestd on the cpu backend started for a test class,
the client's command line run as a process, a closed port, and TLS material made with openssl."""

import os
import shutil
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from colltestd_process import Colltestd  # noqa: E402


def start_colltestd(test_class, colltestd, extra_args=(), ranks=4):
    """Starts colltestd (cpu backend, `ranks` ranks, fault injection allowed) in a temporary
    directory; its stop (SIGTERM, which must exit 0) and the directory's removal are class
    cleanups, which run also when a test or the start fails. Returns the Colltestd."""
    work_dir = tempfile.mkdtemp(prefix="colltest-python-")
    test_class.addClassCleanup(shutil.rmtree, work_dir, ignore_errors=True)
    daemon = Colltestd(
        colltestd,
        ["--backend", "cpu", "--cpu-ranks", str(ranks), "--listen", "127.0.0.1:0",
         "--allow-fault-injection", "--runtime-dir", work_dir, *extra_args],
        state_dir=os.path.join(work_dir, "state"), cwd=work_dir,
        log_path=os.path.join(work_dir, "colltestd.log"))
    test_class.addClassCleanup(daemon.stop)
    return daemon


def run_cli(*args, env=None, python=None, timeout=120):
    """`python3 -m colltest_client ARGS` as a process: its CompletedProcess (text)."""
    command = [python or sys.executable, "-m", "colltest_client", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)


def exit_message(result):
    return (f"exit {result.returncode}\nstdout:\n{result.stdout}\n"
            f"stderr:\n{result.stderr}")


def closed_port():
    """A loopback port nobody listens on (one the OS just handed out and took back)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def make_ca(work_dir):
    """A CA for the tests: (certificate, key) in work_dir."""
    cert, key = os.path.join(work_dir, "ca.crt"), os.path.join(work_dir, "ca.key")
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-days", "1", "-subj", "/CN=colltest test CA", "-keyout", key, "-out", cert)
    return cert, key


def issue(work_dir, ca, name, common_name, san=None):
    """A certificate signed by `ca` for common_name (with subjectAltName `san`): (cert, key)."""
    cert, key = os.path.join(work_dir, f"{name}.crt"), os.path.join(work_dir, f"{name}.key")
    csr = os.path.join(work_dir, f"{name}.csr")
    openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-subj", f"/CN={common_name}", "-keyout", key, "-out", csr)
    extensions = os.path.join(work_dir, f"{name}.ext")
    with open(extensions, "w") as f:
        f.write(f"subjectAltName={san}\n" if san else "basicConstraints=CA:FALSE\n")
    openssl("x509", "-req", "-in", csr, "-CA", ca[0], "-CAkey", ca[1], "-CAcreateserial",
            "-days", "1", "-extfile", extensions, "-out", cert)
    return cert, key
