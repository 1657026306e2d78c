# `cpack -G DEB` in the build directory (docs/install.md): a .deb per install component of
# cmake/ColltestInstall.cmake, for Debian 12, installed under /usr.
#   colltest                     colltestd as a service: its unit (installed disabled), system user,
#                                conffile /etc/colltest/colltestd.toml, the TLS shim, tune tables,
#                                docs; Depends on colltest-worker of the same version and Recommends
#                                colltest-client (colltestd never runs the CLI)
#   colltest-client              colltest (the CLI), its man page and completions, the Python client
#                                package; no worker, no daemon
#   colltest-worker-<backend>    colltest-worker built for one backend (cpu, cuda or hip);
#                                Provides/Conflicts/Replaces the virtual colltest-worker, so that
#                                exactly one worker is installed and another backend's replaces it
#   colltest-dev                 the kernel plugin ABI header and its CMake package
#                                (docs/plugins.md); Architecture: all
# The libraries' packages (libgrpc++1.51, libprotobuf32, libsqlite3-0, libcivetweb1, ...) come from
# dpkg-shlibdeps, which reads the binaries. deploy/debian/ holds what Debian's conventions add to
# the installed files: maintainer scripts and conffiles (deploy/debian/<component>/), the
# copyright file and the lintian overrides; deploy/debian/stage.cmake puts them into the staged
# packages. `lintian` passes on every package (tests/packaging/lintian_test.py).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME colltest)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# The project names no maintainer: the default is a reserved example.org address (RFC 2606), never
# a person's. Whoever publishes the packages sets theirs: -DCOLLTEST_PACKAGE_MAINTAINER="Name <a@b>".
set(COLLTEST_PACKAGE_MAINTAINER "colltest authors <colltest@example.org>"
    CACHE STRING "Maintainer field of the .debs and their changelog")
set(CPACK_PACKAGE_CONTACT ${COLLTEST_PACKAGE_MAINTAINER})
set(CPACK_DEBIAN_PACKAGE_MAINTAINER ${CPACK_PACKAGE_CONTACT})
# Every package comes from one source tree; the changelogs name it.
set(CPACK_DEBIAN_PACKAGE_SOURCE colltest)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
# No CPACK_PACKAGE_DESCRIPTION_SUMMARY: CPack would put it above every package's own first line,
# which is the package's summary (CPACK_COMPONENT_<COMPONENT>_DESCRIPTION).
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # NAME_VERSION_ARCH.deb
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# A RelWithDebInfo build is mostly debug sections; the packages carry the stripped binaries.
set(CPACK_STRIP_FILES ON)
# Maintainer scripts from deploy/debian/<component>/ get mode 0755, the other control files 0644.
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# After staging: /usr/etc to /etc, man pages gzipped, copyright, changelog and lintian overrides
# into every package (deploy/debian/stage.cmake reads the COLLTEST_ variables below).
set(CPACK_PRE_BUILD_SCRIPTS ${PROJECT_SOURCE_DIR}/deploy/debian/stage.cmake)
set(CPACK_COLLTEST_DEBIAN_DIR ${PROJECT_SOURCE_DIR}/deploy/debian)

# The worker package is named after the backend it was built for (COLLTEST_GPU off is the cpu
# backend alone).
if(COLLTEST_GPU STREQUAL "off")
  set(colltest_worker_backend cpu)
else()
  set(colltest_worker_backend ${COLLTEST_GPU})
endif()

# colltestd and its workers speak a private protocol: they must come from the same version.
set(colltest_worker_virtual "colltest-worker (= ${PROJECT_VERSION})")

set(CPACK_COMPONENTS_ALL)
if(TARGET colltestd)
  list(APPEND CPACK_COMPONENTS_ALL colltest)
endif()
if(TARGET colltest)
  list(APPEND CPACK_COMPONENTS_ALL client)
endif()
if(TARGET colltest-worker)
  list(APPEND CPACK_COMPONENTS_ALL worker)
endif()
list(APPEND CPACK_COMPONENTS_ALL dev)

set(CPACK_DEBIAN_COLLTEST_PACKAGE_NAME colltest)
# The postinst runs systemd-sysusers, which systemd or the standalone package provides (the
# relation debhelper's dh_installsysusers adds). deb-systemd-helper and deb-systemd-invoke come
# from init-system-helpers, which is Essential.
set(CPACK_DEBIAN_COLLTEST_PACKAGE_DEPENDS
    "${colltest_worker_virtual}, systemd | systemd-standalone-sysusers | systemd-sysusers")
