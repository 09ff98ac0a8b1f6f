# SPDX-License-Identifier: Apache-2.0
# The daemon's configuration file.  config.c gets a library of its own here,
# so these tests build without the rest of ptodcore.  Its default programs
# directory is absolute here (an install configured with an absolute
# PTOD_INSTALL_PROGRAMSDIR); test_config_relocate builds it relative, as the
# daemon is.
add_library(ptod_config_test STATIC ${PROJECT_SOURCE_DIR}/daemon/config.c
  ${PROJECT_SOURCE_DIR}/daemon/config_file.c
  ${PROJECT_SOURCE_DIR}/daemon/config_value.c
  ${PROJECT_SOURCE_DIR}/daemon/listen_addr.c)
target_compile_definitions(ptod_config_test PUBLIC PTOD_DEFAULT_PROGRAMS_DIR="${PTOD_BUILD_PROGRAMS_DIR}")
target_include_directories(ptod_config_test PUBLIC ${PROJECT_SOURCE_DIR}/daemon)
target_link_libraries(ptod_config_test PUBLIC ptoproto PkgConfig::INIH)

pto_test(test_config SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_config.c LIBS ptod_config_test LABELS unit)

# `ptod --check-config` end to end: the --e2e suite of the same executable
# runs the built ptod (fork/exec, no shell).
add_dependencies(test_config ptod)
add_test(NAME test_check_config COMMAND test_config --e2e)
set_tests_properties(test_check_config PROPERTIES LABELS unit TIMEOUT 60)

# The default programs directory relative to the executable (/proc/self/exe):
# from tests/unit/ of the build tree, ../../programs is the build's programs.
file(RELATIVE_PATH PTOD_TEST_RELATIVE_PROGRAMS ${CMAKE_CURRENT_BINARY_DIR} ${PTOD_BUILD_PROGRAMS_DIR})
add_library(ptod_config_reloc STATIC ${PROJECT_SOURCE_DIR}/daemon/config.c
  ${PROJECT_SOURCE_DIR}/daemon/config_file.c
  ${PROJECT_SOURCE_DIR}/daemon/config_value.c
  ${PROJECT_SOURCE_DIR}/daemon/listen_addr.c)
target_compile_definitions(ptod_config_reloc PUBLIC
  PTOD_DEFAULT_PROGRAMS_DIR="${PTOD_TEST_RELATIVE_PROGRAMS}")
target_include_directories(ptod_config_reloc PUBLIC ${PROJECT_SOURCE_DIR}/daemon)
target_link_libraries(ptod_config_reloc PUBLIC ptoproto PkgConfig::INIH)
pto_test(test_config_relocate SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_config_relocate.c
  LIBS ptod_config_reloc LABELS unit)
target_compile_definitions(test_config_relocate PRIVATE
  PTOD_TEST_RELATIVE_PROGRAMS="${PTOD_TEST_RELATIVE_PROGRAMS}")
add_dependencies(test_config_relocate programs)
