# SPDX-License-Identifier: Apache-2.0
# CMake package file for libptoclient:
#   find_package(ptoclient 0.1 REQUIRED)
#   target_link_libraries(app PRIVATE ptoclient::ptoclient)
# Imported targets:
#   ptoclient::ptoclient         the shared library
#   ptoclient::ptoclient_static  the static library (links msgpack-c's msgpackc too)
# Both carry the include directory of <pto/client.h>.  Locations are
# relative to this file, so the install tree can move.
include("${CMAKE_CURRENT_LIST_DIR}/ptoclientTargets.cmake")
set(ptoclient_FOUND TRUE)
