#!/usr/bin/python3
"""Checks deploy/docker/Dockerfile.* without building them (no Docker needed).

  dockerfile_test.py --colltestd build/bin/colltestd [--source-dir .] [Dockerfile ...]

Each Dockerfile is parsed here (instructions, line continuations, comments, stages, build args)
and must hold to these rules:
- every COPY source from the build context exists in the repository and .dockerignore keeps it;
- every script a RUN starts exists and was copied into the stage before;
- every --from names an earlier stage;
- the build stage builds for the backend whose worker package the runtime stage installs;
- the runtime (last) stage gets only .deb files from other stages, installs no compiler or -dev
  package, runs as a numeric non-root user and has HEALTHCHECK NONE;
- ENTRYPOINT is where the packages install colltestd (cmake/ColltestPackage.cmake's prefix and
  cmake/ColltestInstall.cmake's directory);
- every CMD flag is one `colltestd --help` lists, a non-loopback --listen comes with a token file
  or TLS, and EXPOSE names exactly the ports of CMD's addresses;
- every build ARG is documented in the file's leading comment and in docs/deploy.md.
Exit status 0 when all pass, 1 otherwise; each failure is printed.
"""

import argparse
import glob
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field

BACKENDS = {"Dockerfile.cpu": "cpu", "Dockerfile.cuda": "cuda", "Dockerfile.rocm": "hip"}
COMPILERS = re.compile(
    r"^(gcc|g\+\+|cpp|clang|llvm|lld|build-essential|make|cmake|ninja-build|nvcc|hipcc|"
    r"cuda-.*|nvidia-cuda-toolkit|rocm-.*|.*-dev)(-[0-9.]+)?(=.*)?$"
)
ADDRESS_FLAGS = ("--listen", "--http", "--health-listen")
REPO_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


@dataclass
class Instruction:
    line: int
    keyword: str
    args: str


@dataclass
class Stage:
    index: int
    name: str
    base: str
    instructions: list = field(default_factory=list)


def instructions_of(text):
    """The instructions of a Dockerfile: continuations joined, comment lines dropped."""
    result = []
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if stripped.startswith("#") or (not stripped and not pending):
            continue  # comments end no instruction, even inside a continuation
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        pending += stripped
        keyword, _, args = pending.partition(" ")
        result.append(Instruction(start, keyword.upper(), args.strip()))
        pending = ""
    if pending:
        raise ValueError(f"line {start}: continuation runs past the end of the file")
    return result


def expand(text, values):
    """${NAME}, ${NAME:-default} and $NAME replaced by the build args' defaults."""
    def one(match):
        name, default = match.group(1) or match.group(3), match.group(2)
        return values.get(name) or (default or "")
    return re.sub(r"\$\{(\w+)(?::-([^}]*))?\}|\$(\w+)", one, text)


def arg_default(args):
    name, _, value = args.partition("=")
    return name.strip(), value.strip().strip('"')


def parse(text):
    """(every build arg {name: default}, stages); FROM lines see only the args declared before
    the first FROM, as in Docker."""
    global_args, all_args, stages = {}, {}, []
    for ins in instructions_of(text):
        if ins.keyword == "ARG":
            name, value = arg_default(ins.args)
            all_args[name] = value
            if not stages:
                global_args[name] = value
        if ins.keyword == "FROM":
            words = expand(ins.args, global_args).split()
            words = [w for w in words if not w.startswith("--platform")]
            name = words[2] if len(words) >= 3 and words[1].upper() == "AS" else str(len(stages))
            stages.append(Stage(len(stages), name, words[0]))
        elif stages:
            stages[-1].instructions.append(ins)
    return all_args, stages


def split_flags(args):
    """({--flag: value}, the remaining words) of a COPY/ADD; JSON form understood."""
    words = args.split()
    flags = {}
    while words and words[0].startswith("--"):
        name, _, value = words.pop(0).partition("=")
        flags[name] = value
    rest = " ".join(words)
    return flags, (json.loads(rest) if rest.startswith("[") else rest.split())


def exec_form(args):
    return json.loads(args) if args.startswith("[") else None


class DockerIgnore:
    """.dockerignore's patterns: the last that matches a path or one of its parents decides."""

    def __init__(self, path):
        self.rules = []
        if os.path.exists(path):
            with open(path) as f:
                for line in f:
                    line = line.strip()
                    if line and not line.startswith("#"):
                        negate = line.startswith("!")
                        pattern = line.lstrip("!").strip("/")
                        self.rules.append((negate, re.compile(self.regex(pattern))))

    @staticmethod
    def regex(pattern):
        out = ""
        for token in re.split(r"(\*\*/?|\*|\?)", pattern):
            out += {"**/": "(.*/)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}.get(
                token, re.escape(token))
        return out + "$"

    def excluded(self, relpath):
        parts = relpath.strip("/").split("/")
        candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        verdict = False
        for negate, rule in self.rules:
            if any(rule.match(c) for c in candidates):
                verdict = not negate
        return verdict


