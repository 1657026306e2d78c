# `cmake --install` layout (docs/install.md), GNU directories under the prefix:
#   bin/                                 colltestd, colltest, colltest-worker
#   lib/colltest/                        libcolltest_civetweb_ssl.so, private to colltestd
#   share/colltest/tune/                 the tune tables `auto` dispatches with
#   share/doc/colltest/                  README.md and docs/ (the README's links stay valid)
#   share/man/man1/                      a page per program, made with help2man at build time
#   share/bash-completion/completions/   a bash completion per program (deploy/completions)
#   share/zsh/vendor-completions/        a zsh completion per program, _PROGRAM
#   share/fish/vendor_completions.d/     a fish completion per program, PROGRAM.fish
#   lib/python3/dist-packages/           the Python client package colltest_client
#   share/colltest/examples/             the Python client's example (docs/python-client.md)
#   lib/systemd/system/, lib/sysusers.d/ the unit and its system user
#   etc/colltest/colltestd.toml          colltestd's config; /etc/colltest in the package (a conffile)
# Install components, one .deb each (cmake/ColltestPackage.cmake): `colltest` (the service and its
# files), `client` (the CLI, the Python client and their files), `worker` and `dev`. Only what
# COLLTEST_ROOMS built is installed.
include(GNUInstallDirs)

# A fixed lib/, not CMAKE_INSTALL_LIBDIR (lib/x86_64-linux-gnu under /usr): the TLS shim is no
# public library, and colltestd finds it at <its bin>/../lib/colltest (http/openssl_compat.cc).
set(COLLTEST_INSTALL_PRIVATE_LIBDIR lib/colltest)
# The shell completions, written from each program's --help by deploy/completions/generate.py once
# the program is linked: the flags have one source, the program's own flag table. Without python3
# (scripts/setup.sh installs it) the build goes on and the tree has no completions.
find_program(COLLTEST_PYTHON3 python3)
if(NOT COLLTEST_PYTHON3)
  message(WARNING "colltest: python3 not found: no shell completions (scripts/setup.sh installs it)")
endif()
function(colltest_install_completions program component)
  if(NOT COLLTEST_PYTHON3)
    return()
  endif()
  set(generator ${PROJECT_SOURCE_DIR}/deploy/completions/generate.py)
  set(out ${CMAKE_BINARY_DIR}/completions)
  set(bash ${out}/bash/${program})
  set(zsh ${out}/zsh/_${program})
  set(fish ${out}/fish/${program}.fish)
  add_custom_command(
    OUTPUT ${bash} ${zsh} ${fish}
    COMMAND ${COLLTEST_PYTHON3} ${generator} $<TARGET_FILE:${program}> ${out}
    DEPENDS ${program} ${generator} ${PROJECT_SOURCE_DIR}/deploy/completions/engine.bash
            ${PROJECT_SOURCE_DIR}/deploy/completions/engine.zsh
    COMMENT "Writing the bash, zsh and fish completions of ${program}"
    VERBATIM)
  add_custom_target(completions_${program} ALL DEPENDS ${bash} ${zsh} ${fish})
  install(FILES ${bash} DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
          COMPONENT ${component})
  install(FILES ${zsh} DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions
          COMPONENT ${component})
  install(FILES ${fish} DESTINATION ${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d
          COMPONENT ${component})
endfunction()

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

# One program: its binary, man page and shell completions.
function(colltest_install_program program component summary)
  if(NOT TARGET ${program})
    return()
  endif()
  install(TARGETS ${program} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT ${component})
  colltest_install_man_page(${program} ${component} "${summary}")
  colltest_install_completions(${program} ${component})
endfunction()

colltest_install_program(colltestd colltest
                         "service that tests fused all-reduce + RMSNorm collective kernels")
colltest_install_program(colltest client
                         "command-line client of colltestd: sweeps, history, health, tune")
colltest_install_program(colltest-worker worker "one rank of colltestd's collective cases")

if(TARGET colltestd)
  install(TARGETS colltest_civetweb_ssl LIBRARY DESTINATION ${COLLTEST_INSTALL_PRIVATE_LIBDIR}
          COMPONENT colltest)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/tune/ DESTINATION ${CMAKE_INSTALL_DATADIR}/colltest/tune
          COMPONENT colltest)
  # The service (docs/deploy.md): the unit and its system user where systemd looks under /usr
  # (Debian 12 has a merged /usr), and the config file the unit's --config reads. It goes to
  # <prefix>/etc/colltest, so that `cmake --install --prefix P` stays inside P; the package moves
  # it from /usr/etc to /etc/colltest, where it is a conffile (deploy/debian/stage.cmake).
  install(FILES ${PROJECT_SOURCE_DIR}/deploy/systemd/colltestd.service
          DESTINATION lib/systemd/system COMPONENT colltest)
  install(FILES ${PROJECT_SOURCE_DIR}/deploy/systemd/colltest.sysusers
          DESTINATION lib/sysusers.d RENAME colltest.conf COMPONENT colltest)
  install(FILES ${PROJECT_SOURCE_DIR}/deploy/systemd/colltestd.toml
          DESTINATION ${CMAKE_INSTALL_SYSCONFDIR}/colltest COMPONENT colltest)
endif()

# The docs go with the service, or with the client where the build has no colltestd.
if(TARGET colltestd)
  set(colltest_docs_component colltest)
else()
  set(colltest_docs_component client)
endif()
if(TARGET colltestd OR TARGET colltest)
  file(GLOB colltest_docs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/*.md
       ${PROJECT_SOURCE_DIR}/docs/*.png)
  install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR}
          COMPONENT ${colltest_docs_component})
  install(FILES ${colltest_docs} DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs
          COMPONENT ${colltest_docs_component})
endif()
if(TARGET colltest)
  install(FILES ${PROJECT_SOURCE_DIR}/client/schema/colltest-output.schema.json
          DESTINATION ${CMAKE_INSTALL_DATADIR}/colltest/schema COMPONENT client)
endif()

# The Python client package where Debian's python3 finds it (lib/python3/dist-packages, so that
# `python3 -m colltest_client` works with the prefix /usr), with its example. Not under a
# versioned python3.X: the package is pure Python and runs on any python3 of the distribution.
if(TARGET colltest_python)
  install(DIRECTORY ${COLLTEST_PYTHON_PACKAGE_DIR}/
          DESTINATION lib/python3/dist-packages/colltest_client COMPONENT client
          FILES_MATCHING PATTERN "*.py" PATTERN "*.pyi" PATTERN "py.typed"
                          PATTERN "__pycache__" EXCLUDE)
  install(PROGRAMS ${PROJECT_SOURCE_DIR}/python/examples/sweep_table.py
          DESTINATION ${CMAKE_INSTALL_DATADIR}/colltest/examples COMPONENT client)
endif()
