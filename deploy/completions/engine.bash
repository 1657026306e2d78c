# bash completion for @PROGRAM@, generated from its --help by deploy/completions/generate.py.
# Installed as share/bash-completion/completions/@PROGRAM@, which bash-completion loads the first
# time `@PROGRAM@` is completed; it can also be sourced as is (it needs bash alone).

# The tables, from the --help of every command ("." the top level, "baseline set" a nested one):
# commands: its subcommands; alias: a command's other name; flags: its flags; kind of
# "COMMAND|FLAG": switch, words, list, file, dir or free; values of "COMMAND|FLAG".
declare -gA @PREFIX@_commands=() @PREFIX@_alias=() @PREFIX@_flags=() @PREFIX@_kind=()
declare -gA @PREFIX@_values=()
@TABLES@

# The kind of flag $2 in command $1, or of the top level's flag of that name (accepted after a
# command too).
@PREFIX@_kind_of() {
  local kind=${@PREFIX@_kind["$1|$2"]-}
  [[ -z $kind ]] && kind=${@PREFIX@_kind[".|$2"]-}
  echo "$kind"
}

# Fills COMPREPLY with the words of $1 that start with $2, each after prefix $3.
@PREFIX@_words() {
  local IFS=$' \t\n'
  mapfile -t COMPREPLY < <(compgen -P "$3" -W "$1" -- "$2")
}

# A comma-separated list (--variants one_stage,la<TAB>): completes its last item.
@PREFIX@_list() {
  local items=$1 cur=$2 head=$3
  if [[ $cur == *,* ]]; then
    head+=${cur%,*},
    cur=${cur##*,}
  fi
  @PREFIX@_words "$items" "$cur" "$head"
  # No space after an item: another may follow.
  compopt -o nospace 2>/dev/null
}

# Completes the value $3 of flag $2 of command $1, each completion after prefix $4.
@PREFIX@_value() {
  local key="$1|$2" values
  [[ -z ${@PREFIX@_kind[$key]-} ]] && key=".|$2"
  values=${@PREFIX@_values[$key]-}
  case "$(@PREFIX@_kind_of "$1" "$2")" in
    words) @PREFIX@_words "$values" "$3" "$4" ;;
    list) @PREFIX@_list "$values" "$3" "$4" ;;
    file)
      compopt -o filenames 2>/dev/null
      mapfile -t COMPREPLY < <(compgen -P "$4" -f -- "$3")
      ;;
    dir)
      compopt -o filenames 2>/dev/null
      mapfile -t COMPREPLY < <(compgen -P "$4" -d -- "$3")
      ;;
  esac
}

# The command of the line before the cursor ("." for none, "baseline set"): the words that are
# neither flags nor their values, read from COMP_LINE split at blanks only, as bash's words break
# also at "=" and ":" (--server=host:50051). Aliases resolved.
@PREFIX@_command() {
  local -a words
  read -ra words <<<"${COMP_LINE:0:COMP_POINT}"
  [[ ${COMP_LINE:0:COMP_POINT} == *[[:space:]] ]] && words+=("")
  local command=. i word next
  for ((i = 1; i + 1 < ${#words[@]}; i++)); do
    word=${words[i]}
    if [[ $word == -* ]]; then
      [[ $word != *=* && $(@PREFIX@_kind_of "$command" "$word") != switch ]] && ((i++))
      continue
    fi
    [[ " ${@PREFIX@_commands[$command]-} " == *" $word "* ]] || continue
    if [[ $command == . ]]; then next=$word; else next="$command $word"; fi
    command=${@PREFIX@_alias[$next]-$next}
  done
  echo "$command"
}

@PREFIX@() {
  COMPREPLY=()
  local cur=${COMP_WORDS[COMP_CWORD]} prev="" before="" command
  ((COMP_CWORD > 1)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
  ((COMP_CWORD > 2)) && before=${COMP_WORDS[COMP_CWORD - 2]}
  command=$(@PREFIX@_command)
  # The flag whose value is completed: "--flag value", "--flag=value" (one word when "=" is no
  # word break; bash then replaces the whole word), "--flag = value" (when it is, as by default).
  if [[ $cur == --*=* ]]; then
    @PREFIX@_value "$command" "${cur%%=*}" "${cur#*=}" "${cur%%=*}="
  elif [[ $cur == = && $prev == --* ]]; then
    @PREFIX@_value "$command" "$prev" "" ""
  elif [[ $prev == = && $before == --* ]]; then
    @PREFIX@_value "$command" "$before" "$cur" ""
  elif [[ $cur != -* && $prev == -* && $(@PREFIX@_kind_of "$command" "$prev") != switch ]]; then
    @PREFIX@_value "$command" "$prev" "$cur" ""
  elif [[ $cur == -* ]]; then
    local flags=${@PREFIX@_flags[.]}
    [[ $command != . ]] && flags+=" ${@PREFIX@_flags[$command]}"
    @PREFIX@_words "$flags" "$cur" ""
  else
    @PREFIX@_words "${@PREFIX@_commands[$command]-}" "$cur" ""
  fi
  return 0
}

complete -F @PREFIX@ @PROGRAM@
