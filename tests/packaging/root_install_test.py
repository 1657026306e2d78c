#!/usr/bin/python3
"""The .debs as an operator installs them, into a clean Debian 12 root: mmdebstrap (variant apt,
mode root) of bookworm from this machine's own apt sources, then, in a customize hook (mmdebstrap
mounts /proc, /sys and /dev for its hooks and unmounts them itself), with apt inside the root:

  1. colltest-client alone: `apt-get install --simulate` installs no worker, no colltest and no
     systemd;
  2. every package with `apt-get install ./*.deb`, dependencies from the mirror;
  3. the system user colltest exists; /etc/colltest/colltestd.toml is a conffile of colltest;
     /etc/colltest/tokens (the unit's credential) holds one admin token, root's alone;
     `systemctl --root` says colltestd.service is disabled;
  4. the root's /usr/bin/colltestd, run as colltest with the shipped config and token file, the
     cpu backend and 2 ranks on 127.0.0.1, and the root's /usr/bin/colltest sweep against it with
     the admin's token.

Needs root and the machine's apt mirror (label packaging_root). The root is a temporary directory,
removed at the end."""

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import time

import debs

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from colltestd_process import Colltestd  # noqa: E402

SUITE = "bookworm"
DEBS_IN_ROOT = "/tmp/colltest-debs"
UNIT = "colltestd.service"
CONFFILE = "/etc/colltest/colltestd.toml"
TOKENS = "/etc/colltest/tokens"
CHROOT = shutil.which("chroot") or "/usr/sbin/chroot"


def apt_sources():
    """The files of this machine's apt sources that apt reads (sources.list with an entry,
    sources.list.d/*.list and *.sources): mmdebstrap pastes each into the root's sources.list."""
    found = []
    main_list = "/etc/apt/sources.list"
    if os.path.isfile(main_list) and re.search(r"^\s*deb\s", open(main_list).read(), re.M):
        found.append(main_list)
    for pattern in ("*.list", "*.sources"):
        found += sorted(glob.glob(os.path.join("/etc/apt/sources.list.d", pattern)))
    return found


def in_root(root, *argv, check=True, **kwargs):
    """argv run inside the root (chroot), output captured."""
    result = subprocess.run([CHROOT, root, *argv], capture_output=True, text=True,
                            env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8",
                                 "DEBIAN_FRONTEND": "noninteractive"}, **kwargs)
    assert not check or result.returncode == 0, (
        f"in the root: {' '.join(argv)} exited {result.returncode}:\n"
        f"{result.stdout}\n{result.stderr}")
    return result


def check_client_alone(root, client_deb):
    """colltest-client pulls neither a worker nor the daemon nor systemd."""
    result = in_root(root, "apt-get", "install", "--simulate", "-q", client_deb)
    installed = re.findall(r"^Inst (\S+)", result.stdout, re.M)
    assert "colltest-client" in installed, f"simulated install lacks colltest-client: {installed}"
    pulled = [p for p in installed
              if p.startswith("colltest-worker") or p in ("colltest", "systemd")]
    assert not pulled, f"colltest-client alone would install {pulled}"


def check_installed(root):
    """The user, the conffile and the disabled unit."""
    user = in_root(root, "getent", "passwd", "colltest", check=False)
    assert user.returncode == 0, "no user colltest in the root after the install"
    fields = user.stdout.strip().split(":")
    assert fields[5] == "/var/lib/colltest" and fields[6] == "/usr/sbin/nologin", (
        f"user colltest: {user.stdout.strip()}")
    conffiles = in_root(root, "dpkg-query", "-W", "-f=${Conffiles}", "colltest").stdout
    assert re.search(rf"^\s*{re.escape(CONFFILE)}\s+[0-9a-f]{{32}}\s*$", conffiles, re.M), (
        f"{CONFFILE} is no conffile of colltest: {conffiles!r}")
    # The token file the unit loads (LoadCredential=), written by the postinst: root's alone.
    tokens = os.stat(root + TOKENS)
    assert tokens.st_uid == 0 and (tokens.st_mode & 0o777) == 0o600, (
        f"{TOKENS}: uid {tokens.st_uid} mode {oct(tokens.st_mode & 0o777)}, want root 0600")
    with open(root + TOKENS, encoding="utf-8") as f:
        assert re.fullmatch(r"admin admin [0-9a-f]{48}\n", f.read()), f"{TOKENS}: not one admin"
    enabled = subprocess.run(["systemctl", f"--root={root}", "is-enabled", UNIT],
                             capture_output=True, text=True)
    assert enabled.stdout.strip() == "disabled", (
        f"systemctl is-enabled {UNIT}: {enabled.stdout.strip()!r} {enabled.stderr.strip()}")


