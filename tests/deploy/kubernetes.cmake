# deploy/kubernetes: the manifests parse, agree with the binaries' flags and with each other, and
# the committed renderings (colltest-cuda.yaml, colltest-rocm.yaml) match their overlays.
# Needs the built colltestd and colltest (it reads their --help); no cluster.
add_test(NAME deploy.kubernetes
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/kubernetes_test.py
                 --bin-dir ${CMAKE_RUNTIME_OUTPUT_DIRECTORY})
set_tests_properties(deploy.kubernetes PROPERTIES LABELS deploy TIMEOUT 300)
