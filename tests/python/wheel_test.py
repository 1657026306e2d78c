"""The wheel of the Python client: built by `python3 -m build --wheel --no-isolation` from a copy of
the build tree's python/ directory (pyproject.toml and the package with its generated stubs),
installed into a fresh venv that sees the system's grpcio and protobuf (no package index is
asked), and run from there, with nothing of the build tree on the path, against a real colltestd:
`colltest-client` and `python -m colltest_client`.

    wheel_test.py --python-dir BUILD/python --sources python/colltest_client --colltestd PATH"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import zipfile

from support import exit_message, start_colltestd

ARGS = None
GENERATED = {"colltest_pb2.py", "colltest_pb2.pyi", "colltest_pb2_grpc.py", "_version.py"}


def check_run(command, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, **kwargs)
    if result.returncode != 0:
        raise AssertionError(f"{command}: {exit_message(result)}")
    return result


class WheelTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="colltest-python-wheel-")
        cls.addClassCleanup(shutil.rmtree, cls.dir, ignore_errors=True)
        source = os.path.join(cls.dir, "src")
        os.mkdir(source)
        shutil.copy(os.path.join(ARGS.python_dir, "pyproject.toml"), source)
        shutil.copytree(os.path.join(ARGS.python_dir, "colltest_client"),
                        os.path.join(source, "colltest_client"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        dist = os.path.join(cls.dir, "dist")
        check_run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", dist,
                   source])
        (cls.wheel,) = [os.path.join(dist, f) for f in os.listdir(dist) if f.endswith(".whl")]
        cls.venv = os.path.join(cls.dir, "venv")
        check_run([sys.executable, "-m", "venv", "--system-site-packages", cls.venv])
        cls.env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        cls.env["PIP_NO_INDEX"] = "1"
        check_run([os.path.join(cls.venv, "bin", "python"), "-m", "pip", "install",
                   "--no-index", cls.wheel], env=cls.env, cwd=cls.dir)
        cls.address = start_colltestd(cls, ARGS.colltestd, ranks=2).address

    def test_the_wheel_holds_the_package_and_its_stubs(self):
        with zipfile.ZipFile(self.wheel) as wheel:
            names = set(wheel.namelist())
            metadata = wheel.read(next(n for n in names if n.endswith("METADATA"))).decode()
        package = {n.split("/", 1)[1] for n in names if n.startswith("colltest_client/")}
        sources = {f for f in os.listdir(ARGS.sources)
                   if f.endswith(".py") or f == "py.typed"}
        self.assertEqual(package, sources | GENERATED)
        self.assertIn("Requires-Dist: grpcio", metadata)
        self.assertIn("Requires-Dist: protobuf", metadata)

    def test_the_installed_client_runs_a_sweep(self):
        python = os.path.join(self.venv, "bin", "python")
        where = check_run([python, "-c", "import colltest_client; print(colltest_client.__file__)"],
                          env=self.env, cwd=self.dir).stdout.strip()
        self.assertTrue(where.startswith(self.venv), where)
        sweep = ["sweep", "--world", "2", "--m", "1:4:x4", "--hidden", "256", "--variants",
                 "one_stage", "--modes", "eager", "-w", "1", "-n", "2", "--format", "json"]
        for command in ([os.path.join(self.venv, "bin", "colltest-client")],
                        [python, "-m", "colltest_client"]):
            result = check_run([*command, "--server", self.address, *sweep], env=self.env,
                               cwd=self.dir)
            doc = json.loads(result.stdout)
            self.assertEqual([(c["m"], c["status"]) for c in doc["cases"]], [(1, "OK"), (4, "OK")])


def main():
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--python-dir", required=True, help="the build tree's python/")
    parser.add_argument("--sources", required=True, help="python/colltest_client of the sources")
    parser.add_argument("--colltestd", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
