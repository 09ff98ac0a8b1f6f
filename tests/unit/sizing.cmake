# SPDX-License-Identifier: Apache-2.0
# The pure rules of rules/ (ptorules): ring sizing rules and the error table.
pto_test(test_sizing SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sizing.c LIBS ptoproto LABELS unit)
pto_test(test_errors SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_errors.c LIBS ptorules LABELS unit)
