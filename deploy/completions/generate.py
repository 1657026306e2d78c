#!/usr/bin/python3
"""Writes the bash, zsh and fish completions of one program from its own --help, the one source of
truth for its flags: the CLI11 flag table the program prints, read for the program and every
subcommand. A flag whose help starts with its values (a|b|c) completes them (each item of a list
when the help says comma-separated); one whose help says FILE, PEM or file completes paths, DIR or
directory folders; one shown without a value is a switch.

usage: generate.py PROGRAM_BINARY OUT_DIR
writes OUT_DIR/bash/NAME, OUT_DIR/zsh/_NAME and OUT_DIR/fish/NAME.fish, NAME the binary's name."""

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
# CLI11 starts a description at this column, or on the next line when the entry is longer.
DESCRIPTION_COLUMN = 30
# The key of the top level in the tables (bash and zsh take no empty key).
TOP = "."


@dataclass
class Flag:
    names: list  # every spelling, short ones first: ["-n", "--iters"]
    kind: str  # switch, words, list, file, dir or free
    values: list
    description: str


@dataclass
class Command:
    path: list  # [] for the top level, ["baseline", "set"]
    aliases: list = field(default_factory=list)  # other names of its last word
    flags: list = field(default_factory=list)
    subcommands: list = field(default_factory=list)  # [[name, alias...], ...]

    @property
    def key(self):
        return " ".join(self.path) or TOP


def entries(text):
    """(section, entry, description) per entry of a CLI11 --help."""
    section, lines, i = None, text.splitlines(), 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if re.match(r"^\S.*:$", line):
            section = line[:-1]
            continue
        if not re.match(r"^  \S", line):
            continue
        if i < len(lines) and re.match(r"^ {%d}\S" % DESCRIPTION_COLUMN, lines[i]):
            entry, description = line.strip(), lines[i].strip()
            i += 1
        else:
            entry = line[:DESCRIPTION_COLUMN].strip()
            description = line[DESCRIPTION_COLUMN:].strip()
        yield section, entry, description


def values_of(type_, description):
    """The values a flag's help names: TEXT:{a,b}, or a description starting "a|b|c"."""
    braces = re.search(r"\{([^}]*)\}", type_)
    if braces:
        return braces.group(1).split(",")
    text = re.sub(r"^[^:]*: ", "", description)  # "Only runs in this state: a|b"
    pipes = re.match(r"^(\w+(?:\|\w+)+)\b", text)
    if pipes:
        return pipes.group(1).split("|")
    commas = re.match(r"^(\w+(?:,\w+)+)(?: or (\w+))?$", text)
    if commas:
        return commas.group(1).split(",") + ([commas.group(2)] if commas.group(2) else [])
    return []


def flag_of(entry, description):
    names, _, type_ = entry.partition(" ")
    values = values_of(type_, description)
    text = type_ + " " + description
    if not type_:
        kind = "switch"
    elif values:
        kind = "list" if "comma-separated" in description else "words"
    elif re.search(r"\bDIR\b|\bdirectory\b", text):
        kind = "dir"
    elif re.search(r"\bFILE\b|\bfile\b|\bPEM\b", text, re.IGNORECASE):
        kind = "file"
    else:
        kind = "free"
    return Flag(names.split(","), kind, values, description)


def read_commands(binary):
    """Every command of `binary`, depth first, from its --help and its subcommands'."""
    commands = []

    def visit(path, aliases):
        text = subprocess.run([binary, *path, "--help"], capture_output=True, text=True,
                              check=True).stdout
        command = Command(path, aliases)
        for section, entry, description in entries(text):
            if section == "Options":
                command.flags.append(flag_of(entry, description))
            elif section == "Subcommands":
                command.subcommands.append([name.strip() for name in entry.split(",")])
        commands.append(command)
        for names in command.subcommands:
            visit(path + [names[0]], names[1:])

    visit([], [])
    return commands


def words(items):
    return " ".join(items)


