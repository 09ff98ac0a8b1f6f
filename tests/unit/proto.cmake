# SPDX-License-Identifier: Apache-2.0
# The msgpack-RPC codec of proto/: the bounded stream reader, the envelopes
# and every method's params and results.
add_library(ptotest_msgpack STATIC ${PROJECT_SOURCE_DIR}/tests/common/msgpack_build.c)
target_include_directories(ptotest_msgpack PUBLIC ${PROJECT_SOURCE_DIR}/tests/common)
target_link_libraries(ptotest_msgpack PUBLIC PkgConfig::MSGPACK)

pto_test(test_reader SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_reader.c LIBS ptoproto ptotest_msgpack LABELS unit)
pto_test(test_rpc SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_rpc.c LIBS ptoproto ptotest_msgpack LABELS unit)
pto_test(test_methods SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_methods.c LIBS ptoproto ptotest_msgpack LABELS unit)
pto_test(test_dispatch_pack SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_dispatch_pack.c LIBS ptoproto LABELS unit)
