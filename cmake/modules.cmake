# gt_module(NAME DIR DEPS ...): a static library gt_NAME from DIR/*.cc (not *_test.cc), and,
# when tests are on, one test binary gt_NAME_test from DIR/*_test.cc registered with ctest.
function(gt_module name dir)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/${dir}/*.cc)
  file(GLOB tests CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/${dir}/*_test.cc)
  if(tests)
    list(REMOVE_ITEM sources ${tests})
  endif()
  if(NOT sources)
    # A module with headers only (or not written yet) is an interface library.
    add_library(gt_${name} INTERFACE)
    target_include_directories(gt_${name} INTERFACE ${CMAKE_SOURCE_DIR}/src ${CMAKE_BINARY_DIR}/generated)
    target_link_libraries(gt_${name} INTERFACE ${ARG_DEPS})
  else()
    add_library(gt_${name} STATIC ${sources})
    target_include_directories(gt_${name} PUBLIC ${CMAKE_SOURCE_DIR}/src ${CMAKE_BINARY_DIR}/generated)
    target_link_libraries(gt_${name} PUBLIC ${ARG_DEPS})
    set_target_properties(gt_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    # nlohmann/json is in nearly every file and is the bulk of the parse time on 2-core CI.
    # One precompiled header for all libraries (they share flags), made once by gt_core.
    if(name STREQUAL "core")
      target_precompile_headers(gt_core PRIVATE <nlohmann/json.hpp> <fmt/format.h> <string> <vector>)
    else()
      target_precompile_headers(gt_${name} REUSE_FROM gt_core)
    endif()
  endif()
  if(GPUTRIAGE_TESTS AND tests)
    add_executable(gt_${name}_test ${tests})
    target_link_libraries(gt_${name}_test PRIVATE gt_${name} gt_test_support GTest::gtest GTest::gtest_main GTest::gmock)
    # Likewise one precompiled header for all test binaries, made by gt_core_test.
    if(name STREQUAL "core")
      target_precompile_headers(gt_core_test PRIVATE <gtest/gtest.h> <nlohmann/json.hpp> <fmt/format.h> <string> <vector>)
    else()
      target_precompile_headers(gt_${name}_test REUSE_FROM gt_core_test)
    endif()
    target_compile_definitions(gt_${name}_test PRIVATE
      GT_FIXTURES_DIR="${CMAKE_SOURCE_DIR}/tests/fixtures"
      GT_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
      GT_BINARY_DIR="${CMAKE_BINARY_DIR}")
    gtest_discover_tests(gt_${name}_test DISCOVERY_MODE PRE_TEST
      PROPERTIES ENVIRONMENT "GPUTRIAGE_HOME=${CMAKE_BINARY_DIR}/test-home")
  endif()
endfunction()
