# SPDX-License-Identifier: Apache-2.0
# cmake -DNM=nm -DPURE_LIBS=a.a;b.a -DAPI_ONLY_LIBS=c.a -DSOURCE_DIR=... -P check_layering.cmake
# Fails when a pure library needs a msgpack symbol, when an API-only
# library defines a global symbol other than pto_*, when an include goes
# against the direction rules/ <- proto/ <- daemon/, client/, or when a build
# file globs for sources (.c or .py).
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

# The direction of dependencies: rules/ (pure) <- proto/ (msgpack) <-
# daemon/ and client/.  A "quoted" include of rules/ must be a rules/ file,
# one of proto/ a proto/ or rules/ file; rules/ includes no msgpack, libuv
# or threads; proto/, rules/ and daemon/ compile against the protocol
# (pto/protocol.h), never the client library: no pto/client.h, nothing
# from client/.
function(check_includes dir allowed_dirs forbidden)
  file(GLOB_RECURSE sources ${SOURCE_DIR}/${dir}/*.c ${SOURCE_DIR}/${dir}/*.h)
  foreach(f IN LISTS sources)
    file(STRINGS ${f} lines REGEX "^#[ \t]*include[ \t]*[<\"]")
    foreach(line IN LISTS lines)
      if(line MATCHES "[<\"](${forbidden})[>\"]")
        message(FATAL_ERROR "${f}: ${line}: ${dir}/ must not include that.")
      endif()
      if(allowed_dirs AND line MATCHES "\"([^\"]+)\"")
        set(name ${CMAKE_MATCH_1})
        set(found FALSE)
        foreach(d IN LISTS allowed_dirs)
          if(EXISTS ${SOURCE_DIR}/${d}/${name})
            set(found TRUE)
          endif()
        endforeach()
        if(NOT found)
          message(FATAL_ERROR "${f}: ${line}: ${dir}/ may include only from ${allowed_dirs}.")
        endif()
      endif()
    endforeach()
  endforeach()
  message(STATUS "${dir}/ includes only what its layer may")
endfunction()
set(client_headers "pto/client\\.h|[./]*client/[^>\"]*")
check_includes(rules "rules" "${client_headers}|pto/protocol\\.h|msgpack\\.h|uv\\.h|pthread\\.h")
check_includes(proto "proto;rules" "${client_headers}")
check_includes(daemon "" "${client_headers}")

set(build_files CMakeLists.txt)
foreach(dir cmake rules proto daemon programs client systemd tests examples bench)
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
