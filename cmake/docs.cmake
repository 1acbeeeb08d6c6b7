# The man page and the bash completion, generated from the built binary's --help so that they
# never disagree with it (the help text is the documentation of every command and flag):
#   man          ${CMAKE_BINARY_DIR}/man/gputriage.1 and gputriage.1.gz (scripts/gen-man, help2man)
#   completion   ${CMAKE_BINARY_DIR}/completion/gputriage (scripts/gen-completion, bash + awk only)
# Both are part of `all` and installed (share/man/man1, share/bash-completion/completions) when
# GPUTRIAGE_DOCS is ON (`release`, `tarball`); otherwise they build on request only. They run the
# binary at build time, so they are left out of sanitizer and fuzzer builds.

if(GPUTRIAGE_SANITIZE OR GPUTRIAGE_FUZZ)
  return()
endif()

if(GPUTRIAGE_DOCS)
  set(gt_docs_all ALL)
else()
  set(gt_docs_all "")
endif()

set(GT_COMPLETION ${CMAKE_BINARY_DIR}/completion/gputriage)
add_custom_command(
  OUTPUT ${GT_COMPLETION}
  COMMAND ${CMAKE_SOURCE_DIR}/scripts/gen-completion $<TARGET_FILE:gputriage> ${GT_COMPLETION}
  DEPENDS gputriage ${CMAKE_SOURCE_DIR}/scripts/gen-completion
  COMMENT "Generating bash completion from gputriage --help"
  VERBATIM)
add_custom_target(completion ${gt_docs_all} DEPENDS ${GT_COMPLETION})

# help2man is in `scripts/install-deps --package`, not --build: it brings Perl (54 MiB measured on a
# Debian 12 base) that building and running the tool do not need.
find_program(GT_HELP2MAN help2man)
set(GT_MAN_PAGE ${CMAKE_BINARY_DIR}/man/gputriage.1)
if(GT_HELP2MAN)
  add_custom_command(
    OUTPUT ${GT_MAN_PAGE} ${GT_MAN_PAGE}.gz
    COMMAND ${CMAKE_COMMAND} -E env HELP2MAN=${GT_HELP2MAN}
            ${CMAKE_SOURCE_DIR}/scripts/gen-man $<TARGET_FILE:gputriage> ${GT_MAN_PAGE}
    DEPENDS gputriage ${CMAKE_SOURCE_DIR}/scripts/gen-man
    COMMENT "Generating gputriage.1 from gputriage --help (help2man)"
    VERBATIM)
  add_custom_target(man ${gt_docs_all} DEPENDS ${GT_MAN_PAGE} ${GT_MAN_PAGE}.gz)
elseif(GPUTRIAGE_DOCS)
  message(FATAL_ERROR "GPUTRIAGE_DOCS needs help2man for the man page (scripts/install-deps --package)")
else()
  add_custom_target(man COMMAND ${CMAKE_COMMAND} -E echo "man: help2man not found (scripts/install-deps --package)"
                    COMMAND false)
endif()

if(GPUTRIAGE_DOCS)
  # Debian installs man pages compressed (gzip -9n, no timestamp: reproducible).
  install(FILES ${GT_MAN_PAGE}.gz DESTINATION share/man/man1)
  install(FILES ${GT_COMPLETION} DESTINATION share/bash-completion/completions)
endif()