class Checker:
    def __init__(self, source_dir, help_flags, colltestd_path):
        self.source = source_dir
        self.help_flags = help_flags
        self.colltestd_path = colltestd_path
        self.ignore = DockerIgnore(os.path.join(source_dir, ".dockerignore"))
        self.failures = []
        self.args = {}  # the build args of the Dockerfile being checked

    def fail(self, dockerfile, ins, what):
        where = f"{dockerfile}:{ins.line}" if ins else dockerfile
        message = f"{where}: {what}"
        print(f"FAIL: {message}", flush=True)
        self.failures.append(message)

    def check(self, path):
        name = os.path.basename(path)
        with open(path) as f:
            text = f.read()
        try:
            self.args, stages = parse(text)
        except (ValueError, json.JSONDecodeError) as e:
            self.fail(name, None, f"cannot parse: {e}")
            return
        if len(stages) < 2:
            self.fail(name, None, "expected a build stage and a runtime stage")
            return
        for stage in stages:
            self.check_stage(name, stages, stage)
        self.check_backend(name, stages)
        self.check_runtime(name, stages)
        self.check_documented(name, text, list(self.args))

    def check_stage(self, name, stages, stage):
        copied = []  # context paths copied into this stage so far
        for ins in stage.instructions:
            if ins.keyword in ("COPY", "ADD"):
                flags, words = split_flags(ins.args)
                sources = words[:-1]
                if "--from" in flags:
                    earlier = [s.name for s in stages[: stage.index]]
                    if flags["--from"] not in earlier:
                        self.fail(name, ins, f"--from={flags['--from']} is no earlier stage "
                                  f"({earlier})")
                    continue
                for source in sources:
                    self.check_context_source(name, ins, source)
                    copied.append(os.path.normpath(source))
            elif ins.keyword == "RUN":
                # Scripts of the build context: relative paths (absolute ones are the image's).
                scripts = re.findall(r"(?:^|[\s;&|])((?:\./)?\w[\w./-]*\.(?:sh|py))\b", ins.args)
                for script in scripts:
                    self.check_script(name, ins, os.path.normpath(script), copied)

    def check_context_source(self, name, ins, source):
        matches = glob.glob(os.path.join(self.source, source))
        if not matches:
            self.fail(name, ins, f"COPY source {source} is not in the repository")
        elif all(self.ignore.excluded(os.path.relpath(m, self.source)) for m in matches):
            self.fail(name, ins, f"COPY source {source} is excluded by .dockerignore")

    def check_script(self, name, ins, script, copied):
        if not os.path.isfile(os.path.join(self.source, script)):
            self.fail(name, ins, f"RUN {script}: no such file in the repository")
        elif not any(c == "." or script == c or script.startswith(c + "/") for c in copied):
            self.fail(name, ins, f"RUN {script}: not copied into the stage before")

    def check_backend(self, name, stages):
        want = BACKENDS.get(name)
        runs = " ".join(i.args for s in stages[:-1] for i in s.instructions if i.keyword == "RUN")
        built = re.findall(r"-DCOLLTEST_GPU=(\w+)", runs)
        expected = [] if want == "cpu" else [want]  # cpu: COLLTEST_GPU left at its default
        if want is not None and built != expected:
            self.fail(name, None, f"builds COLLTEST_GPU={built}, expected {expected}")
        installs = " ".join(i.args for i in stages[-1].instructions if i.keyword == "RUN")
        workers = set(re.findall(r"colltest-worker-(\w+)_", installs))
        if want is not None and workers != {want}:
            self.fail(name, None, f"installs worker packages {workers}, expected {{{want!r}}}")

    def check_runtime(self, name, stages):
        runtime = stages[-1]
        if "devel" in runtime.base or runtime.base in [s.name for s in stages]:
            self.fail(name, None, f"the runtime stage is based on {runtime.base}")
        by_keyword = {}
        for ins in runtime.instructions:
            by_keyword.setdefault(ins.keyword, []).append(ins)
            if ins.keyword in ("COPY", "ADD"):
                flags, words = split_flags(ins.args)
                if "--from" in flags and not all(s.endswith(".deb") for s in words[:-1]):
                    self.fail(name, ins, f"the runtime stage copies more than .debs: {words[:-1]}")
            if ins.keyword == "RUN":
                for package in installed_packages(ins.args):
                    if COMPILERS.match(package):
                        self.fail(name, ins, f"the runtime stage installs {package}")
        self.check_user(name, by_keyword.get("USER", []))
        if [i.args.upper() for i in by_keyword.get("HEALTHCHECK", [])] != ["NONE"]:
            self.fail(name, None, "the runtime stage needs HEALTHCHECK NONE (probes do it)")
        self.check_entrypoint(name, by_keyword.get("ENTRYPOINT", []))
        self.check_cmd(name, by_keyword.get("CMD", []), by_keyword.get("EXPOSE", []))

    def check_user(self, name, users):
        if not users:
            self.fail(name, None, "the runtime stage has no USER: it would run as root")
            return
        ins = users[-1]
        user = expand(ins.args, self.args).split(":")[0]
        if not user.isdigit() or user == "0":
            self.fail(name, ins, f"USER {user}: expected a numeric uid other than 0")

    def check_entrypoint(self, name, entrypoints):
        form = exec_form(entrypoints[-1].args) if entrypoints else None
        if form != [self.colltestd_path]:
            self.fail(name, entrypoints[-1] if entrypoints else None,
                      f"ENTRYPOINT {form}: expected [{self.colltestd_path!r}], where the "
                      "packages install colltestd")

    def check_cmd(self, name, cmds, exposes):
        form = exec_form(cmds[-1].args) if cmds else None
        if not form:
            self.fail(name, None, "the runtime stage needs a CMD in exec form (a JSON list)")
            return
        values = {}
        for i, word in enumerate(form):
            if word.startswith("--"):
                flag, _, value = word.partition("=")
                if flag not in self.help_flags:
                    self.fail(name, cmds[-1], f"CMD: {flag} is not a flag of colltestd")
                next_word = form[i + 1] if i + 1 < len(form) else ""
                values[flag] = value or ("" if next_word.startswith("--") else next_word)
        listen = values.get("--listen", "127.0.0.1:50051")
        if not re.match(r"(127\.|\[::1\]|localhost|unix:)", listen) and not (
                {"--token-file", "--tls-cert", "--insecure-listen"} & values.keys()):
            self.fail(name, cmds[-1], f"CMD: --listen {listen} without --token-file or "
                      "--tls-cert: colltestd refuses to start")
        ports = {values[f].rsplit(":", 1)[1] for f in ADDRESS_FLAGS if f in values}
        exposed = {p.split("/")[0] for e in exposes for p in e.args.split()}
        if ports != exposed:
            self.fail(name, exposes[-1] if exposes else None,
                      f"EXPOSE {sorted(exposed)} but CMD serves {sorted(ports)}")

    def check_documented(self, name, text, arg_names):
        header = "\n".join(re.match(r"(?:#[^\n]*\n|\s*\n)*", text).group(0).splitlines())
        with open(os.path.join(self.source, "docs/deploy.md")) as f:
            docs = f.read()
        for arg in arg_names:
            if not re.search(rf"\b{arg}\b", header):
                self.fail(name, None, f"build arg {arg} is not described in the leading comment")
            if f"`{arg}`" not in docs:
                self.fail(name, None, f"build arg {arg} is not in docs/deploy.md (as `{arg}`)")


