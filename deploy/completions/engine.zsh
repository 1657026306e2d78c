#compdef @PROGRAM@
# zsh completion for @PROGRAM@, generated from its --help by deploy/completions/generate.py.
# Installed as share/zsh/vendor-completions/_@PROGRAM@, which compinit finds on the fpath.

# The tables, from the --help of every command ("." the top level, "baseline set" a nested one):
# commands: its subcommands; alias: a command's other name; flags: its flags; kind of
# "COMMAND|FLAG": switch, words, list, file, dir or free; values of "COMMAND|FLAG".
typeset -gA @PREFIX@_commands @PREFIX@_alias @PREFIX@_flags @PREFIX@_kind @PREFIX@_values
@TABLES@

# The kind of flag $2 in command $1, or of the top level's flag of that name (accepted after a
# command too).
@PREFIX@_kind_of() {
  local key="$1|$2"
  [[ -z ${@PREFIX@_kind[$key]-} ]] && key=".|$2"
  print -r -- "${@PREFIX@_kind[$key]-}"
}

# Completes the value of flag $2 of command $1 (after compset took any "--flag=").
@PREFIX@_value() {
  local key="$1|$2"
  [[ -z ${@PREFIX@_kind[$key]-} ]] && key=".|$2"
  local -a values
  values=(${=@PREFIX@_values[$key]-})
  case ${@PREFIX@_kind[$key]-} in
    words) compadd -a values ;;
    # A comma-separated list: its last item, with no space after it, as another may follow.
    list)
      compset -P '*,'
      compadd -S '' -a values
      ;;
    file) _files ;;
    dir) _files -/ ;;
  esac
}

# The command of the words before the cursor ("." for none, "baseline set"): those that are
# neither flags nor their values. Aliases resolved.
@PREFIX@_command() {
  local command=. i word next
  for ((i = 2; i < CURRENT; i++)); do
    word=${words[i]}
    if [[ $word == -* ]]; then
      [[ $word != *=* && $(@PREFIX@_kind_of $command $word) != switch ]] && ((i++))
      continue
    fi
    [[ " ${@PREFIX@_commands[$command]-} " == *" $word "* ]] || continue
    if [[ $command == . ]]; then next=$word; else next="$command $word"; fi
    command=${@PREFIX@_alias[$next]-$next}
  done
  print -r -- $command
}

@PREFIX@() {
  local cur=${words[CURRENT]} prev=${words[CURRENT - 1]} command
  command=$(@PREFIX@_command)
  local -a candidates
  if [[ $cur == --*=* ]]; then
    compset -P '*='
    @PREFIX@_value $command ${cur%%=*}
  elif [[ $cur != -* && $prev == -* && $(@PREFIX@_kind_of $command $prev) != switch ]]; then
    @PREFIX@_value $command $prev
  elif [[ $cur == -* ]]; then
    candidates=(${=@PREFIX@_flags[.]})
    [[ $command != . ]] && candidates+=(${=@PREFIX@_flags[$command]})
    candidates=(${(u)candidates})
    compadd -a candidates
  else
    candidates=(${=@PREFIX@_commands[$command]-})
    compadd -a candidates
  fi
}

if [[ ${zsh_eval_context[-1]} == loadautofunc ]]; then
  @PREFIX@ "$@"
elif (($+functions[compdef])); then
  compdef @PREFIX@ @PROGRAM@
fi
