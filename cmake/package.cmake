# The Debian package: `cmake --build --preset release --target package` -> build-release/
# gputriage_<version>_amd64.deb with what the install() rules lay under /usr:
#   /usr/bin/gputriage, /usr/bin/gputriage-probe
#   /usr/lib/libgputriage-record.so (run --record) and /usr/lib/libgputriage-audit.so (libs --trace):
#     the binary looks for both at <dir of the executable>/../lib (src/cli/cmd_run.cc,
#     src/cli/cmd_libs.cc), so with /usr/bin that is /usr/lib
#   /usr/share/man/man1/gputriage.1.gz, /usr/share/bash-completion/completions/gputriage
#     (GPUTRIAGE_DOCS, cmake/docs.cmake)
# Depends is computed by dpkg-shlibdeps from the binaries (dpkg-dev; CPack also needs file(1):
# scripts/install-deps --package). Files are stripped, as Debian's packages are. The release preset
# sets CMAKE_SKIP_INSTALL_RPATH, so the installed binaries carry no $ORIGIN rpath: in /usr/bin the
# libraries are the system's.

set(GPUTRIAGE_DEB_MAINTAINER "gputriage maintainers" CACHE STRING
    "Maintainer field of the .deb (\"Name <email>\" for a package that is published)")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME gputriage)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "gputriage")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "finds out why a GPU job crashed (AMD ROCm/HIP and NVIDIA CUDA)")
set(CPACK_PACKAGE_DESCRIPTION
    "gputriage snapshots a node's GPU stack, checks it (doctor, validate), supervises a job and\n"
    "captures its crash (run), reads GPU code and library versions (inspect, libs) and matches what\n"
    "it collected against a knowledge base of known issues (analyze, report).")
string(JOIN "" CPACK_PACKAGE_DESCRIPTION ${CPACK_PACKAGE_DESCRIPTION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER ${GPUTRIAGE_DEB_MAINTAINER})
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# pci.ids (the device names libpci reads at run time) comes through libpci3's own Depends.
include(CPack)
