#!/usr/bin/python3
"""The bash, zsh and fish completions (written by deploy/completions/generate.py from each program's
--help, as the build does) against the programs' --help: for every command path, `--<TAB>` offers
exactly the flags its --help shows (for colltest, with the global flags, which are accepted after
the command too); the subcommands complete; a flag whose help lists its values completes those
values; a flag whose help says FILE or directory completes paths. Each case runs the completion in
a shell of its own: bash as bash-completion calls it, zsh with its completion builtins stubbed to
print what would be offered, fish through `complete -C`. Every file passes `bash -n`, `zsh -n` and
`fish --no-execute`, and the build's own files (BIN_DIR/../completions) are the ones tested. The
--help is read with generate.py's reader, itself checked against each help's Options lines."""

import argparse
import filecmp
import importlib
import os
import subprocess
import sys
import tempfile


PROGRAMS = ("colltest", "colltestd", "colltest-worker")
generator = None  # deploy/completions/generate.py, imported by main()

# Runs the function `complete -p` names for the program, the way bash calls it, and prints
# COMPREPLY one per line.
COMPLETE = r"""
source "$1"; shift
COMP_WORDS=("$@")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
COMP_LINE=${LINE:-"${COMP_WORDS[*]}"}
COMP_POINT=${#COMP_LINE}
spec=($(complete -p "$1")) || exit 1
"${spec[-2]}" "$1" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
printf '%s\n' "${COMPREPLY[@]}"
"""


# zsh's completion builtins, stubbed to print what would be offered, one per line (what matches
# PREFIX, after IPREFIX, as compadd, compset and _files do), then the completion function called
# with the words: ZSH file function words...
ZSH = r"""
compadd() {
  local arr=''
  while [[ $1 == -* && $1 != -- ]]; do
    case $1 in
      -a) arr=$2; shift 2 ;;
      -S | -P | -d) shift 2 ;;
      *) shift ;;
    esac
  done
  [[ $1 == -- ]] && shift
  local -a items
  if [[ -n $arr ]]; then items=("${(@P)arr}"); else items=("$@"); fi
  local w
  for w in $items; do [[ $w == ${PREFIX}* ]] && print -r -- "$IPREFIX$w"; done
}
compset() {
  [[ $1 == -P ]] || return 1
  local head=${(M)PREFIX##${~2}}
  [[ -n $head ]] || return 1
  IPREFIX+=$head
  PREFIX=${PREFIX#$head}
}
_files() {
  local -a found
  if [[ $1 == -/ ]]; then found=(${PREFIX}*(N/)); else found=(${PREFIX}*(N)); fi
  print -rl -- $IPREFIX${^found}
}
source $1
fn=$2
shift 2
words=("$@")
CURRENT=$#words
PREFIX=${words[CURRENT]}
IPREFIX=''
# Its status is whatever its last test gave; an error shows on stderr.
$fn
exit 0
"""

SHELLS = ("bash", "zsh", "fish")
SYNTAX = {"bash": ["bash", "-n"], "zsh": ["zsh", "-n"], "fish": ["fish", "--no-execute"]}


def script_of(completions_dir, shell, program):
    name = {"bash": program, "zsh": "_" + program, "fish": program + ".fish"}[shell]
    return os.path.join(completions_dir, shell, name)


