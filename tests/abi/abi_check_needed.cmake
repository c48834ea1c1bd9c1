# SPDX-License-Identifier: MIT
# abi_check_needed.cmake - the txkit-linked -fgnu-tm programs must need
# libtxkit and must not need libitm (gcc links libitm only when -fgnu-tm is on
# the link line; these are linked without it).
#
#   cmake -DREADELF=<readelf> -DFILES=a|b|c -P abi_check_needed.cmake

string(REPLACE "|" ";" files "${FILES}")
set(bad 0)
set(count 0)
foreach(f IN LISTS files)
  execute_process(COMMAND ${READELF} -d -W ${f}
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${READELF} -d ${f} failed: ${err}")
  endif()
  string(REGEX MATCHALL "\\(NEEDED\\)[^\n]*\\[[^]\n]*\\]" needed "${out}")
  string(REGEX MATCHALL "\\[[^]\n]*\\]" libs "${needed}")
  get_filename_component(base ${f} NAME)
  message("${base}: NEEDED ${libs}")
  if(libs MATCHES "libitm")
    message("ERROR: ${f} needs libitm")
    set(bad 1)
  endif()
  if(NOT libs MATCHES "\\[libtxkit\\.so")
    message("ERROR: ${f} does not need libtxkit")
    set(bad 1)
  endif()
  math(EXPR count "${count} + 1")
endforeach()
if(count EQUAL 0)
  message(FATAL_ERROR "abi_check_needed: no file to check")
endif()
if(bad)
  message(FATAL_ERROR "abi_check_needed: a txkit-linked program is also linked with libitm")
endif()
message("abi_check_needed: ${count} programs need libtxkit and not libitm")
