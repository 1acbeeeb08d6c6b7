# gt_include_roots(NAME DIR): each module's own include roots, so that a module sees only the
# headers of the modules it links (the build enforces the layers of docs/architecture.md):
#   build/include/NAME/<DIR without src/>/*.h          public: for the module and its dependents
#   build/include-private/NAME/<DIR without src/>/*.h  headers with a "// Private to DIR" line:
#                                                      for the module's sources and tests only
# The entries are symbolic links to the sources, made at configure time (new headers re-run it).
# Sets GT_PUBLIC_ROOT and GT_PRIVATE_ROOT in the caller's scope.
function(gt_include_roots name dir)
  file(GLOB headers CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/${dir}/*.h)
  string(REGEX REPLACE "^src/" "" rel "${dir}")
  set(public_root ${CMAKE_BINARY_DIR}/include/${name})
  set(private_root ${CMAKE_BINARY_DIR}/include-private/${name})
  file(REMOVE_RECURSE ${public_root} ${private_root})
  file(MAKE_DIRECTORY ${public_root}/${rel} ${private_root}/${rel})
  foreach(header ${headers})
    get_filename_component(file_name ${header} NAME)
    file(STRINGS ${header} private_marker LIMIT_COUNT 1 REGEX "^// Private to ${dir}[:. ]")
    if(private_marker)
      file(CREATE_LINK ${header} ${private_root}/${rel}/${file_name} SYMBOLIC)
    else()
      file(CREATE_LINK ${header} ${public_root}/${rel}/${file_name} SYMBOLIC)
    endif()
  endforeach()
  set(GT_PUBLIC_ROOT ${public_root} PARENT_SCOPE)
  set(GT_PRIVATE_ROOT ${private_root} PARENT_SCOPE)
endfunction()

# gt_module(NAME DIR DEPS ...): a static library gt_NAME from DIR/*.cc (not *_test.cc), and,
# when tests are on, one test binary gt_NAME_test from DIR/*_test.cc registered with ctest.
# DEPS are the modules (and packages) it may use: the allowed arrows of docs/architecture.md,
# checked by scripts/check-layers.
function(gt_module name dir)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  gt_include_roots(${name} ${dir})
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/${dir}/*.cc)
  file(GLOB tests CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/${dir}/*_test.cc)
  if(tests)
    list(REMOVE_ITEM sources ${tests})
  endif()
  if(NOT sources)
    # A module with headers only (or not written yet) is an interface library.
    add_library(gt_${name} INTERFACE)
    target_include_directories(gt_${name} INTERFACE ${GT_PUBLIC_ROOT})
    target_link_libraries(gt_${name} INTERFACE ${ARG_DEPS})
  else()
    add_library(gt_${name} STATIC ${sources})
    target_include_directories(gt_${name} PUBLIC ${GT_PUBLIC_ROOT} PRIVATE ${GT_PRIVATE_ROOT})
    target_link_libraries(gt_${name} PUBLIC ${ARG_DEPS})
    set_target_properties(gt_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    gt_own_code_options(gt_${name})
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
    target_include_directories(gt_${name}_test PRIVATE ${GT_PRIVATE_ROOT})
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
    gt_test_code_options(gt_${name}_test)
    gt_add_gtest(gt_${name}_test ENVIRONMENT GPUTRIAGE_HOME=${CMAKE_BINARY_DIR}/test-home)
  endif()
endfunction()