set(CPACK_DEBIAN_COLLTEST_PACKAGE_RECOMMENDS colltest-client)
set(CPACK_DEBIAN_COLLTEST_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/deploy/debian/colltest/conffiles
    ${PROJECT_SOURCE_DIR}/deploy/debian/colltest/postinst
    ${PROJECT_SOURCE_DIR}/deploy/debian/colltest/prerm
    ${PROJECT_SOURCE_DIR}/deploy/debian/colltest/postrm)
set(CPACK_COMPONENT_COLLTEST_DESCRIPTION
    "service that tests fused all-reduce + RMSNorm collective kernels
colltestd runs sweeps of fused all-reduce + RMSNorm kernel variants over the
node's devices, checks every result and keeps a run history. This package
holds colltestd, its systemd unit colltestd.service (installed disabled), the
system user colltest, /etc/colltest/colltestd.toml, the dashboard and JSON API
(--http), the tune tables and the documentation.
It needs one colltest-worker package: colltest-worker-cpu, -cuda or -hip. The
command-line client is in colltest-client.")

set(CPACK_DEBIAN_CLIENT_PACKAGE_NAME colltest-client)
# What the Python client package (colltest_client) runs on; the CLI does not need them, and a
# machine that only runs the CLI (a CI runner, a node problem detector image) goes without.
set(CPACK_DEBIAN_CLIENT_PACKAGE_RECOMMENDS "python3, python3-grpcio, python3-protobuf")
set(CPACK_COMPONENT_CLIENT_DESCRIPTION
    "command-line client of colltestd
colltest starts and follows colltestd's sweeps, reads its run history,
compares runs, checks health and writes tune tables, against a local or remote
colltestd. This package holds colltest, its man page and completions, the JSON
Schema of its output and the Python client package colltest_client. It needs
no worker and no daemon on the machine.")

set(CPACK_DEBIAN_WORKER_PACKAGE_NAME colltest-worker-${colltest_worker_backend})
set(CPACK_DEBIAN_WORKER_PACKAGE_PROVIDES ${colltest_worker_virtual})
set(CPACK_DEBIAN_WORKER_PACKAGE_CONFLICTS colltest-worker)
set(CPACK_DEBIAN_WORKER_PACKAGE_REPLACES colltest-worker)
set(colltest_worker_summary "colltest worker, ${colltest_worker_backend} backend")
set(colltest_worker_body "colltest-worker runs one rank of colltestd's collective cases;
colltestd starts one per device.")
if(colltest_worker_backend STREQUAL "cuda")
  # The CUDA runtime is linked statically (CMAKE_CUDA_RUNTIME_LIBRARY Static); the driver's
  # libcuda.so.1 is loaded at run time and comes with the NVIDIA driver, which no package
  # dependency can pick for the machine.
  set(CPACK_DEBIAN_WORKER_PACKAGE_RECOMMENDS libcuda1)
  string(REPLACE ";" ", sm_" colltest_cuda_archs "sm_${CMAKE_CUDA_ARCHITECTURES}")
  string(APPEND colltest_worker_body "\nThis build runs on NVIDIA GPUs (${colltest_cuda_archs}) and\n"
         "includes the cpu backend. The CUDA runtime is linked in; the NVIDIA\n"
         "driver (libcuda.so.1, e.g. from libcuda1) must be installed.")
  # NCCL linked (worker/backends/gpu/CMakeLists.txt: both found) from a tarball owns no package
  # that dpkg-shlibdeps could name (it warns and leaves it out): libnccl2 is its package in Debian's
  # non-free and in NVIDIA's repository.
  if(COLLTEST_NCCL_LIBRARY AND COLLTEST_NCCL_INCLUDE)
    set(CPACK_DEBIAN_WORKER_PACKAGE_DEPENDS libnccl2)
  endif()
elseif(colltest_worker_backend STREQUAL "hip")
  string(APPEND colltest_worker_body "\nThis build runs on AMD GPUs through Debian's ROCm\n"
         "(libamdhip64) and includes the cpu backend; it needs the amdgpu kernel\n"
         "driver.")
else()
  string(APPEND colltest_worker_body "\nThis build has the cpu backend only: ranks are\n"
         "processes on the host's cores.")
endif()
set(CPACK_COMPONENT_WORKER_DESCRIPTION "${colltest_worker_summary}\n${colltest_worker_body}")

# A header and CMake files: no binary, so one package for every architecture, and nothing for
# dpkg-shlibdeps to read.
set(CPACK_DEBIAN_DEV_PACKAGE_NAME colltest-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_ARCHITECTURE all)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "colltest kernel plugin ABI: header and CMake package
colltest-worker loads fused all-reduce + RMSNorm kernels written elsewhere
from shared libraries that export the versioned struct colltest_kernel_v1 of
<colltest/kernel_plugin.h>, and tests them with colltest's harness.
find_package(colltest) gives the INTERFACE target colltest::kernel_plugin.")

include(CPack)
