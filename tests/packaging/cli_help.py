"""Reads a CLI11 --help: its options and subcommands, as the completions and man pages must show."""

import re
import subprocess
from dataclasses import dataclass, field

# CLI11 starts a description at this column, or on the next line when the entry is longer.
DESCRIPTION_COLUMN = 30


@dataclass
class Option:
    flags: list  # the long names, e.g. ["--help"] for "-h,--help"
    type: str  # what follows the names, e.g. "TEXT:{auto,cpu}=auto", "LIST", ""
    description: str


@dataclass
class Help:
    options: list = field(default_factory=list)
    subcommands: list = field(default_factory=list)  # [name, alias...] per subcommand

    def flags(self):
        return {flag for option in self.options for flag in option.flags}


def parse(text):
    help_ = Help()
    section = None
    lines = text.splitlines()
    i = 0
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
        if section == "Subcommands":
            help_.subcommands.append([name.strip() for name in entry.split(",")])
        elif section == "Options":
            names, _, type_ = entry.partition(" ")
            flags = [name for name in names.split(",") if name.startswith("--")]
            help_.options.append(Option(flags, type_, description))
    return help_


def read(binary, *path):
    """The parsed `binary PATH... --help`, which must exit 0."""
    result = subprocess.run([binary, *path, "--help"], capture_output=True, text=True, check=True)
    return parse(result.stdout)


def command_paths(binary):
    """Every subcommand path of binary, depth first, with its parsed help: [([], help), ...]."""
    paths = []

    def visit(path):
        help_ = read(binary, *path)
        paths.append((path, help_))
        for names in help_.subcommands:
            visit(path + [names[0]])

    visit([])
    return paths


def value_choices(option):
    """The values an option's help names, or None: "a|b|c", "a,b,c or all", "TEXT:{a,b,c}"."""
    braces = re.search(r"\{([^}]*)\}", option.type)
    if braces:
        return set(braces.group(1).split(","))
    text = re.sub(r"^[^:]*: ", "", option.description)  # "Only runs in this state: a|b"
    pipes = re.match(r"^(\w+(?:\|\w+)+)\b", text)
    if pipes:
        return set(pipes.group(1).split("|"))
    commas = re.match(r"^(\w+(?:,\w+)+)(?: or (\w+))?$", text)
    if commas:
        return set(commas.group(1).split(",")) | ({commas.group(2)} if commas.group(2) else set())
    return None


def takes_path(option):
    """"file" or "dir" when the help says the value is one, else None (always for a switch)."""
    if not option.type:
        return None
    text = option.type + " " + option.description
    if re.search(r"\bDIR\b|\bdirectory\b", text):
        return "dir"
    if re.search(r"\bFILE\b|\bfile\b|\bPEM\b", text, re.IGNORECASE):
        return "file"
    return None
