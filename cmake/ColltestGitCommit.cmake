# colltest_git_commit(VAR LENGTH): `git rev-parse --short=LENGTH HEAD` of the source tree at
# configure time, with "-dirty" when the tree has uncommitted changes then; "unknown" outside a
# git checkout. Taken at configure time, so it goes stale when commits or edits follow without a
# reconfigure: acceptable for a label that says where a binary came from, and cheaper than a step
# that runs git on every build. --no-optional-locks: configuring must not write the index of a
# tree others are editing.
function(colltest_git_commit var length)
  set(commit "unknown")
  execute_process(
    COMMAND git --no-optional-locks -C ${PROJECT_SOURCE_DIR} rev-parse --short=${length} HEAD
    RESULT_VARIABLE rc OUTPUT_VARIABLE head OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(rc EQUAL 0 AND NOT head STREQUAL "")
    set(commit "${head}")
    execute_process(
      COMMAND git --no-optional-locks -C ${PROJECT_SOURCE_DIR} diff --quiet HEAD
      RESULT_VARIABLE dirty OUTPUT_QUIET ERROR_QUIET)
    if(dirty EQUAL 1)
      string(APPEND commit "-dirty")
    endif()
  endif()
  set(${var} "${commit}" PARENT_SCOPE)
endfunction()