def check_sweep(root, work_dir):
    """The root's colltestd as user colltest (its shipped config, cpu backend) serves a sweep of
    the root's colltest."""
    ids = in_root(root, "getent", "passwd", "colltest").stdout.split(":")
    userspec = f"--userspec={ids[2]}:{ids[3]}"
    # What systemd's StateDirectory= and RuntimeDirectory= would make.
    for path in ("/var/lib/colltest", "/run/colltest"):
        in_root(root, "install", "-d", "-m", "0700", "-o", ids[2], "-g", ids[3], path)
    # The credential as systemd hands it to the service, and the admin's token for the client.
    with open(root + TOKENS, encoding="utf-8") as f:
        admin_token = f.read().split()[2]
    for path, text in (("/run/colltest/tokens", None), ("/run/colltest/admin", admin_token)):
        if text is None:
            in_root(root, "install", "-m", "0400", "-o", ids[2], "-g", ids[3], TOKENS, path)
        else:
            in_root(root, "install", "-m", "0400", "-o", ids[2], "-g", ids[3], "/dev/stdin", path,
                    input=text + "\n")
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    with Colltestd(CHROOT, [userspec, root, "/usr/bin/colltestd", "--config", CONFFILE,
                              "--backend", "cpu", "--cpu-ranks", "2",
                              "--listen", "127.0.0.1:0", "--state-dir", "/var/lib/colltest",
                              "--runtime-dir", "/run/colltest",
                              "--token-file", "/run/colltest/tokens"],
                   env=env, cwd="/", log_path=os.path.join(work_dir, "colltestd.log")) as daemon:
        sweep = subprocess.run(
            [CHROOT, userspec, root, "/usr/bin/colltest", "--server", daemon.address,
             "--token-file", "/run/colltest/admin",
             "sweep", "--m", "1,8", "--hidden", "1024", "--variants", "lamport"],
            capture_output=True, text=True, env=env, cwd="/", timeout=120)
        assert sweep.returncode == 0, (
            f"colltest sweep exited {sweep.returncode}:\n{sweep.stdout}\n{sweep.stderr}")


def hook(root, client_deb, work_dir):
    """The customize hook: everything that runs on the root. Raises AssertionError on a failed
    check, returns 0 otherwise."""
    check_client_alone(root, client_deb)
    all_debs = sorted(glob.glob(os.path.join(root + DEBS_IN_ROOT, "*.deb")))
    in_root(root, "apt-get", "install", "-y", "-q", "--no-install-recommends",
            *(os.path.join(DEBS_IN_ROOT, os.path.basename(d)) for d in all_debs))
    check_installed(root)
    check_sweep(root, work_dir)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build-dir")
    parser.add_argument("--cpack", default="cpack")
    parser.add_argument("--debs-dir", help="the .debs already made (test packaging.debs)")
    parser.add_argument("--hook-root", help=argparse.SUPPRESS)  # run by mmdebstrap
    parser.add_argument("--client-deb", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.hook_root:
        return debs.in_work_dir("colltest-root-hook-",
                                lambda work_dir: hook(args.hook_root, args.client_deb, work_dir))

    start = time.monotonic()
    if os.geteuid() != 0:
        print("FAIL: needs root (mmdebstrap --mode=root, chroot)")
        return 1
    sources = apt_sources()
    if not sources:
        print("FAIL: this machine has no apt sources to build the root from")
        return 1

    # mmdebstrap unmounts what it mounted for its hooks, also when one fails: when the work
    # directory is removed, nothing is mounted under the root.
    def run(work_dir):
        packages = debs.make(args.cpack, args.build_dir, os.path.join(work_dir, "debs"),
                             args.debs_dir)
        made = time.monotonic()
        wanted = [p for p in packages if p != "colltest-dev"]
        client_deb = os.path.join(DEBS_IN_ROOT, os.path.basename(packages["colltest-client"]))
        root = os.path.join(work_dir, "root")
        result = subprocess.run(
            ["mmdebstrap", "--mode=root", "--variant=apt", "--quiet",
             f"--customize-hook=mkdir -p \"$1{DEBS_IN_ROOT}\"",
             "--customize-hook=copy-in " + " ".join(packages[p] for p in wanted) + " "
             + DEBS_IN_ROOT,
             f"--customize-hook={sys.executable} {os.path.abspath(__file__)} "
             f"--hook-root \"$1\" --client-deb {client_deb}",
             SUITE, root, *sources],
            capture_output=True, text=True, timeout=600)
        if result.returncode != 0:
            print(f"FAIL: mmdebstrap exited {result.returncode}:\n{result.stdout}\n"
                  f"{result.stderr[-6000:]}")
            return 1
        print(f"root_install_test: {', '.join(sorted(wanted))} installed by apt into a clean "
              f"{SUITE} root: user, conffile, disabled unit, a sweep as user colltest "
              f"(cpack {made - start:.1f} s, all {time.monotonic() - start:.1f} s)")
        return 0

    return debs.in_work_dir("colltest-root-", run)


if __name__ == "__main__":
    sys.exit(main())
