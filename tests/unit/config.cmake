# The daemon's configuration file.  config.c gets a library of its own here,
# so these tests build without the rest of ptodcore.
add_library(ptod_config_test STATIC ${PROJECT_SOURCE_DIR}/daemon/config.c
  ${PROJECT_SOURCE_DIR}/daemon/listen_addr.c)
target_compile_definitions(ptod_config_test PUBLIC PTOD_DEFAULT_PROGRAMS_DIR="${PTOD_PROGRAMS_DIR}")
target_include_directories(ptod_config_test PUBLIC ${PROJECT_SOURCE_DIR}/daemon)
target_link_libraries(ptod_config_test PUBLIC ptoproto PkgConfig::INIH)

pto_test(test_config SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_config.c LIBS ptod_config_test LABELS unit)

# `ptod --check-config` end to end: the --e2e suite of the same executable
# runs the built ptod (fork/exec, no shell).
add_dependencies(test_config ptod)
add_test(NAME test_check_config COMMAND test_config --e2e)
set_tests_properties(test_check_config PROPERTIES LABELS unit TIMEOUT 60)
