"""`python3 -m colltest_client` and the API over TLS with tokens, against a real colltestd (cpu
backend): --tls-ca, --tls-server-name, --token-file (the header "authorization: Bearer TOKEN" from
a file holding just the token), and mutual TLS with --tls-cert/--tls-key whose certificate's CN is
an identity of the token file. A wrong token, a too-low role and a missing CA each give the
server's refusal as a ColltestError subclass and exit 3.

    tls_token_test.py --colltestd PATH   (colltest_client on PYTHONPATH)"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import unittest

import colltest_client as ct
from support import exit_message, issue, make_ca, run_cli, start_colltestd

ARGS = None
RUNNER_TOKEN = "3b8d2f6a0c4e9b1d7f5a3c8e2b6d0f4a"
VIEWER_TOKEN = "7f1c0e9a4b2d6f8e3a5c1b7d9e0f2a4c"
RUN = ["run", "--world", "2", "--m", "1", "--hidden", "256", "--variants", "one_stage",
       "--modes", "eager", "--warmup", "1", "--iters", "2", "--format", "json"]


def write(folder, name, text, mode=0o600):
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


class TlsCase(unittest.TestCase):
    extra = []

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="colltest-python-tls-")
        cls.addClassCleanup(shutil.rmtree, cls.dir, ignore_errors=True)
        cls.ca = make_ca(cls.dir)
        # The server's name is localhost only: an IP address needs --tls-server-name.
        cls.server_cert = issue(cls.dir, cls.ca, "server", "localhost", "DNS:localhost")
        # A cn: identity needs mutual TLS, which only MutualTlsTest's colltestd has.
        cn_line = "py-cert runner cn:py-cert\n" if cls.extra else ""
        tokens = write(cls.dir, "tokens", f"ci runner {RUNNER_TOKEN}\n"
                       f"dash viewer {VIEWER_TOKEN}\n{cn_line}")
        cls.runner_file = write(cls.dir, "runner.token", RUNNER_TOKEN + "\n")
        cls.viewer_file = write(cls.dir, "viewer.token", f"  {VIEWER_TOKEN}\n")
        cls.wrong_file = write(cls.dir, "wrong.token", "0123456789abcdef0123\n")
        daemon = start_colltestd(cls, ARGS.colltestd,
                                 ["--tls-cert", cls.server_cert[0], "--tls-key",
                                  cls.server_cert[1], "--token-file", tokens, *cls.extra],
                                 ranks=2)
        cls.address = daemon.address
        cls.tls = ["--server", cls.address, "--tls-ca", cls.ca[0], "--tls-server-name",
                   "localhost"]

    def assert_exit(self, result, code):
        self.assertEqual(result.returncode, code, exit_message(result))


class TokenTest(TlsCase):
    def test_a_runners_token_runs_and_owns_the_run(self):
        result = run_cli(*self.tls, "--token-file", self.runner_file, *RUN)
        self.assert_exit(result, 0)
        self.assertEqual(json.loads(result.stdout)["owner"], "ci")
        # The connection flags are taken after the command too, as colltest takes them.
        after = run_cli("devices", *self.tls, "--token-file", self.viewer_file)
        self.assert_exit(after, 0)
        self.assertIn("backend cpu, 2 devices", after.stdout)

    def test_a_wrong_token_is_unauthenticated(self):
        result = run_cli(*self.tls, "--token-file", self.wrong_file, "devices")
        self.assert_exit(result, 3)
        self.assertIn(f"{self.address}: UNAUTHENTICATED", result.stderr)
        with ct.connect(self.address, token="0123456789abcdef0123", tls_ca=self.ca[0],
                        server_name="localhost") as client:
            with self.assertRaises(ct.UnauthenticatedError) as raised:
                client.devices(timeout=30)
        self.assertEqual(raised.exception.code, "UNAUTHENTICATED")

    def test_a_viewer_may_not_run(self):
        result = run_cli(*self.tls, "--token-file", self.viewer_file, *RUN)
        self.assert_exit(result, 3)
        self.assertIn("PERMISSION_DENIED: Sweep needs role runner; dash has role viewer",
                      result.stderr)
        with ct.connect(self.address, token=VIEWER_TOKEN, tls_ca=self.ca[0],
                        server_name="localhost") as client:
            with self.assertRaises(ct.PermissionDeniedError) as raised:
                client.run(world_size=2, m=1, n=256, variants="one_stage")
        self.assertIn("needs role runner", raised.exception.message)

    def test_tls_needs_the_ca_and_the_servers_name(self):
        for flags in (["--server", self.address],
                      ["--server", self.address, "--tls-ca", self.ca[0]]):
            result = run_cli(*flags, "--token-file", self.runner_file, "devices", timeout=60)
            self.assert_exit(result, 3)
            self.assertIn("UNAVAILABLE", result.stderr)

    def test_token_file_must_hold_a_token(self):
        empty = write(self.dir, "empty.token", "\n")
        result = run_cli(*self.tls, "--token-file", empty, "devices")
        self.assert_exit(result, 3)
        self.assertIn(f"--token-file: '{empty}' is empty", result.stderr)


class MutualTlsTest(TlsCase):
    @classmethod
    def setUpClass(cls):
        folder = tempfile.mkdtemp(prefix="colltest-python-mtls-")
        cls.addClassCleanup(shutil.rmtree, folder, ignore_errors=True)
        cls.client_ca = make_ca(folder)
        cls.client_cert = issue(folder, cls.client_ca, "client", "py-cert")
        cls.extra = ["--tls-client-ca", cls.client_ca[0]]
        super().setUpClass()

    def test_the_certificates_name_is_the_identity(self):
        cert = ["--tls-cert", self.client_cert[0], "--tls-key", self.client_cert[1]]
        result = run_cli(*self.tls, *cert, *RUN)
        self.assert_exit(result, 0)
        self.assertEqual(json.loads(result.stdout)["owner"], "py-cert")
        without = run_cli(*self.tls, "--token-file", self.runner_file, "devices", timeout=60)
        self.assert_exit(without, 3)
        half = run_cli(*self.tls, "--tls-cert", self.client_cert[0], "devices")
        self.assert_exit(half, 3)
        self.assertIn("tls_cert and tls_key must be given together", half.stderr)


def main():
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--colltestd", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
