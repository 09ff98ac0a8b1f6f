# SPDX-License-Identifier: Apache-2.0
# One bounded fuzz run for ctest (tests/fuzz/CMakeLists.txt):
#   cmake -DFUZZER=exe -DCORPUS=dir -DREGRESSIONS=dir -DWORK=dir -DSECONDS=n -P run_fuzzer.cmake
# Fuzzes on a fresh copy of the seed corpus and the regression inputs, so
# the committed files never change; fails on any crash, leak, timeout or
# failed invariant, with the input saved under WORK/artifacts.
foreach(var FUZZER CORPUS WORK SECONDS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_fuzzer.cmake: -D${var}=... is missing")
  endif()
endforeach()

file(REMOVE_RECURSE "${WORK}/corpus")
file(MAKE_DIRECTORY "${WORK}/corpus" "${WORK}/artifacts")
file(GLOB seeds "${CORPUS}/*")
if(NOT seeds)
  message(FATAL_ERROR "No seed corpus in ${CORPUS}; run tests/fuzz/make_corpus.py.")
endif()
if(DEFINED REGRESSIONS AND IS_DIRECTORY "${REGRESSIONS}")
  file(GLOB regressions "${REGRESSIONS}/*")
  list(APPEND seeds ${regressions})
endif()
file(COPY ${seeds} DESTINATION "${WORK}/corpus")

execute_process(
  COMMAND "${FUZZER}"
    -max_total_time=${SECONDS} -timeout=5 -rss_limit_mb=2048 -max_len=65536
    -print_final_stats=1 -artifact_prefix=${WORK}/artifacts/
    "${WORK}/corpus"
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR
    "${FUZZER} failed (exit ${rc}); the input that did it is in ${WORK}/artifacts/. "
    "Reproduce with: ${FUZZER} ${WORK}/artifacts/<file>")
endif()