class Checker:
    def __init__(self, completions_dir, work_dir):
        self.completions_dir = completions_dir
        self.work_dir = work_dir
        self.failures = []

    def run(self, shell, program, words, line):
        script = script_of(self.completions_dir, shell, program)
        if shell == "bash":
            return subprocess.run(["bash", "--norc", "--noprofile", "-c", COMPLETE, "bash",
                                   script, program, *words], capture_output=True, text=True,
                                  cwd=self.work_dir, env=dict(os.environ, LINE=line or ""))
        # zsh and fish split the line at blanks only, as a user typed it.
        typed = line or " ".join([program, *words])
        if shell == "zsh":
            return subprocess.run(["zsh", "-f", "-c", ZSH, "zsh", script,
                                   "_" + program.replace("-", "_"), *typed.split(" ")],
                                  capture_output=True, text=True, cwd=self.work_dir)
        return subprocess.run(["fish", "--no-config", "-c", 'source $argv[1]; complete -C $argv[2]',
                               script, typed], capture_output=True, text=True, cwd=self.work_dir)

    def complete(self, program, words, line=None, shells=SHELLS):
        """{shell: what `program words` completes to}; line: the line as typed, when bash's words
        split it at more than blanks (its default word breaks split "--dtype=b" into 3 words)."""
        offered = {}
        for shell in shells:
            result = self.run(shell, program, words, line)
            if result.returncode != 0 or result.stderr:
                self.fail(f"{shell}: {program} {' '.join(words)}: exited {result.returncode}: "
                          f"{result.stderr.strip()}")
            # fish: "word<TAB>description", a folder with a trailing "/".
            offered[shell] = {out.split("\t")[0].rstrip("/")
                              for out in result.stdout.splitlines() if out}
        return offered

    def expect(self, program, words, expected, line=None, shells=SHELLS):
        for shell, got in self.complete(program, words, line, shells).items():
            if got != expected:
                shown = line or " ".join([program, *words])
                missing, extra = sorted(expected - got), sorted(got - expected)
                self.fail(f"{shell}: `{shown}<TAB>`: missing {missing}, not in --help {extra}")

    def fail(self, message):
        self.failures.append(message)


def check_help_read(checker, binary, command):
    """What generate.py read of one --help against the text itself: each line of its Options
    section that starts an entry ("  -x,--name ...") is one flag of the command, names alike."""
    text = subprocess.run([binary, *command.path, "--help"], capture_output=True, text=True,
                          check=True).stdout
    options = text.split("\nOptions:\n", 1)[1].split("\n\n", 1)[0]
    entries = [line.split()[0].split(",") for line in options.splitlines()
               if line.startswith("  -")]
    read = [flag.names for flag in command.flags]
    if entries != read:
        checker.fail(f"{' '.join([binary, *command.path])} --help: generate.py read {read}, "
                     f"the help lists {entries}")


def long_names(flags):
    return {name for flag in flags for name in flag.names if name.startswith("--")}


def long_name(flag):
    return next(name for name in flag.names if name.startswith("--"))


def check_program(checker, bin_dir, program, global_flags=frozenset()):
    """Every command of `program`: its flags, subcommands, listed values and paths complete."""
    binary = os.path.join(bin_dir, program)
    commands = generator.read_commands(binary)
    for command in commands:
        check_help_read(checker, binary, command)
        path = command.path
        spellings = [path] + [path[:-1] + [alias] for alias in command.aliases]
        flags = long_names(command.flags) | (global_flags if path else set())
        for words in spellings:
            checker.expect(program, words + ["--"], flags)
        if command.subcommands:
            names = {name for names in command.subcommands for name in names}
            checker.expect(program, path + [""], names)
        for flag in command.flags:
            if flag.values:
                checker.expect(program, path + [long_name(flag), ""], set(flag.values))
            if flag.kind == "file":
                checker.expect(program, path + [long_name(flag), "probe"],
                               {"probe-dir", "probe-file.pem"})
            elif flag.kind == "dir":
                checker.expect(program, path + [long_name(flag), "probe"], {"probe-dir"})
    return commands


def write_completions(completions_dir, bin_dir, out_dir):
    """The completions of the three programs into out_dir, as the build writes them."""
    for program in PROGRAMS:
        subprocess.run([sys.executable, os.path.join(completions_dir, "generate.py"),
                        os.path.join(bin_dir, program), out_dir], check=True)


def check_files(checker, out_dir, bin_dir):
    """Each file's syntax in its shell, and the build's files the same as the ones tested."""
    built = os.path.join(bin_dir, os.pardir, "completions")
    for program in PROGRAMS:
        for shell in SHELLS:
            script = script_of(out_dir, shell, program)
            result = subprocess.run(SYNTAX[shell] + [script], capture_output=True, text=True)
            if result.returncode != 0:
                checker.fail(f"{' '.join(SYNTAX[shell])} {script}: {result.stderr.strip()}")
            if not filecmp.cmp(script, script_of(built, shell, program), shallow=False):
                checker.fail(f"{script_of(built, shell, program)}: not what generate.py writes")


