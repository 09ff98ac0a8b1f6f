# SPDX-License-Identifier: Apache-2.0
# The daemon's modules in-process (ptodcore): the server on a real socket
# with a libuv loop, the request module on the real device thread, the
# reload's live-key table, the shared-memory table, and the advisor's rule.
pto_test(test_server SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_server.c LIBS ptodcore LABELS unit)
pto_test(test_shm SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_shm.c LIBS ptodcore LABELS unit)
pto_test(test_live_keys SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_live_keys.c LIBS ptodcore LABELS unit)
pto_test(test_requests SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_requests.c LIBS ptodcore LABELS unit)
target_compile_definitions(test_requests PRIVATE PTOD_TEST_PROGRAMS_DIR="${CMAKE_BINARY_DIR}/programs")
add_dependencies(test_requests programs)
pto_test(test_advise SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_advise.c LIBS ptodcore LABELS unit)
pto_test(test_dispatch_loop SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_dispatch_loop.c LIBS ptodcore LABELS unit)
pto_test(test_program_cost SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_program_cost.c
  LIBS ptodcore ptotest_programs ${CMAKE_DL_LIBS} LABELS unit)
add_dependencies(test_program_cost programs)
