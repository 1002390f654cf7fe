# `cmake --install` and `cpack -G DEB`: included at the end of the top-level CMakeLists.txt, once every target
# exists. Installed: uroce and uroced (bin/), the provider where Debian's libibverbs looks for providers, its
# .driver file, the preload shim, the `uroce exp --realtime` load generator and the docs. Tests and benchmarks are not
# installed.
#
# Layout under a prefix P (the same for every prefix, so `uroce` finds its files relative to itself):
#   P/bin/uroce, P/bin/uroced
#   P/lib/<multiarch>/libibverbs/liburoce-rdmav34.so   (Debian's libibverbs 44 dlopens providers from
#                                                        /usr/lib/<multiarch>/libibverbs/lib<name>-rdmav34.so)
#   P/lib/<multiarch>/uroce/liburoce-preload.so
#   P/libexec/uroce/uroce-traffic
#   P/share/doc/uroce/README.md, docs/*.md
#   P/share/man/man1/uroce.1, uroced.1
#   P/share/bash-completion/completions/uroce, uroced
#   /etc/libibverbs.d/uroce.driver when P is /usr, else P/etc/libibverbs.d/uroce.driver
include(GNUInstallDirs)

# The multiarch directory whatever the prefix: GNUInstallDirs picks lib/<multiarch> only for the prefix /usr,
# and a package built from a tree configured for /usr/local must still put the provider where libibverbs
# looks. Relative to the prefix; compiled into `uroce` (tools/uroce/paths.cc).
if(CMAKE_LIBRARY_ARCHITECTURE)
  set(_uroce_libdir_default lib/${CMAKE_LIBRARY_ARCHITECTURE})
else()
  set(_uroce_libdir_default ${CMAKE_INSTALL_LIBDIR})
endif()
set(UROCE_INSTALL_LIBDIR ${_uroce_libdir_default} CACHE STRING
    "Library directory relative to the install prefix (provider in <it>/libibverbs, shim in <it>/uroce)")
if(IS_ABSOLUTE "${UROCE_INSTALL_LIBDIR}")
  message(FATAL_ERROR "UROCE_INSTALL_LIBDIR must be relative to the prefix (uroce finds it from bin/)")
endif()
target_compile_definitions(uroce_tools PRIVATE UROCE_INSTALL_LIBDIR="${UROCE_INSTALL_LIBDIR}")

install(TARGETS uroce uroced RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS uroce_provider LIBRARY DESTINATION ${UROCE_INSTALL_LIBDIR}/libibverbs NAMELINK_SKIP)
install(TARGETS uroce_preload LIBRARY DESTINATION ${UROCE_INSTALL_LIBDIR}/uroce NAMELINK_SKIP)
# The af_xdp port's XDP program, next to the shim where `uroce run --xdp` looks (built only with libbpf-dev).
if(TARGET uroce_xdp_prog)
  install(FILES ${PROJECT_BINARY_DIR}/provider/shim/uroce_xdp.o DESTINATION ${UROCE_INSTALL_LIBDIR}/uroce)
endif()
install(TARGETS uroce-traffic RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/uroce)
file(GLOB _uroce_docs ${PROJECT_SOURCE_DIR}/docs/*.md)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${_uroce_docs} DESTINATION ${CMAKE_INSTALL_DOCDIR})
# The licence, also as Debian's doc/<package>/copyright.
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME copyright)
install(FILES ${PROJECT_SOURCE_DIR}/docs/man/uroce.1 ${PROJECT_SOURCE_DIR}/docs/man/uroced.1
        DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
# bash-completion loads completions/<command> when <command> is first completed: one file, under both names.
foreach(_uroce_cmd uroce uroced)
  install(FILES ${PROJECT_SOURCE_DIR}/scripts/completion/uroce.bash
          DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME ${_uroce_cmd})
endforeach()

# The .driver file is written at install time, for the prefix actually installed to (`cmake --install
# --prefix` may differ from the configured one). Under /usr it goes to /etc/libibverbs.d, the directory
# libibverbs reads, and names "uroce": the provider is in libibverbs' own provider directory. Under any other
# prefix libibverbs never reads P/etc, so the file names the provider by absolute path; copying it into
# /etc/libibverbs.d makes every program on the host see the device. `uroce run` reads no .driver file: it
# names the provider in RDMAV_DRIVERS. DESTDIR (and CPack, which stages with DESTDIR) is honoured by
# file(INSTALL).
install(CODE "set(_uroce_libdir \"${UROCE_INSTALL_LIBDIR}\")
set(_uroce_stage \"${PROJECT_BINARY_DIR}/install-driver\")")
install(CODE [[
if(CMAKE_INSTALL_PREFIX MATCHES "^/usr/?$")
  set(_uroce_driver_dir /etc/libibverbs.d)
  set(_uroce_driver_name uroce)
else()
  set(_uroce_driver_dir ${CMAKE_INSTALL_PREFIX}/etc/libibverbs.d)
  set(_uroce_driver_name ${CMAKE_INSTALL_PREFIX}/${_uroce_libdir}/libibverbs/liburoce)
endif()
# A staging file per destination: installs into two prefixes at once must not share it.
string(MD5 _uroce_key "$ENV{DESTDIR}${_uroce_driver_dir}")
file(WRITE ${_uroce_stage}/${_uroce_key}/uroce.driver "driver ${_uroce_driver_name}\n")
file(INSTALL DESTINATION ${_uroce_driver_dir} TYPE FILE FILES ${_uroce_stage}/${_uroce_key}/uroce.driver)
]])

# cpack -G DEB in the build directory: uroce_<version>_<arch>.deb, installing under /usr (DESTDIR staging,
# so the driver file lands in /etc). dpkg-shlibdeps adds what the installed ELF files link (libibverbs1,
# liburing2, libisal2, the librte-* libraries, libstdc++6, ...). DPDK loads its poll-mode drivers as
# plugins, which no ELF file names: memif (the host switch's ports), af_packet and the ring mempool are
# needed by default, af_xdp and tap only for those port types.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME uroce)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "userspace RoCEv2 transport as an rdma-core provider (no kernel module)")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGE_CONTACT "uroce developers <uroce@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_INSTALL_PREFIX /usr)  # the CMAKE_INSTALL_PREFIX of the staged install (DESTDIR)
set(CPACK_SET_DESTDIR ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_STRIP_FILES ON)  # as Debian packages are; the build tree keeps the debug info
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libibverbs1 (>= 44), librte-net-memif23, librte-net-af-packet23, librte-mempool-ring23")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "ibverbs-utils, rdmacm-utils, librte-net-af-xdp23, librte-net-tap23")
include(CPack)
