# SPDX-License-Identifier: MIT
# TxkitSanitize.cmake - the ASan+UBSan build (-DTXKIT_SANITIZE=ON).
#
# Every target is compiled and linked with -fsanitize=address,undefined,
# except code compiled with gcc -fgnu-tm: gcc refuses -fgnu-tm together with
# -fsanitize=address, and gcc 12 crashes on some -fgnu-tm code with
# -fsanitize=undefined. That code (tests/abi, tests/apps, the tx mode of
# cache/core, stats' sites_itm helper, the itm benchmarks) is compiled with
# -fno-sanitize=all placed before its -fgnu-tm, and still LINKED with
# -fsanitize=...: libasan then comes first in the program's DT_NEEDED, and the
# program runs against the instrumented libtxkit (linked, or as the libitm.so.1
# drop-in), with ASan checking every access the runtime itself makes.
#
#   TXKIT_GNU_TM_FLAGS          the flags to compile -fgnu-tm code with; for
#                               check_c_source_compiles() of -fgnu-tm code
#   txkit_sanitize_exempt_gnu_tm()
#                               called once at the end of the top-level
#                               CMakeLists: walks every target and source file
#                               of the project and puts -fno-sanitize=all before
#                               each -fgnu-tm, so that a new -fgnu-tm test
#                               directory needs nothing of its own.

if(TXKIT_SANITIZE)
  set(TXKIT_GNU_TM_FLAGS -fno-sanitize=all -fgnu-tm)
else()
  set(TXKIT_GNU_TM_FLAGS -fgnu-tm)
endif()

# _txkit_gnu_tm_fix(<out-var> <options...>): the options with -fno-sanitize=all
# inserted before -fgnu-tm (once).
function(_txkit_gnu_tm_fix out)
  set(opts ${ARGN})
  set(res "")
  set(prev "")
  foreach(o IN LISTS opts)
    if(o STREQUAL "-fgnu-tm" AND NOT prev STREQUAL "-fno-sanitize=all")
      list(APPEND res -fno-sanitize=all)
    endif()
    list(APPEND res "${o}")
    set(prev "${o}")
  endforeach()
  set(${out} "${res}" PARENT_SCOPE)
endfunction()

function(_txkit_gnu_tm_walk dir exempted_var)
  set(exempted ${${exempted_var}})
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(t IN LISTS targets)
    get_target_property(type ${t} TYPE)
    if(type STREQUAL "INTERFACE_LIBRARY" OR type STREQUAL "UTILITY")
      continue()
    endif()
    set(hit FALSE)
    get_target_property(copts ${t} COMPILE_OPTIONS)
    if(copts AND "-fgnu-tm" IN_LIST copts)
      _txkit_gnu_tm_fix(fixed ${copts})
      set_property(TARGET ${t} PROPERTY COMPILE_OPTIONS "${fixed}")
      set(hit TRUE)
    endif()
    get_target_property(srcs ${t} SOURCES)
    get_target_property(tdir ${t} SOURCE_DIR)
    foreach(s IN LISTS srcs)
      if(s MATCHES "^\\$<") # generator expression: not a file
        continue()
      endif()
      if(NOT IS_ABSOLUTE "${s}")
        set(s ${tdir}/${s})
      endif()
      get_property(sopts SOURCE ${s} TARGET_DIRECTORY ${t} PROPERTY COMPILE_OPTIONS)
      if(sopts AND "-fgnu-tm" IN_LIST sopts)
        _txkit_gnu_tm_fix(fixed ${sopts})
        set_property(SOURCE ${s} TARGET_DIRECTORY ${t} PROPERTY COMPILE_OPTIONS "${fixed}")
        set(hit TRUE)
      endif()
    endforeach()
    if(hit)
      list(APPEND exempted ${t})
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(d IN LISTS subdirs)
    _txkit_gnu_tm_walk(${d} exempted)
  endforeach()
  set(${exempted_var} "${exempted}" PARENT_SCOPE)
endfunction()

function(txkit_sanitize_exempt_gnu_tm)
  if(NOT TXKIT_SANITIZE)
    return()
  endif()
  set(exempted "")
  _txkit_gnu_tm_walk(${PROJECT_SOURCE_DIR} exempted)
  list(LENGTH exempted n)
  message(STATUS "TXKIT_SANITIZE: ${n} -fgnu-tm targets compiled without sanitizers "
                 "(linked with them, run on the instrumented libtxkit)")
endfunction()
