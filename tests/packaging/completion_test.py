#!/usr/bin/python3
"""The bash completions (deploy/completions) against the programs' --help: for every command path,
`--<TAB>` offers exactly the flags its --help shows (for colltest, with the global flags, which
are accepted after the command too); the subcommands complete; a flag whose help lists its values
completes those values; a flag whose help says FILE or directory completes paths. Each case runs
the completion function in a bash of its own, as bash-completion would call it."""

import argparse
import os
import subprocess
import sys
import tempfile

import cli_help

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


class Checker:
    def __init__(self, completions_dir, work_dir):
        self.completions_dir = completions_dir
        self.work_dir = work_dir
        self.failures = []

    def complete(self, program, words, line=None):
        """COMPREPLY for COMP_WORDS program + words; line: the COMP_LINE when bash's words split
        it at more than blanks (its default word breaks split "--dtype=b" into 3 words)."""
        script = os.path.join(self.completions_dir, program)
        env = dict(os.environ, LINE=line or "")
        result = subprocess.run(["bash", "--norc", "--noprofile", "-c", COMPLETE, "bash", script,
                                 program, *words], capture_output=True, text=True,
                                cwd=self.work_dir, env=env)
        if result.returncode != 0:
            self.fail(f"{program} {' '.join(words)}: bash exited {result.returncode}: "
                      f"{result.stderr.strip()}")
        return {line for line in result.stdout.splitlines() if line}

    def expect(self, program, words, expected, line=None):
        got = self.complete(program, words, line)
        if got != expected:
            shown = " ".join(words)
            missing, extra = sorted(expected - got), sorted(got - expected)
            self.fail(f"`{program} {shown}<TAB>`: missing {missing}, not in --help {extra}")

    def fail(self, message):
        self.failures.append(message)


def check_program(checker, bin_dir, program, global_flags=frozenset()):
    binary = os.path.join(bin_dir, program)
    paths = cli_help.command_paths(binary)
    aliases = {}
    for path, help_ in paths:
        for names in help_.subcommands:
            aliases[tuple(path + [names[0]])] = names[1:]
    for path, help_ in paths:
        spellings = [path] + [path[:-1] + [alias] for alias in aliases.get(tuple(path), [])]
        flags = help_.flags() | (global_flags if path else set())
        for words in spellings:
            checker.expect(program, words + ["--"], flags)
        if help_.subcommands:
            names = {name for names in help_.subcommands for name in names}
            checker.expect(program, path + [""], names)
        for option in help_.options:
            flag = option.flags[0] if option.flags else None
            if flag is None:
                continue
            choices = cli_help.value_choices(option)
            if choices is not None:
                checker.expect(program, path + [flag, ""], choices)
            kind = cli_help.takes_path(option)
            if kind == "file":
                checker.expect(program, path + [flag, "probe"], {"probe-dir", "probe-file.pem"})
            elif kind == "dir":
                checker.expect(program, path + [flag, "probe"], {"probe-dir"})
    return paths


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--completions", required=True)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="colltest-completion-") as work_dir:
        # What the path completions are tried on.
        os.mkdir(os.path.join(work_dir, "probe-dir"))
        open(os.path.join(work_dir, "probe-file.pem"), "w").close()
        checker = Checker(os.path.abspath(args.completions), work_dir)

        top = cli_help.read(os.path.join(args.bin_dir, "colltest"))
        check_program(checker, args.bin_dir, "colltest", top.flags())
        check_program(checker, args.bin_dir, "colltestd")
        check_program(checker, args.bin_dir, "colltest-worker")
        # --flag=value completes the value, whether bash breaks words at "=" or not.
        checker.expect("colltest", ["sweep", "--dtype", "=", "fp"], {"fp16", "fp32"},
                       line="colltest sweep --dtype=fp")
        checker.expect("colltest", ["sweep", "--dtype=fp"], {"--dtype=fp16", "--dtype=fp32"})
        checker.expect("colltestd", ["--backend", "=", "c"], {"cpu", "cuda"},
                       line="colltestd --backend=c")
        # The command is found after a global flag's value, which bash breaks at "=" and ":".
        checker.expect("colltest", ["--server", "=", "host", ":", "1", "health", "--level", ""],
                       {"quick", "standard", "long"},
                       line="colltest --server=host:1 health --level ")
        # A list completes its last item.
        checker.expect("colltest", ["sweep", "--variants", "lamport,two"], {"lamport,two_kernel"})
        # The short spellings (cli_help reads the long ones): nccl-tests' -b/-e/-f, and -q.
        for words, shorts in ((["sweep", "-"], {"-b", "-e", "-f", "-h", "-q"}),
                              (["run", "-"], {"-b", "-e", "-f", "-h", "-q"}),
                              (["health", "-"], {"-h", "-q"})):
            missing = shorts - checker.complete("colltest", words)
            if missing:
                checker.fail(f"`colltest {' '.join(words)}<TAB>`: missing {sorted(missing)}")
        # A switch takes no value: the word after it is the next flag's or a command.
        checker.expect("colltest", ["-q", "he"], {"health"})
        checker.expect("colltest", ["--progress", "sw"], {"sweep"})

    for failure in checker.failures:
        print("FAIL:", failure)
    if checker.failures:
        return 1
    print("completion_test: every flag of every --help completes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
