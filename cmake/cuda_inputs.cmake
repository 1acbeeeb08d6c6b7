# Real CUDA inputs for the `inspect` tests (src/inspect/nvidia_test.cc), built by nvcc when the
# toolkit is present: a host object carrying a fatbin (sm_80 + sm_90 SASS + compute_90 PTX) three
# ways (uncompressed, LZ4 = --compress-mode=speed, zstd = --compress-mode=size), and standalone
# cubins for sm_80, sm_90 and sm_120 with ptxas -v's report of each (the test's oracle).
find_program(GT_NVCC_INSPECT nvcc PATHS /usr/local/cuda/bin NO_CACHE)
if(GT_NVCC_INSPECT AND NOT GPUTRIAGE_FUZZ AND TARGET gt_inspect_test)
  set(src ${CMAKE_SOURCE_DIR}/tests/inspect/nvidia/kernels.cu)
  set(out ${CMAKE_BINARY_DIR}/tests/inspect/nvidia)
  set(gencode -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=[sm_90,compute_90])
  set(outputs)
  foreach(mode none speed size)
    add_custom_command(
      OUTPUT ${out}/fatbin-${mode}.o
      COMMAND ${CMAKE_COMMAND} -E make_directory ${out}
      COMMAND ${GT_NVCC_INSPECT} -c ${gencode} --compress-mode=${mode} -Xfatbin -compress-all -o ${out}/fatbin-${mode}.o ${src}
      DEPENDS ${src}
      COMMENT "nvcc fatbin (--compress-mode=${mode}) for the inspect tests"
      VERBATIM)
    list(APPEND outputs ${out}/fatbin-${mode}.o)
  endforeach()
  foreach(arch 80 90 120)
    add_custom_command(
      OUTPUT ${out}/sm_${arch}.cubin ${out}/sm_${arch}.ptxas.txt
      COMMAND ${CMAKE_COMMAND} -E make_directory ${out}
      COMMAND sh -c "\"$0\" -cubin -arch=sm_${arch} -Xptxas -v -o \"$1\" \"$2\" 2> \"$3\""
              ${GT_NVCC_INSPECT} ${out}/sm_${arch}.cubin ${src} ${out}/sm_${arch}.ptxas.txt
      DEPENDS ${src}
      COMMENT "nvcc -cubin -arch=sm_${arch} -Xptxas -v for the inspect tests"
      VERBATIM)
    list(APPEND outputs ${out}/sm_${arch}.cubin)
  endforeach()
  # A shared library with a fatbin, for `inspect --pid` on a process that loaded it.
  add_custom_command(
    OUTPUT ${out}/libkernels.so
    COMMAND ${CMAKE_COMMAND} -E make_directory ${out}
    COMMAND ${GT_NVCC_INSPECT} -shared -Xcompiler -fPIC -gencode arch=compute_90,code=sm_90 -o ${out}/libkernels.so ${src}
    DEPENDS ${src}
    COMMENT "nvcc -shared libkernels.so for the inspect --pid test"
    VERBATIM)
  list(APPEND outputs ${out}/libkernels.so)
  add_custom_target(inspect_cuda_inputs ALL DEPENDS ${outputs})
  add_dependencies(gt_inspect_test inspect_cuda_inputs)
  target_compile_definitions(gt_inspect_test PRIVATE GT_CUDA_INPUTS_DIR="${out}")
  if(TARGET gt_integration_test)
    add_dependencies(gt_integration_test inspect_cuda_inputs)
    target_compile_definitions(gt_integration_test PRIVATE GT_CUDA_INPUTS_DIR="${out}")
  endif()
endif()
