# `cmake --install` layout (docs/install.md), GNU directories under the prefix:
#   bin/                                 colltestd, colltest, colltest-worker
#   lib/colltest/                        libcolltest_civetweb_ssl.so, private to colltestd
#   share/colltest/tune/                 the tune tables `auto` dispatches with
#   share/doc/colltest/                  README.md and docs/ (the README's links stay valid)
#   share/man/man1/                      a page per program, made with help2man at build time
#   share/bash-completion/completions/   a completion per program (deploy/completions)
#   lib/python3/dist-packages/           the Python client package colltest_client
#   share/colltest/examples/             the Python client's example (docs/python-client.md)
# Two install components, one .deb each (cmake/ColltestPackage.cmake): `colltest` (service, client
# and their files) and `worker`. Only what COLLTEST_ROOMS built is installed.
include(GNUInstallDirs)

# A fixed lib/, not CMAKE_INSTALL_LIBDIR (lib/x86_64-linux-gnu under /usr): the TLS shim is no
# public library, and colltestd finds it at <its bin>/../lib/colltest (http/openssl_compat.cc).
set(COLLTEST_INSTALL_PRIVATE_LIBDIR lib/colltest)
set(COLLTEST_INSTALL_COMPLETIONSDIR ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)

# help2man runs each program's --help (and every subcommand's) once it is linked. Without help2man
# (scripts/setup.sh installs it) the build goes on and the tree has no man pages.
find_program(COLLTEST_HELP2MAN help2man)
if(NOT COLLTEST_HELP2MAN)
  message(WARNING "colltest: help2man not found: no man pages (scripts/setup.sh installs it)")
endif()
function(colltest_install_man_page program component summary)
  if(NOT COLLTEST_HELP2MAN)
    return()
  endif()
  set(script ${PROJECT_SOURCE_DIR}/cmake/colltest_man_page.sh)
  set(page ${CMAKE_BINARY_DIR}/man/${program}.1)
  add_custom_command(
    OUTPUT ${page}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/man
    COMMAND sh ${script} $<TARGET_FILE_DIR:${program}> ${program} ${PROJECT_VERSION} ${summary}
            ${page}
    DEPENDS ${program} ${script}
    COMMENT "Writing the man page ${program}.1"
    VERBATIM)
  add_custom_target(man_${program} ALL DEPENDS ${page})
  install(FILES ${page} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT ${component})
endfunction()

# One program: its binary, man page and bash completion.
function(colltest_install_program program component summary)
  if(NOT TARGET ${program})
    return()
  endif()
  install(TARGETS ${program} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT ${component})
  colltest_install_man_page(${program} ${component} "${summary}")
  install(FILES ${PROJECT_SOURCE_DIR}/deploy/completions/${program}
          DESTINATION ${COLLTEST_INSTALL_COMPLETIONSDIR} COMPONENT ${component})
endfunction()

colltest_install_program(colltestd colltest
                         "service that tests fused all-reduce + RMSNorm collective kernels")
colltest_install_program(colltest colltest
                         "command-line client of colltestd: sweeps, history, health, tune")
colltest_install_program(colltest-worker worker "one rank of colltestd's collective cases")

if(TARGET colltestd)
  install(TARGETS colltest_civetweb_ssl LIBRARY DESTINATION ${COLLTEST_INSTALL_PRIVATE_LIBDIR}
          COMPONENT colltest)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/tune/ DESTINATION ${CMAKE_INSTALL_DATADIR}/colltest/tune
          COMPONENT colltest)
  # The service (docs/deploy.md): the unit and its system user where systemd looks under /usr
  # (Debian 12 has a merged /usr), and the config file as an example to copy to /etc/colltest.
  install(FILES ${PROJECT_SOURCE_DIR}/deploy/systemd/colltestd.service
          DESTINATION lib/systemd/system COMPONENT colltest)
  install(FILES ${PROJECT_SOURCE_DIR}/deploy/systemd/colltest.sysusers
          DESTINATION lib/sysusers.d RENAME colltest.conf COMPONENT colltest)
  install(FILES ${PROJECT_SOURCE_DIR}/deploy/systemd/colltestd.toml
          DESTINATION ${CMAKE_INSTALL_DATADIR}/colltest COMPONENT colltest)
endif()

if(TARGET colltestd OR TARGET colltest)
  file(GLOB colltest_docs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/*.md
       ${PROJECT_SOURCE_DIR}/docs/*.png)
  install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR}
          COMPONENT colltest)
  install(FILES ${colltest_docs} DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs COMPONENT colltest)
  install(FILES ${PROJECT_SOURCE_DIR}/client/schema/colltest-output.schema.json
          DESTINATION ${CMAKE_INSTALL_DATADIR}/colltest/schema COMPONENT colltest)
endif()

# The Python client package where Debian's python3 finds it (lib/python3/dist-packages, so that
# `python3 -m colltest_client` works with the prefix /usr), with its example. Not under a
# versioned python3.X: the package is pure Python and runs on any python3 of the distribution.
if(TARGET colltest_python)
  install(DIRECTORY ${COLLTEST_PYTHON_PACKAGE_DIR}/
          DESTINATION lib/python3/dist-packages/colltest_client COMPONENT colltest
          FILES_MATCHING PATTERN "*.py" PATTERN "*.pyi" PATTERN "__pycache__" EXCLUDE)
  install(PROGRAMS ${PROJECT_SOURCE_DIR}/python/examples/sweep_table.py
          DESTINATION ${CMAKE_INSTALL_DATADIR}/colltest/examples COMPONENT colltest)
endif()
