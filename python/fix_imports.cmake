# cmake -DSTAGE=<protoc's colltest/v1 output> -DPACKAGE_DIR=<colltest_client> -P fix_imports.cmake
#
# Moves the generated modules into the package and makes them name it. protoc writes them for a
# top-level package `colltest.v1` (the proto's path): the gRPC module says
# `from colltest.v1 import colltest_pb2`, and the messages' __module__ is colltest.v1.colltest_pb2.
# Both are rewritten here to the package's own module, rather than putting the generated
# directory on sys.path at import time: sys.path would make a top-level `colltest` package visible
# to the whole process (shadowing, or shadowed by, anything else of that name, depending on the
# order of sys.path), while the rewritten package is self-contained and works wherever it is
# installed. Each rewritten text must occur exactly once, so that a generator writing it
# differently fails the build here instead of the import at run time.

function(rewrite input output from to)
  file(READ ${input} text)
  string(FIND "${text}" "${from}" first)
  string(FIND "${text}" "${from}" last REVERSE)
  if(first EQUAL -1 OR NOT first EQUAL last)
    message(FATAL_ERROR "${input}: expected exactly one '${from}'; the generator changed, "
                        "update python/fix_imports.cmake")
  endif()
  string(REPLACE "${from}" "${to}" text "${text}")
  file(WRITE ${output}.tmp "${text}")
  file(RENAME ${output}.tmp ${output})
endfunction()

rewrite(${STAGE}/colltest_pb2_grpc.py ${PACKAGE_DIR}/colltest_pb2_grpc.py
        "from colltest.v1 import colltest_pb2 as" "from . import colltest_pb2 as")
rewrite(${STAGE}/colltest_pb2.py ${PACKAGE_DIR}/colltest_pb2.py
        "'colltest.v1.colltest_pb2'" "'colltest_client.colltest_pb2'")
file(COPY_FILE ${STAGE}/colltest_pb2.pyi ${PACKAGE_DIR}/colltest_pb2.pyi)