def installed_packages(run_args):
    """The packages named by `apt-get install` / `apt install` in a RUN, .deb files left out."""
    packages = []
    for command in re.split(r"&&|;|\|\|", run_args):
        words = command.split()
        for i, word in enumerate(words):
            if word in ("apt-get", "apt") and "install" in words[i + 1:]:
                after = words[words.index("install", i) + 1:]
                packages += [w for w in after if not w.startswith("-") and not w.endswith(".deb")]
    return packages


def help_flags(colltestd):
    out = subprocess.run([colltestd, "--help"], capture_output=True, text=True, timeout=60).stdout
    return set(re.findall(r"^\s+(?:-\w,)?(--[a-z][a-z0-9-]*)", out, re.MULTILINE))


def installed_colltestd(source_dir):
    """/usr/bin/colltestd or wherever the packaging puts it: the CPack prefix and the install
    rule's RUNTIME DESTINATION."""
    prefix = "/usr"  # CPack's default for DEB
    package = os.path.join(source_dir, "cmake/ColltestPackage.cmake")
    if os.path.exists(package):
        match = re.search(r"CPACK_PACKAGING_INSTALL_PREFIX\s+(\S+)\)", open(package).read())
        prefix = match.group(1) if match else prefix
    rules = ""
    for path in glob.glob(os.path.join(source_dir, "cmake/*.cmake")) + [
            os.path.join(source_dir, "server/CMakeLists.txt")]:
        rules += open(path).read()
    match = re.search(r"install\(TARGETS\s+(?:colltestd|\$\{program\})\s+RUNTIME DESTINATION "
                      r"(\S+)", rules)
    if match is None:
        return None
    destination = match.group(1).replace("${CMAKE_INSTALL_BINDIR}", "bin")
    return f"{prefix}/{destination}/colltestd"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--colltestd", required=True, help="the built colltestd, for its --help")
    parser.add_argument("--source-dir", default=REPO_ROOT)
    parser.add_argument("dockerfiles", nargs="*")
    args = parser.parse_args()
    source = os.path.abspath(args.source_dir)
    dockerfiles = args.dockerfiles or sorted(
        glob.glob(os.path.join(source, "deploy/docker/Dockerfile.*")))
    installed = installed_colltestd(source)
    flags = help_flags(args.colltestd)
    checker = Checker(source, flags, installed)
    if installed is None:
        checker.fail("cmake", None, "no install rule for colltestd: where does the .deb put it?")
    if not flags:
        checker.fail(args.colltestd, None, "--help lists no flags")
    if not dockerfiles:
        checker.fail("deploy/docker", None, "no Dockerfile.* found")
    for path in dockerfiles:
        checker.check(path)
    print(f"{len(checker.failures)} failure(s)" if checker.failures else
          f"OK: {len(dockerfiles)} Dockerfile(s)")
    return 1 if checker.failures else 0


if __name__ == "__main__":
    sys.exit(main())
