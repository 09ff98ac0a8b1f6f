# SPDX-License-Identifier: Apache-2.0
# The device programs (programs/*.c, loaded as plugins from the build tree),
# checked through the sequential executor against plain references.
#
# ptotest_programs: the sequential pto_orch_api_t (seq_orch) and the
# reference implementations, for any test that runs programs (the runtime's
# tests compare against them too).
add_library(ptotest_programs STATIC
  ${PROJECT_SOURCE_DIR}/tests/common/seq_orch.c
  ${PROJECT_SOURCE_DIR}/tests/common/reference.c)
target_include_directories(ptotest_programs PUBLIC
  ${PROJECT_SOURCE_DIR}/tests/common
  ${PROJECT_SOURCE_DIR}/include)
target_link_libraries(ptotest_programs PUBLIC m)

pto_test(test_programs
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_programs.c
  LIBS ptotest_programs ${CMAKE_DL_LIBS}
  LABELS unit)
add_dependencies(test_programs programs)

pto_test(test_seq_orch
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_seq_orch.c
  LIBS ptotest_programs
  LABELS unit)
