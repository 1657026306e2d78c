# cmake -DPACKAGE_DIR=<build's colltest_client> -DKEEP=<files the build writes> -P prune_stale.cmake
#
# Removes the modules of the package that the build no longer writes (a module deleted or renamed
# in the sources), and any __pycache__, so that the installed package and the wheel hold exactly
# the current modules.
cmake_policy(SET CMP0057 NEW)
string(REPLACE "|" ";" KEEP "${KEEP}")
file(GLOB present ${PACKAGE_DIR}/*.py ${PACKAGE_DIR}/*.pyi ${PACKAGE_DIR}/py.typed)
foreach(file IN LISTS present)
  if(NOT file IN_LIST KEEP)
    message(STATUS "colltest_client: removing the stale ${file}")
    file(REMOVE ${file})
  endif()
endforeach()
file(REMOVE_RECURSE ${PACKAGE_DIR}/__pycache__)
