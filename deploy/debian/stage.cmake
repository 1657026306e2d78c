# CPACK_PRE_BUILD_SCRIPTS of cmake/ColltestPackage.cmake: runs once CPack has installed every
# component into its staging directory (<CPACK_TEMPORARY_DIRECTORY>/<component>/), before the
# .debs are made. It adds what a Debian package carries beyond `cmake --install`:
#   - etc/colltest, installed under the prefix, moved from /usr/etc to /etc (a conffile of the
#     colltest package: deploy/debian/colltest/conffiles)
#   - man pages compressed with gzip -9n, as Debian policy asks
#   - /usr/share/doc/<package>/copyright (deploy/debian/copyright, DEP-5) and changelog.gz
#   - /usr/share/lintian/overrides/<package> from deploy/debian/<component>/lintian-overrides
set(debian_dir ${CPACK_COLLTEST_DEBIAN_DIR})
set(prefix ${CPACK_PACKAGING_INSTALL_PREFIX})
# The changelog's date: now, or SOURCE_DATE_EPOCH where the build sets it (reproducible builds).
string(TIMESTAMP changelog_date "%a, %d %b %Y %H:%M:%S +0000" UTC)

function(gzip_best file)
  execute_process(COMMAND gzip -9nf ${file} COMMAND_ERROR_IS_FATAL ANY)
endfunction()

foreach(component IN LISTS CPACK_COMPONENTS_ALL)
  string(TOUPPER ${component} upper)
  set(package ${CPACK_DEBIAN_${upper}_PACKAGE_NAME})
  set(root ${CPACK_TEMPORARY_DIRECTORY}/${component})
  if(NOT package OR NOT IS_DIRECTORY ${root})
    message(FATAL_ERROR "stage.cmake: no package name or staging directory for ${component}")
  endif()

  if(IS_DIRECTORY ${root}${prefix}/etc)
    file(RENAME ${root}${prefix}/etc ${root}/etc)
  endif()

  file(GLOB pages ${root}${prefix}/share/man/man*/*)
  foreach(page IN LISTS pages)
    if(NOT page MATCHES "\\.gz$")
      gzip_best(${page})
    endif()
  endforeach()

  set(doc ${root}${prefix}/share/doc/${package})
  file(MAKE_DIRECTORY ${doc})
  file(COPY_FILE ${debian_dir}/copyright ${doc}/copyright)
  # A native package's changelog (changelog.gz). The project keeps no release notes, so the one
  # entry says which version this is.
  file(WRITE ${doc}/changelog
       "colltest (${CPACK_PACKAGE_VERSION}) UNRELEASED; urgency=medium\n\n"
       "  * colltest ${CPACK_PACKAGE_VERSION}, packaged from its source tree.\n\n"
       " -- ${CPACK_DEBIAN_PACKAGE_MAINTAINER}  ${changelog_date}\n")
  gzip_best(${doc}/changelog)

  if(EXISTS ${debian_dir}/${component}/lintian-overrides)
    file(MAKE_DIRECTORY ${root}${prefix}/share/lintian/overrides)
    file(COPY_FILE ${debian_dir}/${component}/lintian-overrides
         ${root}${prefix}/share/lintian/overrides/${package})
  endif()
endforeach()
