# SPDX-License-Identifier: Apache-2.0
# The build's own shape (the README's layout section): the runtime and the
# pure rules link no msgpack-c, libptoclient.a exposes only pto_*, proto/
# and daemon/ include nothing of the client's, and no CMakeLists.txt
# gathers sources by globbing.
add_test(NAME test_build_layering
  COMMAND ${CMAKE_COMMAND}
    -DNM=${CMAKE_NM}
    -DPURE_LIBS=$<TARGET_FILE:ptorules>;$<TARGET_FILE:ptoruntime>
    -DAPI_ONLY_LIBS=$<TARGET_FILE:ptoclient_static>
    -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
    -P ${CMAKE_CURRENT_LIST_DIR}/check_layering.cmake)
set_tests_properties(test_build_layering PROPERTIES LABELS unit TIMEOUT 60)
