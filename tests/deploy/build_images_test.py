#!/usr/bin/python3
"""Checks scripts/build_images.sh without building an image (no podman, docker or network needed).

  build_images_test.py [--source-dir .]

A real build of the images takes far longer than CI allows (docs/deploy.md, "Building the
images"); this test checks what can go wrong before one starts:
- the script parses (bash -n) and, where shellcheck is installed, passes it;
- `build_images.sh --dry-run` prints the plan: the base made by mmdebstrap from the apt sources
  given (APT_SOURCES) and imported under the base's tag, then one build per image, each with
  --pull=never and that base, the CUDA one with the toolkit mounted read-only; nothing is pulled
  and no mirror address is written by the script;
- every deploy/docker/Dockerfile.* is built by the plan, and every FROM names either an earlier
  stage or the base the script makes (BASE_IMAGE's default, the tag the plan imports);
- the build stages install `setup.sh build` (no test tools), and that list holds the compilers
  and libraries but none of the tests' tools (browser, systemd, JSON Schema, promtool's list);
- HIP_ARCHITECTURES with gfx942/gfx950 and unknown arguments are refused.
Exit status 0 when all pass, 1 otherwise; each failure is printed.
"""

import argparse
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dockerfile_test  # noqa: E402  (the Dockerfile parser)

REPO_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
IMAGES = ("cpu", "rocm", "cuda")
BUILD_NEEDS = ("build-essential", "cmake", "ninja-build", "git", "libgrpc++-dev",
               "protobuf-compiler-grpc", "help2man", "dpkg-dev", "file")
TEST_TOOLS = ("chromium", "systemd", "python3-jsonschema", "python3-junitparser",
              "python3-websocket", "libxml2-utils")

failures = []


def fail(what):
    print(f"FAIL: {what}", flush=True)
    failures.append(what)


def run_script(source, args, env_extra):
    env = dict(os.environ, **env_extra)
    for name in ("BASE_IMAGE", "IMAGE_PREFIX", "IMAGE_STORE", "HIP_ARCHITECTURES", "RUNTIME",
                 "STORAGE_DRIVER", "CUDA_ARCHITECTURES"):
        if name not in env_extra:
            env.pop(name, None)
    return subprocess.run(["bash", os.path.join(source, "scripts/build_images.sh")] + args,
                          capture_output=True, text=True, env=env, timeout=60, cwd=source)


def check_static(source):
    script = os.path.join(source, "scripts/build_images.sh")
    result = subprocess.run(["bash", "-n", script], capture_output=True, text=True)
    if result.returncode != 0:
        fail(f"bash -n: {result.stderr.strip()}")
    if shutil.which("shellcheck"):
        result = subprocess.run(["shellcheck", script], capture_output=True, text=True)
        if result.returncode != 0:
            fail(f"shellcheck:\n{result.stdout}")
    else:
        print("SKIP: shellcheck is not installed")
    for path in [script] + glob.glob(os.path.join(source, "deploy/docker/Dockerfile.*")):
        if "://" in open(path).read():
            fail(f"{os.path.relpath(path, source)} writes an address (://): the apt sources "
                 "come from the machine that builds")


def plan_of(output):
    """The commands the dry run prints ('+ cmd args'), split as the shell would."""
    return [shlex.split(line[2:]) for line in output.splitlines() if line.startswith("+ ")]


def check_plan(source, work):
    sources = os.path.join(work, "test.sources")
    with open(sources, "w") as f:
        f.write("Types: deb\nURIs: file:/nonexistent\nSuites: bookworm\nComponents: main\n")
    cuda = os.path.join(work, "cuda")
    os.mkdir(cuda)
    result = run_script(source, ["--dry-run"], {"ENGINE": "podman", "APT_SOURCES": sources,
                                                "CUDA_HOME": cuda})
    if result.returncode != 0:
        fail(f"--dry-run exited {result.returncode}: {result.stderr.strip()}")
        return None, []
    plan = plan_of(result.stdout)
    tools = [cmd[0] for cmd in plan]
    if "mmdebstrap" not in tools:
        fail(f"the plan makes no base with mmdebstrap: {tools}")
        return None, []
    debootstrap = plan[tools.index("mmdebstrap")]
    if "bookworm" not in debootstrap or sources not in debootstrap:
        fail(f"mmdebstrap is not given bookworm and the apt sources {sources}: {debootstrap}")
    imports = [cmd for cmd in plan if cmd[0] == "podman" and "import" in cmd]
    if len(imports) != 1:
        fail(f"expected one podman import of the base, got {imports}")
        return None, []
    base = imports[0][-1]
    if not base.startswith("localhost/"):
        fail(f"the base is imported as {base}: expected a localhost/ tag no registry serves")
    for cmd in plan:
        if "pull" in cmd or any("://" in word for word in cmd):
            fail(f"the plan pulls or names an address: {shlex.join(cmd)}")
    builds = {}
    for cmd in plan:
        if cmd[0] == "podman" and "build" in cmd:
            dockerfile = cmd[cmd.index("-f") + 1]
            tag = cmd[cmd.index("-t") + 1]
            builds[os.path.basename(dockerfile)] = cmd
            if "--pull=never" not in cmd:
                fail(f"{dockerfile}: built without --pull=never")
            if f"BASE_IMAGE={base}" not in cmd:
                fail(f"{dockerfile}: built without --build-arg BASE_IMAGE={base}")
            if cmd[-1] != ".":
                fail(f"{dockerfile}: the build context is {cmd[-1]}, not the repository root")
            if not tag.startswith("localhost/colltest:"):
                fail(f"{dockerfile}: tagged {tag}")
    if tools.index("mmdebstrap") > min((i for i, c in enumerate(plan) if "build" in c),
                                       default=len(plan)):
        fail("the plan builds an image before it makes the base")
    order = [os.path.basename(c[c.index("-f") + 1]).split(".")[1]
             for c in plan if c[0] == "podman" and "build" in c]
    if order != list(IMAGES):
        fail(f"the plan builds {order}, expected {list(IMAGES)} in that order")
    cuda_build = builds.get("Dockerfile.cuda", [])
    mount = f"{os.path.realpath(cuda)}:/usr/local/cuda:ro"
    if "--volume" not in cuda_build or cuda_build[cuda_build.index("--volume") + 1] != mount:
        fail(f"the CUDA build does not mount the toolkit read-only ({mount}): {cuda_build}")
    for name, cmd in builds.items():
        if name != "Dockerfile.cuda" and "--volume" in cmd:
            fail(f"{name}: built with a --volume")
    return base, list(builds)


