# SPDX-License-Identifier: Apache-2.0
# The ring runtime (daemon/runtime, daemon/device): in-process tests with
# small sizings.  Label `runtime`: these also run under ThreadSanitizer.

pto_test(test_runtime
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_runtime.c
  LIBS ptoruntime
  LABELS runtime)

pto_test(test_runtime_errors
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_runtime_errors.c
  LIBS ptoruntime
  LABELS runtime)

pto_test(test_runtime_trace
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_runtime_trace.c
  LIBS ptoruntime
  LABELS runtime)

pto_test(test_runtime_arena
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_runtime_arena.c
  LIBS ptoruntime
  LABELS runtime)

# Plugins for the loader tests, in a programs directory of their own: a good
# one and three the loader must refuse.
set(RT_TEST_PLUGIN_DIR ${CMAKE_CURRENT_BINARY_DIR}/runtime_plugins)
foreach(plug rtplug_tiny rtplug_abi_two rtplug_misnamed rtplug_nosym)
  add_library(${plug} MODULE ${CMAKE_CURRENT_LIST_DIR}/runtime_plugins/${plug}.c)
  set_target_properties(${plug} PROPERTIES PREFIX "" SUFFIX ".so"
    C_VISIBILITY_PRESET hidden LIBRARY_OUTPUT_DIRECTORY ${RT_TEST_PLUGIN_DIR})
  target_include_directories(${plug} PRIVATE ${PROJECT_SOURCE_DIR}/include)
  list(APPEND RT_TEST_PLUGINS ${plug})
endforeach()

pto_test(test_runtime_loader
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_runtime_loader.c
  LIBS ptoruntime
  LABELS runtime)
target_compile_definitions(test_runtime_loader PRIVATE RT_TEST_PLUGIN_DIR="${RT_TEST_PLUGIN_DIR}")
add_dependencies(test_runtime_loader ${RT_TEST_PLUGINS})

# The programs of programs/ on the real runtime (the seed scenario among
# them), against the references of tests/common.
if(TARGET ptotest_programs AND TARGET programs)
  pto_test(test_runtime_programs
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_runtime_programs.c
    LIBS ptoruntime ptotest_programs
    LABELS runtime)
  add_dependencies(test_runtime_programs programs)
endif()
