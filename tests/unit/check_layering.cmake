# SPDX-License-Identifier: Apache-2.0
# cmake -DNM=nm -DPURE_LIBS=a.a;b.a -DSOURCE_DIR=... -P check_layering.cmake
# Fails when a pure library needs a msgpack symbol, or when a build file
# globs for sources (.c or .py).
foreach(lib IN LISTS PURE_LIBS)
  execute_process(COMMAND ${NM} -u ${lib} OUTPUT_VARIABLE undefined RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} -u ${lib} failed (${rc}).")
  endif()
  string(REGEX MATCHALL "msgpack_[A-Za-z0-9_]+" needed "${undefined}")
  if(needed)
    list(REMOVE_DUPLICATES needed)
    message(FATAL_ERROR "${lib} must not link msgpack-c, but needs: ${needed}")
  endif()
  message(STATUS "${lib}: no msgpack symbols")
endforeach()

set(build_files CMakeLists.txt)
foreach(dir cmake proto daemon programs client systemd tests examples bench)
  file(GLOB_RECURSE found RELATIVE ${SOURCE_DIR}
    ${SOURCE_DIR}/${dir}/CMakeLists.txt ${SOURCE_DIR}/${dir}/*.cmake)
  list(APPEND build_files ${found})
endforeach()
list(FILTER build_files EXCLUDE REGEX "check_layering\\.cmake$")
foreach(f IN LISTS build_files)
  file(READ ${SOURCE_DIR}/${f} text)
  if(text MATCHES "file\\(GLOB[^)]*\\.(c|py)[ )\n]")
    message(FATAL_ERROR "${f} globs for files; list its sources by hand.")
  endif()
endforeach()
list(LENGTH build_files n)
message(STATUS "${n} build files list their sources by hand")