def check_special_cases(checker):
    # --flag=value completes the value, whether bash breaks words at "=" or not.
    checker.expect("colltest", ["sweep", "--dtype", "=", "fp"], {"fp16", "fp32"},
                   line="colltest sweep --dtype=fp", shells=["bash"])
    checker.expect("colltest", ["sweep", "--dtype=fp"], {"--dtype=fp16", "--dtype=fp32"})
    checker.expect("colltestd", ["--backend", "=", "c"], {"cpu", "cuda"},
                   line="colltestd --backend=c", shells=["bash"])
    # The command is found after a global flag's value, which bash breaks at "=" and ":".
    checker.expect("colltest", ["--server", "=", "host", ":", "1", "health", "--level", ""],
                   {"quick", "standard", "long"}, line="colltest --server=host:1 health --level ")
    # A list completes its last item.
    checker.expect("colltest", ["sweep", "--variants", "lamport,two"], {"lamport,two_kernel"})
    # The short spellings: nccl-tests' -b/-e/-f/-n/-w/-d/-c, and -q.
    nccl = {"-b", "-e", "-f", "-n", "-w", "-d", "-c", "-h", "-q"}
    for words, shorts in ((["sweep", "-"], nccl), (["run", "-"], nccl),
                          (["tune", "-"], {"-n", "-w", "-d", "-h", "-q"}),
                          (["health", "-"], {"-h", "-q"})):
        for shell, got in checker.complete("colltest", words).items():
            if shorts - got:
                checker.fail(f"{shell}: `colltest {' '.join(words)}<TAB>`: missing "
                             f"{sorted(shorts - got)}")
    # nccl-tests' -d and --hidden's alias --n take values like their long names.
    checker.expect("colltest", ["sweep", "-d", "fp"], {"fp16", "fp32"})
    checker.expect("colltest", ["sweep", "--n", "8", "--dt"], {"--dtype"})
    # A switch takes no value: the word after it is the next flag's or a command.
    checker.expect("colltest", ["-q", "he"], {"health"})
    checker.expect("colltest", ["--progress", "sw"], {"sweep"})
    checker.expect("colltest", ["-q", "health", "--level", ""], {"quick", "standard", "long"})
    checker.expect("colltest", ["--progress", "sweep", "--dt"], {"--dtype"})
    # A global flag after the command completes its value as it does before it.
    checker.expect("colltest", ["sweep", "--color", ""], {"always", "auto", "never"})
    checker.expect("colltest", ["health", "--tls-ca", "probe"], {"probe-dir", "probe-file.pem"})


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--completions", required=True, help="deploy/completions")
    args = parser.parse_args()
    # The reader of --help the completions are written from: deploy/completions/generate.py.
    global generator
    sys.path.insert(0, os.path.abspath(args.completions))
    generator = importlib.import_module("generate")

    with tempfile.TemporaryDirectory(prefix="colltest-completion-") as work_dir:
        out_dir = os.path.join(work_dir, "generated")
        write_completions(os.path.abspath(args.completions), args.bin_dir, out_dir)
        # What the path completions are tried on.
        os.mkdir(os.path.join(work_dir, "probe-dir"))
        open(os.path.join(work_dir, "probe-file.pem"), "w").close()
        checker = Checker(out_dir, work_dir)
        check_files(checker, out_dir, args.bin_dir)

        top = generator.read_commands(os.path.join(args.bin_dir, "colltest"))[0]
        check_program(checker, args.bin_dir, "colltest", long_names(top.flags))
        check_program(checker, args.bin_dir, "colltestd")
        check_program(checker, args.bin_dir, "colltest-worker")
        check_special_cases(checker)

    for failure in checker.failures:
        print("FAIL:", failure)
    if checker.failures:
        return 1
    print("completion_test: every flag of every --help completes in bash, zsh and fish")
    return 0


if __name__ == "__main__":
    sys.exit(main())
