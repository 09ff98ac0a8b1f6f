# SPDX-License-Identifier: Apache-2.0
# cmake -DLD=ld -DOBJCOPY=objcopy -DAR=ar -DARCHIVE=libptoclient.a -P localize_archive.cmake
# Rewrites a static archive as one relocatable object in which only the
# pto_* symbols stay global: the library's own modules (conn_read,
# slot_find, schema_decode, ...) still call each other, but a program linked
# with the archive can neither see them nor clash with them.  The static
# counterpart of the shared library's version script (ptoclient.map).
foreach(var LD OBJCOPY AR ARCHIVE)
  if(NOT ${var})
    message(FATAL_ERROR "localize_archive.cmake: -D${var}= is required.")
  endif()
endforeach()
get_filename_component(name ${ARCHIVE} NAME_WE)
set(work ${ARCHIVE}.localize)
set(object ${work}/${name}.o)
file(REMOVE_RECURSE ${work})
file(MAKE_DIRECTORY ${work})
execute_process(COMMAND ${LD} -r --whole-archive ${ARCHIVE} -o ${object} COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND ${OBJCOPY} --wildcard --keep-global-symbol=pto_* ${object}
  COMMAND_ERROR_IS_FATAL ANY)
file(REMOVE ${ARCHIVE})
execute_process(COMMAND ${AR} rcs ${ARCHIVE} ${object} COMMAND_ERROR_IS_FATAL ANY)
file(REMOVE_RECURSE ${work})
