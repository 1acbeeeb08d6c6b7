# `validate`'s own kernels (src/validate/kernels): one source, built by nvcc into a fatbin and by
# hipcc into a code-object bundle when those compilers are here, embedded into gt_validate
# (src/validate/embedded_kernels.cc, .incbin). The backends compile against the vendors' headers
# (cuda.h from the CUDA toolkit; hip/hip_runtime_api.h from Debian's libamdhip64-dev) and load the
# runtimes with dlopen. A compiler or header that is missing leaves that backend out; the binary
# then says so when `validate` runs. GT_VALIDATE_CUDA_ARCHS / GT_VALIDATE_HIP_ARCHS choose the
# targets (nvcc 13 builds sm_75 and later; Debian's hipcc, ROCm 5.2, has no gfx94x or gfx11).
set(GT_VALIDATE_CUDA_ARCHS "75;80;86;89;90;100;120" CACHE STRING "SM versions of validate's CUDA kernels")
set(GT_VALIDATE_HIP_ARCHS "gfx900;gfx906;gfx908;gfx90a;gfx1030" CACHE STRING "AMD targets of validate's HIP kernels")
set(GT_VALIDATE_KERNELS ${CMAKE_SOURCE_DIR}/src/validate/kernels/kernels.cu
                        ${CMAKE_SOURCE_DIR}/src/validate/kernels/half_bits.h)
set(GT_VALIDATE_OUT ${CMAKE_BINARY_DIR}/validate)

find_program(GT_NVCC nvcc PATHS /usr/local/cuda/bin NO_CACHE)
find_path(GT_VALIDATE_CUDA_INCLUDE cuda.h PATHS /usr/local/cuda/include NO_CACHE)
if(GT_NVCC AND GT_VALIDATE_CUDA_INCLUDE AND NOT GPUTRIAGE_FUZZ)
  set(fatbin ${GT_VALIDATE_OUT}/kernels.fatbin)
  set(gencode "")
  set(targets "")
  foreach(arch ${GT_VALIDATE_CUDA_ARCHS})
    list(APPEND gencode -gencode arch=compute_${arch},code=sm_${arch})
    string(APPEND targets "sm_${arch} ")
  endforeach()
  # PTX of the lowest target too, so a GPU newer than every listed one can compile it at load.
  list(GET GT_VALIDATE_CUDA_ARCHS 0 lowest)
  list(APPEND gencode -gencode arch=compute_${lowest},code=compute_${lowest})
  string(APPEND targets "compute_${lowest} (PTX)")
  add_custom_command(
    OUTPUT ${fatbin}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${GT_VALIDATE_OUT}
    COMMAND ${GT_NVCC} -fatbin -O3 ${gencode} -o ${fatbin} ${CMAKE_SOURCE_DIR}/src/validate/kernels/kernels.cu
    DEPENDS ${GT_VALIDATE_KERNELS}
    COMMENT "nvcc -fatbin validate kernels (${targets})")
  add_custom_target(validate_cuda_kernels DEPENDS ${fatbin})
  add_dependencies(gt_validate validate_cuda_kernels)
  set_source_files_properties(${CMAKE_SOURCE_DIR}/src/validate/embedded_kernels.cc PROPERTIES OBJECT_DEPENDS ${fatbin})
  target_compile_definitions(gt_validate PRIVATE GT_VALIDATE_CUDA=1 GT_VALIDATE_CUDA_FATBIN_PRESENT=1
                             GT_VALIDATE_CUDA_FATBIN="${fatbin}" GT_VALIDATE_CUDA_TARGETS="${targets}")
  target_include_directories(gt_validate SYSTEM PRIVATE ${GT_VALIDATE_CUDA_INCLUDE})
  # cuBLAS and cuDNN types: their headers, when the toolkit has them.
  if(EXISTS ${GT_VALIDATE_CUDA_INCLUDE}/cublas_api.h)
    target_compile_definitions(gt_validate PRIVATE GT_VALIDATE_CUBLAS=1)
  endif()
  find_path(GT_VALIDATE_CUDNN_INCLUDE cudnn.h PATHS ${GT_VALIDATE_CUDA_INCLUDE} /usr/include NO_CACHE)
  if(GT_VALIDATE_CUDNN_INCLUDE)
    target_compile_definitions(gt_validate PRIVATE GT_VALIDATE_CUDNN=1)
    target_include_directories(gt_validate SYSTEM PRIVATE ${GT_VALIDATE_CUDNN_INCLUDE})
  endif()
  message(STATUS "validate: CUDA backend with kernels for ${targets}")
else()
  message(STATUS "validate: no CUDA backend (nvcc or cuda.h not found)")
endif()

find_program(GT_VALIDATE_HIPCC hipcc NO_CACHE)
find_path(GT_VALIDATE_HIP_INCLUDE hip/hip_runtime_api.h PATHS /opt/rocm/include NO_CACHE)
if(GT_VALIDATE_HIPCC AND GT_VALIDATE_HIP_INCLUDE AND NOT GPUTRIAGE_FUZZ)
  set(bundle ${GT_VALIDATE_OUT}/kernels.hipfb)
  set(offload "")
  string(REPLACE ";" " " targets "${GT_VALIDATE_HIP_ARCHS}")
  foreach(arch ${GT_VALIDATE_HIP_ARCHS})
    list(APPEND offload --offload-arch=${arch})
  endforeach()
  add_custom_command(
    OUTPUT ${bundle}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${GT_VALIDATE_OUT}
    COMMAND ${GT_VALIDATE_HIPCC} --genco -O3 ${offload} -o ${bundle} ${CMAKE_SOURCE_DIR}/src/validate/kernels/kernels.hip
    DEPENDS ${GT_VALIDATE_KERNELS} ${CMAKE_SOURCE_DIR}/src/validate/kernels/kernels.hip
    COMMENT "hipcc --genco validate kernels (${targets})")
  add_custom_target(validate_hip_kernels DEPENDS ${bundle})
  add_dependencies(gt_validate validate_hip_kernels)
  set_property(SOURCE ${CMAKE_SOURCE_DIR}/src/validate/embedded_kernels.cc APPEND PROPERTY OBJECT_DEPENDS ${bundle})
  target_compile_definitions(gt_validate PRIVATE GT_VALIDATE_HIP=1 GT_VALIDATE_HIP_BUNDLE_PRESENT=1
                             GT_VALIDATE_HIP_BUNDLE="${bundle}" GT_VALIDATE_HIP_TARGETS="${targets}")
  target_include_directories(gt_validate SYSTEM PRIVATE ${GT_VALIDATE_HIP_INCLUDE})
  message(STATUS "validate: HIP backend with kernels for ${targets}")
else()
  message(STATUS "validate: no HIP backend (hipcc or hip/hip_runtime_api.h not found)")
endif()
