# package.cmake - what `cmake --install` leaves for other builds to find,
# and the Debian packages (cpack -G DEB).
#
# find_package(rq): rqConfig.cmake and rqConfigVersion.cmake under
# LIBDIR/cmake/rq, with the imported targets rq::rq, rq::rq_static and
# rq::rqdsm, rq::rqtag (cmake/rqConfig.cmake.in).
include(CMakePackageConfigHelpers)
set(RQ_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/rq)
install(EXPORT rqTargets NAMESPACE rq:: DESTINATION ${RQ_CMAKE_DIR} COMPONENT dev)
configure_package_config_file(cmake/rqConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/rqConfig.cmake
                              INSTALL_DESTINATION ${RQ_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/rqConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/rqConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/rqConfigVersion.cmake
        DESTINATION ${RQ_CMAKE_DIR} COMPONENT dev)

# Debian packages, one per component, for the prefix this tree was
# configured with (-DCMAKE_INSTALL_PREFIX=/usr for a system package):
#   librq0       the shared libraries (librq.so.0, librqdsm.so.0, librqtag.so.0)
#   librq-dev    headers, librq.a, the .so links, pkg-config and CMake files
#   librq-tools  rqrun, rqinfo, rqbench (and its MPI/UCX peers), rqload,
#                rqgang, the man pages and docs
#   librq-apps   the applications and apps/run.sh (libexec/librq/apps)
set(CPACK_PACKAGE_NAME librq)
set(CPACK_PACKAGE_VENDOR "librq")
set(CPACK_PACKAGE_CONTACT "librq maintainers <librq@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Active messages, remote queues and global-address operations for parallel programs")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL lib dev tools apps)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_LIB_PACKAGE_NAME librq0)
set(CPACK_DEBIAN_DEV_PACKAGE_NAME librq-dev)
set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME librq-tools)
set(CPACK_DEBIAN_APPS_PACKAGE_NAME librq-apps)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_APPS_PACKAGE_SECTION science)
# Runtime dependencies named by hand: dpkg-shlibdeps would look for
# librq.so.0 in the system's packages, not in librq0 being built.
set(rq_lib_deps "libc6")
if(RQ_HAVE_UCX)
  string(APPEND rq_lib_deps ", libucx0")
endif()
if(RQ_HAVE_PMIX)
  string(APPEND rq_lib_deps ", libpmix2")
endif()
set(CPACK_DEBIAN_LIB_PACKAGE_DEPENDS "${rq_lib_deps}")
set(rq_same "(= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "librq0 ${rq_same}")
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "librq0 ${rq_same}")
set(CPACK_DEBIAN_APPS_PACKAGE_DEPENDS "librq0 ${rq_same}, librq-tools ${rq_same}")
if(MPI_C_FOUND)
  string(APPEND CPACK_DEBIAN_APPS_PACKAGE_DEPENDS ", openmpi-bin")
endif()
set(CPACK_COMPONENT_LIB_DESCRIPTION "librq shared libraries")
set(CPACK_COMPONENT_DEV_DESCRIPTION "librq development files: headers, static library, pkg-config and CMake files")
set(CPACK_COMPONENT_TOOLS_DESCRIPTION "librq tools: rqrun, rqinfo, rqbench, rqload, rqgang; manual pages")
set(CPACK_COMPONENT_APPS_DESCRIPTION "librq applications beside their MPI versions (libexec/librq/apps)")
include(CPack)
