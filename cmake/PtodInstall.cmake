# SPDX-License-Identifier: Apache-2.0
# ptod_install_for_prefix(SOURCE file DESTINATION dir [RENAME name])
#
# Installs SOURCE with its paths rewritten for the prefix actually installed
# to, decided when `cmake --install` runs (install(CODE)), not when the build
# was configured: `cmake --install build --prefix P` and DESTDIR=... both get
# files that name P.  DESTINATION is relative to that prefix, or absolute.
#
# In SOURCE, @PTOD_PREFIX@, @PTOD_BINDIR@, @PTOD_LIBDIR@, @PTOD_INCLUDEDIR@,
# @PTOD_SYSCONFDIR@, @PTOD_PROGRAMSDIR@ (all absolute, for the installed
# prefix) and
# @PROJECT_VERSION@ are replaced (configure_file @ONLY); so is the literal
# /usr/bin/ptod, which the units in systemd/ name so they read as shipped.
# Install-time code that sets PTOD_SYSCONFDIR for the prefix installed to:
# /etc for /usr, else PREFIX/etc (GNUInstallDirs' rule, /opt aside).
set(PTOD_SYSCONFDIR_CODE "
  if(\"\${CMAKE_INSTALL_PREFIX}\" STREQUAL \"/usr\")
    set(PTOD_SYSCONFDIR /etc)
  else()
    set(PTOD_SYSCONFDIR \"\${CMAKE_INSTALL_PREFIX}/etc\")
  endif()")

function(ptod_install_for_prefix)
  cmake_parse_arguments(I "" "SOURCE;DESTINATION;RENAME" "" ${ARGN})
  get_filename_component(src "${I_SOURCE}" ABSOLUTE)
  if(I_RENAME)
    set(name "${I_RENAME}")
  else()
    get_filename_component(name "${src}" NAME)
    string(REGEX REPLACE "\\.in$" "" name "${name}")
  endif()
  set(stage "${CMAKE_BINARY_DIR}/install-stage/${I_DESTINATION}")
  install(CODE "
    set(PTOD_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
    set(PTOD_BINDIR \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}\")
    set(PTOD_LIBDIR \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}\")
    set(PTOD_INCLUDEDIR \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_INCLUDEDIR}\")
    ${PTOD_SYSCONFDIR_CODE}
    if(IS_ABSOLUTE \"${PTOD_INSTALL_PROGRAMSDIR}\")
      set(PTOD_PROGRAMSDIR \"${PTOD_INSTALL_PROGRAMSDIR}\")
    else()
      set(PTOD_PROGRAMSDIR \"\${CMAKE_INSTALL_PREFIX}/${PTOD_INSTALL_PROGRAMSDIR}\")
    endif()
    set(PROJECT_VERSION \"${PROJECT_VERSION}\")
    file(READ \"${src}\" text)
    string(REPLACE \"/usr/bin/ptod\" \"\${PTOD_BINDIR}/ptod\" text \"\${text}\")
    string(REPLACE \"/etc/ptod/\" \"\${PTOD_SYSCONFDIR}/ptod/\" text \"\${text}\")
    file(WRITE \"${stage}/${name}.in\" \"\${text}\")
    configure_file(\"${stage}/${name}.in\" \"${stage}/${name}\" @ONLY)
    if(IS_ABSOLUTE \"${I_DESTINATION}\")
      set(dest \"${I_DESTINATION}\")
    else()
      set(dest \"\${CMAKE_INSTALL_PREFIX}/${I_DESTINATION}\")
    endif()
    file(INSTALL DESTINATION \"\${dest}\" TYPE FILE FILES \"${stage}/${name}\")
  ")
endfunction()

# ptod_install_config_once(SOURCE file NAME name): install SOURCE as
# SYSCONFDIR/ptod/NAME (for the prefix installed to, as above) unless a file
# is there already, so an install over a live system keeps the operator's.
function(ptod_install_config_once)
  cmake_parse_arguments(I "" "SOURCE;NAME" "" ${ARGN})
  get_filename_component(src "${I_SOURCE}" ABSOLUTE)
  install(CODE "
    ${PTOD_SYSCONFDIR_CODE}
    if(EXISTS \"\$ENV{DESTDIR}\${PTOD_SYSCONFDIR}/ptod/${I_NAME}\")
      message(STATUS \"Keeping: \$ENV{DESTDIR}\${PTOD_SYSCONFDIR}/ptod/${I_NAME}\")
    else()
      file(INSTALL DESTINATION \"\${PTOD_SYSCONFDIR}/ptod\" TYPE FILE RENAME ${I_NAME}
        FILES \"${src}\")
    endif()
  ")
endfunction()
