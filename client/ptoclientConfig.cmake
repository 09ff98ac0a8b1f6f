# CMake package file for libptoclient.  Provides the imported targets
#   ptoclient::ptoclient         the shared library
#   ptoclient::ptoclient_static  the static library (needs msgpack-c at link time)
# Locations are found relative to this file, so the install tree can move.
get_filename_component(_ptoclient_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
find_path(PTOCLIENT_INCLUDE_DIR pto/sizing.h PATHS "${_ptoclient_prefix}/include" NO_DEFAULT_PATH)
find_library(PTOCLIENT_SHARED NAMES ptoclient PATHS "${_ptoclient_prefix}/lib" "${CMAKE_CURRENT_LIST_DIR}/../.." NO_DEFAULT_PATH)
find_file(PTOCLIENT_STATIC NAMES libptoclient.a PATHS "${_ptoclient_prefix}/lib" "${CMAKE_CURRENT_LIST_DIR}/../.." NO_DEFAULT_PATH)

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(ptoclient REQUIRED_VARS PTOCLIENT_INCLUDE_DIR PTOCLIENT_SHARED)

if(ptoclient_FOUND AND NOT TARGET ptoclient::ptoclient)
  add_library(ptoclient::ptoclient SHARED IMPORTED)
  set_target_properties(ptoclient::ptoclient PROPERTIES
    IMPORTED_LOCATION "${PTOCLIENT_SHARED}"
    INTERFACE_INCLUDE_DIRECTORIES "${PTOCLIENT_INCLUDE_DIR}")
  if(PTOCLIENT_STATIC)
    find_package(Threads REQUIRED)
    find_library(PTOCLIENT_MSGPACKC msgpackc REQUIRED)
    add_library(ptoclient::ptoclient_static STATIC IMPORTED)
    set_target_properties(ptoclient::ptoclient_static PROPERTIES
      IMPORTED_LOCATION "${PTOCLIENT_STATIC}"
      INTERFACE_INCLUDE_DIRECTORIES "${PTOCLIENT_INCLUDE_DIR}"
      INTERFACE_LINK_LIBRARIES "${PTOCLIENT_MSGPACKC};Threads::Threads")
  endif()
endif()