def shell_tables(commands, assign):
    """The tables the bash and zsh engines read, each line `assign(table, key, value)`."""
    lines = []
    for command in commands:
        lines.append(assign("flags", command.key,
                            words(n for f in command.flags for n in f.names)))
        if command.subcommands:
            lines.append(assign("commands", command.key,
                                words(n for names in command.subcommands for n in names)))
        for alias in command.aliases:
            lines.append(assign("alias", " ".join(command.path[:-1] + [alias]), command.key))
        for flag in command.flags:
            for name in flag.names:
                lines.append(assign("kind", f"{command.key}|{name}", flag.kind))
                if flag.values:
                    lines.append(assign("values", f"{command.key}|{name}", words(flag.values)))
    return "\n".join(lines)


def quote(text):
    return "'" + text.replace("'", "'\\''") + "'"


def from_template(name, program, tables):
    with open(os.path.join(HERE, name)) as template:
        text = template.read()
    prefix = "_" + re.sub(r"\W", "_", program)
    return (text.replace("@PROGRAM@", program).replace("@PREFIX@", prefix)
            .replace("@TABLES@", tables))


def bash(program, commands):
    prefix = "_" + re.sub(r"\W", "_", program)
    tables = shell_tables(commands, lambda table, key, value:
                          f"{prefix}_{table}[{quote(key)}]={quote(value)}")
    return from_template("engine.bash", program, tables)


def zsh(program, commands):
    prefix = "_" + re.sub(r"\W", "_", program)
    # zsh keeps the quotes of a subscript assigned to: pairs added to the array instead.
    tables = shell_tables(commands, lambda table, key, value:
                          f"{prefix}_{table}+=({quote(key)} {quote(value)})")
    return from_template("engine.zsh", program, tables)


def fish_condition(command, commands):
    """Fish's test that the line is in `command` (the top level's flags hold everywhere)."""
    tests = []
    for depth in range(len(command.path)):
        parent = next(c for c in commands if c.path == command.path[:depth])
        names = next(n for n in parent.subcommands if n[0] == command.path[depth])
        tests.append("__fish_seen_subcommand_from " + words(names))
    return "; and ".join(tests)


def fish_flag(program, condition, flag):
    line = f"complete -c {program}"
    if condition:
        line += f" -n {quote(condition)}"
    for name in flag.names:
        line += f" -s {name[1:]}" if len(name) == 2 else f" -l {name[2:]}"
    line += {"switch": "", "words": " -x", "list": " -x", "file": " -r -F",
             "dir": " -x -a '(__fish_complete_directories)'", "free": " -x"}[flag.kind]
    if flag.kind == "list":
        # Each item of "a,b,c": fish's helper completes the item after the last comma.
        items = ",".join(flag.values)
        line += " -a " + quote(f'(__fish_complete_list , "string split , {items}")')
    elif flag.values:
        line += f" -a {quote(words(flag.values))}"
    return line + f" -d {quote(flag.description)}"


def fish(program, commands):
    lines = [f"# fish completion for {program}, generated from its --help "
             "(deploy/completions/generate.py).",
             f"complete -c {program} -f"]
    for command in commands:
        condition = fish_condition(command, commands)
        if command.subcommands:
            every = words(n for names in command.subcommands for n in names)
            here = (condition + "; and " if condition else "") + \
                f"not __fish_seen_subcommand_from {every}"
            lines.append(f"complete -c {program} -n {quote(here)} -a {quote(every)}")
        for flag in command.flags:
            lines.append(fish_flag(program, condition, flag))
    return "\n".join(lines) + "\n"


def main():
    binary, out_dir = sys.argv[1:3]
    program = os.path.basename(binary)
    commands = read_commands(binary)
    outputs = {("bash", program): bash(program, commands),
               ("zsh", "_" + program): zsh(program, commands),
               ("fish", program + ".fish"): fish(program, commands)}
    for (shell, name), text in outputs.items():
        os.makedirs(os.path.join(out_dir, shell), exist_ok=True)
        with open(os.path.join(out_dir, shell, name), "w") as out:
            out.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
