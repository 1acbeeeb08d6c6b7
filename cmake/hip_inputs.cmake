# Real AMD GPU binaries for the `inspect` tests (src/inspect/amd_test.cc), built from
# tests/inspect/amd/kernels.hip by hipcc when it is installed (Debian: package hipcc, clang 15,
# ROCm 5.2 device libraries: gfx900..gfx90a, gfx940, gfx1010..gfx1036, not gfx11):
#   kernels.o                 host object; its .hip_fatbin holds one offload bundle with
#                             gfx90a:sramecc+:xnack-, gfx1030 and gfx906 (code object v4)
#   kernels.hip_fatbin        that section, cut out by objcopy
#   kernels-<arch>.co         the three code objects, unbundled by clang-offload-bundler
#   kernels-gfx906-v3.bundle  a device-only bundle with code object v3 (hip- entry ids)
#   kernels-gfx906-v{2,3}.co  code objects v2 (YAML metadata) and v3, unbundled
# The tests read them from GT_HIP_INPUTS_DIR and check every number against llvm-readelf
# (GT_LLVM_READELF); without hipcc they skip and say why. Explicit --offload-arch keeps hipcc
# from asking rocm_agent_enumerator for the local GPU (on a machine without one, that prints a
# harmless Python traceback).
find_program(GT_HIPCC hipcc)
find_program(GT_OFFLOAD_BUNDLER NAMES clang-offload-bundler clang-offload-bundler-15
             PATHS /usr/lib/llvm-15/bin /opt/rocm/llvm/bin)
find_program(GT_OBJCOPY NAMES llvm-objcopy-15 llvm-objcopy objcopy)
find_program(GT_LLVM_READELF NAMES llvm-readelf-15 llvm-readelf PATHS /usr/lib/llvm-15/bin /opt/rocm/llvm/bin)

if(TARGET gt_inspect_test AND GT_LLVM_READELF)
  target_compile_definitions(gt_inspect_test PRIVATE GT_LLVM_READELF="${GT_LLVM_READELF}")
endif()

if(GT_HIPCC AND GT_OFFLOAD_BUNDLER AND GT_OBJCOPY AND TARGET gt_inspect_test AND NOT GPUTRIAGE_FUZZ)
  set(GT_HIP_INPUTS_DIR ${CMAKE_BINARY_DIR}/tests/inspect/amd)
  set(GT_HIP_SOURCE ${CMAKE_SOURCE_DIR}/tests/inspect/amd/kernels.hip)
  set(GT_HIP_HOST_OBJECT ${GT_HIP_INPUTS_DIR}/kernels.o)
  set(GT_HIP_FATBIN ${GT_HIP_INPUTS_DIR}/kernels.hip_fatbin)
  set(GT_HIP_V4_OBJECTS ${GT_HIP_INPUTS_DIR}/kernels-gfx90a.co ${GT_HIP_INPUTS_DIR}/kernels-gfx1030.co
                        ${GT_HIP_INPUTS_DIR}/kernels-gfx906.co)
  set(GT_HIP_V3_BUNDLE ${GT_HIP_INPUTS_DIR}/kernels-gfx906-v3.bundle)
  set(GT_HIP_V2_BUNDLE ${GT_HIP_INPUTS_DIR}/kernels-gfx906-v2.bundle)
  set(GT_HIP_HOST_TARGET hipv4-amdgcn-amd-amdhsa--)

  add_custom_command(
    OUTPUT ${GT_HIP_HOST_OBJECT}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${GT_HIP_INPUTS_DIR}
    COMMAND ${GT_HIPCC} -c -O2 --offload-arch=gfx90a:sramecc+:xnack- --offload-arch=gfx1030
            --offload-arch=gfx906 ${GT_HIP_SOURCE} -o ${GT_HIP_HOST_OBJECT}
    DEPENDS ${GT_HIP_SOURCE}
    WORKING_DIRECTORY ${CMAKE_BINARY_DIR}
    COMMENT "hipcc tests/inspect/amd/kernels.hip (gfx90a, gfx1030, gfx906)"
    VERBATIM)

  # The section as the linker would see it; "-O binary --only-section" works for GNU and LLVM
  # objcopy alike.
  add_custom_command(
    OUTPUT ${GT_HIP_FATBIN}
    COMMAND ${GT_OBJCOPY} -O binary --only-section=.hip_fatbin ${GT_HIP_HOST_OBJECT} ${GT_HIP_FATBIN}
    DEPENDS ${GT_HIP_HOST_OBJECT}
    COMMENT "objcopy .hip_fatbin of kernels.o"
    VERBATIM)

  add_custom_command(
    OUTPUT ${GT_HIP_V4_OBJECTS}
    COMMAND ${GT_OFFLOAD_BUNDLER} --unbundle --type=o --input=${GT_HIP_FATBIN}
            --targets=${GT_HIP_HOST_TARGET}gfx90a:sramecc+:xnack-,${GT_HIP_HOST_TARGET}gfx1030,${GT_HIP_HOST_TARGET}gfx906
            --output=${GT_HIP_INPUTS_DIR}/kernels-gfx90a.co --output=${GT_HIP_INPUTS_DIR}/kernels-gfx1030.co
            --output=${GT_HIP_INPUTS_DIR}/kernels-gfx906.co
    DEPENDS ${GT_HIP_FATBIN}
    COMMENT "clang-offload-bundler --unbundle kernels.hip_fatbin"
    VERBATIM)

  # Older code object versions, device code only: `hipcc -c --offload-device-only` writes an
  # offload bundle (ids "hip-amdgcn-..." for v2 and v3).
  foreach(version 2 3)
    set(bundle ${GT_HIP_INPUTS_DIR}/kernels-gfx906-v${version}.bundle)
    set(object ${GT_HIP_INPUTS_DIR}/kernels-gfx906-v${version}.co)
    add_custom_command(
      OUTPUT ${bundle} ${object}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${GT_HIP_INPUTS_DIR}
      COMMAND ${GT_HIPCC} -c -O2 --offload-device-only --offload-arch=gfx906
              -mcode-object-version=${version} ${GT_HIP_SOURCE} -o ${bundle}
      COMMAND ${GT_OFFLOAD_BUNDLER} --unbundle --type=o --input=${bundle}
              --targets=hip-amdgcn-amd-amdhsa--gfx906 --output=${object}
      DEPENDS ${GT_HIP_SOURCE}
      WORKING_DIRECTORY ${CMAKE_BINARY_DIR}
      COMMENT "hipcc --offload-device-only -mcode-object-version=${version} (gfx906)"
      VERBATIM)
    list(APPEND GT_HIP_OLD_OUTPUTS ${bundle} ${object})
  endforeach()

  add_custom_target(gt_hip_inputs DEPENDS ${GT_HIP_HOST_OBJECT} ${GT_HIP_FATBIN} ${GT_HIP_V4_OBJECTS}
                                          ${GT_HIP_OLD_OUTPUTS})
  add_dependencies(gt_inspect_test gt_hip_inputs)
  target_compile_definitions(gt_inspect_test PRIVATE GT_HIP_INPUTS_DIR="${GT_HIP_INPUTS_DIR}")
  if(TARGET gt_integration_test)
    add_dependencies(gt_integration_test gt_hip_inputs)
    target_compile_definitions(gt_integration_test PRIVATE GT_HIP_INPUTS_DIR="${GT_HIP_INPUTS_DIR}")
  endif()
endif()
