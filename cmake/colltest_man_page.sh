#!/bin/sh
# Writes the man page of one colltest program with help2man. help2man reads the program's --help
# for the synopsis and the options; CLI11 shows only the global flags there, so the --help of every
# subcommand (and sub-subcommand) is added as a SUBCOMMANDS section: the page lists every flag.
#
# usage: colltest_man_page.sh BIN_DIR PROGRAM VERSION SUMMARY OUTPUT
set -eu
bin_dir=$1
program=$2
version=$3
summary=$4
output=$5

# Run by its bare name, so that CLI11's "Usage: PROGRAM" shows no path of the build tree.
PATH="$bin_dir:$PATH"
export PATH

# The names listed under "Subcommands:" by `PROGRAM ARGS... --help`, aliases left out.
subcommands() {
  "$program" "$@" --help | sed -n '/^Subcommands:$/,/^$/s/^  \([a-z][a-z-]*\).*/\1/p'
}

# One CLI11 --help as roff: entries (options, positionals, subcommands) as tagged paragraphs, the
# rest as plain paragraphs. CLI11 starts a description at column 31, or on the next line when the
# entry is longer.
to_roff() {
  awk '
    function esc(s) { gsub(/\\/, "\\e", s); gsub(/-/, "\\-", s); return s }
    { line[NR] = $0 }
    END {
      for (i = 1; i <= NR; i++) {
        l = line[i]
        if (l == "") continue
        if (l ~ /^  [^ ]/) {
          if (i < NR && line[i + 1] ~ /^                              [^ ]/) {
            entry = l; text = line[++i]
          } else {
            entry = substr(l, 1, 30); text = substr(l, 31)
          }
          sub(/^ +/, "", entry); sub(/ +$/, "", entry); sub(/^ +/, "", text)
          name = entry; rest = ""
          if (index(entry, " ") > 0) {
            name = substr(entry, 1, index(entry, " ") - 1); rest = substr(entry, index(entry, " "))
          }
          print ".TP"
          print "\\fB" esc(name) "\\fR" esc(rest)
          print "\\&" esc(text)
        } else {
          print ".PP"
          print "\\&" esc(l)
        }
      }
    }'
}

# A subsection per subcommand path, depth first.
sections() {
  for sub in $(subcommands "$@"); do
    printf '.SS "%s"\n' "$(echo "$program $* $sub" | sed 's/  */ /g')"
    "$program" "$@" "$sub" --help | to_roff
    sections "$@" "$sub"
  done
}

include=$(mktemp)
trap 'rm -f "$include"' EXIT
body=$(sections)
set --
if [ -n "$body" ]; then
  printf '[SUBCOMMANDS]\n%s\n' "$body" >"$include"
  set -- --include="$include"
fi

# --version-string: the number comes from project(VERSION), whatever the program prints.
help2man --no-info --no-discard-stderr --version-string="$version" --name="$summary" "$@" \
  --output="$output" "$program"