def check_refusals(source):
    result = run_script(source, ["--dry-run", "rocm"], {"ENGINE": "podman",
                                                        "HIP_ARCHITECTURES": "gfx90a;gfx942"})
    if result.returncode == 0 or "gfx942" not in result.stderr:
        fail(f"HIP_ARCHITECTURES=gfx90a;gfx942 was not refused: {result.returncode} "
             f"{result.stderr.strip()}")
    result = run_script(source, ["--dry-run", "registry-image"], {"ENGINE": "podman"})
    if result.returncode != 2:
        fail(f"an unknown image name exited {result.returncode}, expected 2")
    result = run_script(source, ["--dry-run", "cuda"], {"ENGINE": "docker"})
    if result.returncode == 0:
        fail("the CUDA image with docker (no build --volume) was not refused")


def check_dockerfiles(source, base, built):
    dockerfiles = sorted(glob.glob(os.path.join(source, "deploy/docker/Dockerfile.*")))
    for path in dockerfiles:
        name = os.path.basename(path)
        if built is not None and name not in built:
            fail(f"{name} is not built by scripts/build_images.sh")
        text = open(path).read()
        all_args, stages = dockerfile_test.parse(text)
        names = []
        for stage in stages:
            if stage.base not in names and stage.base != base:
                fail(f"{name}: FROM {stage.base} (stage {stage.name}) is neither an earlier stage "
                     f"nor the base {base}")
            names.append(stage.name)
        if all_args.get("BASE_IMAGE") != base:
            fail(f"{name}: BASE_IMAGE defaults to {all_args.get('BASE_IMAGE')}, not {base}")
        for stage in stages[:-1]:
            runs = " ".join(i.args for i in stage.instructions if i.keyword == "RUN")
            lists = re.findall(r"setup\.sh(?:\s+(\w[\w-]*))?", runs)
            if lists and "build" not in lists:
                fail(f"{name}: stage {stage.name} installs setup.sh {lists}, not `build`")
            if "base" in lists or "" in lists:
                fail(f"{name}: stage {stage.name} installs the test tools (setup.sh base)")


def check_setup_lists(source, work):
    """`setup.sh build` with a dpkg-query that logs the names asked for and calls all installed."""
    fake = os.path.join(work, "bin")
    os.mkdir(fake)
    log = os.path.join(work, "asked")
    with open(os.path.join(fake, "dpkg-query"), "w") as f:
        f.write(f'#!/bin/sh\nfor a; do last="$a"; done\necho "$last" >> {shlex.quote(log)}\n'
                'printf "install ok installed"\n')
    os.chmod(os.path.join(fake, "dpkg-query"), 0o755)
    env = dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}")
    result = subprocess.run(["bash", os.path.join(source, "scripts/setup.sh"), "build"],
                            capture_output=True, text=True, env=env, timeout=60)
    if result.returncode != 0:
        fail(f"setup.sh build exited {result.returncode}: {result.stderr.strip()}")
        return
    if "promtool" in result.stdout:
        fail("setup.sh build installs promtool (a test tool)")
    asked = open(log).read().split() if os.path.exists(log) else []
    for package in BUILD_NEEDS:
        if package not in asked:
            fail(f"setup.sh build does not install {package}")
    for package in TEST_TOOLS:
        if package in asked:
            fail(f"setup.sh build installs {package}, a test tool")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source-dir", default=REPO_ROOT)
    args = parser.parse_args()
    source = os.path.abspath(args.source_dir)
    with tempfile.TemporaryDirectory() as work:
        check_static(source)
        base, built = check_plan(source, work)
        check_refusals(source)
        check_dockerfiles(source, base or "localhost/colltest-base:bookworm", built)
        check_setup_lists(source, work)
    print(f"{len(failures)} failure(s)" if failures else "OK: build_images.sh plan, Dockerfiles "
          "and setup.sh build")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
