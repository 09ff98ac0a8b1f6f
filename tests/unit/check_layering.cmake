# SPDX-License-Identifier: Apache-2.0
# cmake -DNM=nm -DPURE_LIBS=a.a;b.a -DAPI_ONLY_LIBS=c.a -DSOURCE_DIR=... -P check_layering.cmake
# Fails when a pure library needs a msgpack symbol, when an API-only
# library defines a global symbol other than pto_*, when proto/ or daemon/
# include from the client library, or when a build file globs for sources
# (.c or .py).
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

# The installed static library exposes only its API (client/localize_archive.cmake).
foreach(lib IN LISTS API_ONLY_LIBS)
  execute_process(COMMAND ${NM} -g --defined-only ${lib} OUTPUT_VARIABLE defined
    RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} -g ${lib} failed (${rc}).")
  endif()
  string(REGEX MATCHALL " [A-Za-z] [A-Za-z0-9_.]+" symbols "${defined}")
  list(FILTER symbols EXCLUDE REGEX " [A-Za-z] pto_")
  if(symbols)
    message(FATAL_ERROR "${lib} exposes more than pto_*: ${symbols}")
  endif()
  message(STATUS "${lib}: only pto_* symbols")
endforeach()

# proto/ and daemon/ compile against the protocol (pto/protocol.h), never
# against the client library: no pto/client.h, nothing from client/.
foreach(dir proto daemon)
  file(GLOB_RECURSE sources ${SOURCE_DIR}/${dir}/*.c ${SOURCE_DIR}/${dir}/*.h)
  foreach(f IN LISTS sources)
    file(STRINGS ${f} includes REGEX "^#[ \t]*include[ \t]*[<\"](pto/client\\.h|[./]*client/)")
    if(includes)
      message(FATAL_ERROR "${f} includes from the client library: ${includes}")
    endif()
  endforeach()
endforeach()
message(STATUS "proto/ and daemon/ include nothing of the client's")

set(build_files CMakeLists.txt)
# bench/ is built only with PTOD_BENCH and is left out for now.
foreach(dir cmake proto daemon programs client systemd tests examples)
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
