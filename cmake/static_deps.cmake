# GPUTRIAGE_STATIC_DEPS (the `tarball` preset, scripts/tarball): a binary for other distributions
# carries its dependencies inside itself where Debian ships their static archives, so the tarball
# needs no matching libre2/libyaml-cpp/libdw/... on the target. Measured on Debian 12: libre2-dev,
# libyaml-cpp-dev, libsqlite3-dev, zlib1g-dev, libzstd-dev, liblz4-dev, libelf-dev, libdw-dev and
# libcapstone-dev ship a .a; libpci-dev ships none, so libpci.so.3 (and libudev.so.1 behind it) stay
# shared and scripts/bundle copies them into the tarball's lib/. libfmt is used header-only.
# libstdc++ is linked statically too (below: why libgcc is not). glibc is never linked statically:
# the loader, NSS and dlopen of the vendor libraries (NVML, HIP) need the system's.

if(NOT GPUTRIAGE_STATIC_DEPS)
  return()
endif()

# find_library (FindSQLite3, FindZLIB, pkg_check_modules' IMPORTED_TARGETs) prefers the archive.
set(CMAKE_FIND_LIBRARY_SUFFIXES .a .so)

# libstdc++ inside every binary and the recorder, so the target needs no GCC 12 runtime
# (GLIBCXX_3.4.30). libgcc stays shared (libgcc_s.so.1, on every glibc system: glibc itself loads it
# for thread cancellation), because Debian 12's libgcc_eh.a calls _dl_find_object, a GLIBC_2.35
# symbol: -static-libgcc would raise the oldest glibc the tarball runs on from 2.34 (RHEL 9) to 2.35.
# --gc-sections drops what the archives bring but nothing calls; among it libstdc++.a's
# std::random_device (random.o, pulled in by the COW string instantiations), whose arc4random is a
# GLIBC_2.36 symbol. 2.34 itself is the floor of any program linked on glibc 2.34 or later
# (__libc_start_main@GLIBC_2.34).
set(GT_CXX_RUNTIME_LINK -static-libstdc++ -Wl,--gc-sections)  # the probe and the recorder
add_link_options(-static-libstdc++ -Wl,--gc-sections)

# glibc's own libraries stay shared even where glibc ships an archive: a libm.a or libresolv.a
# inside a dynamically linked program mixes two copies of libc's internals.
set(GT_SHARED_ONLY_LIBS c m dl pthread rt resolv util stdc++ gcc gcc_s)

# gt_static_pkg(PREFIX): points PkgConfig::PREFIX (made by pkg_check_modules(PREFIX ...
# IMPORTED_TARGET)) at the archives of `pkg-config --static` (PREFIX_STATIC_LIBRARIES, in link
# order, the archives' own dependencies included), each NAME as libNAME.a where that exists and
# as -lNAME (the shared library) where it does not.
function(gt_static_pkg prefix)
  set(libs "")
  foreach(name IN LISTS ${prefix}_STATIC_LIBRARIES)
    if(name IN_LIST GT_SHARED_ONLY_LIBS)
      list(APPEND libs ${name})
      continue()
    endif()
    find_library(GT_STATIC_LIB_${name} NAMES lib${name}.a HINTS ${${prefix}_STATIC_LIBRARY_DIRS})
    if(GT_STATIC_LIB_${name})
      list(APPEND libs ${GT_STATIC_LIB_${name}})
    else()
      list(APPEND libs ${name})
    endif()
  endforeach()
  set_property(TARGET PkgConfig::${prefix} PROPERTY INTERFACE_LINK_LIBRARIES ${libs})
  message(STATUS "static deps: ${prefix}: ${libs}")
endfunction()

# yaml-cpp comes as a CMake package whose imported target names the shared library only.
function(gt_static_yaml_cpp)
  find_library(GT_STATIC_LIB_yaml-cpp NAMES libyaml-cpp.a REQUIRED)
  get_target_property(configs yaml-cpp IMPORTED_CONFIGURATIONS)
  foreach(config IN LISTS configs)
    set_target_properties(yaml-cpp PROPERTIES IMPORTED_LOCATION_${config} ${GT_STATIC_LIB_yaml-cpp}
                                              IMPORTED_SONAME_${config} "")
  endforeach()
  message(STATUS "static deps: yaml-cpp: ${GT_STATIC_LIB_yaml-cpp}")
endfunction()
