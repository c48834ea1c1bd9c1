# SPDX-License-Identifier: MIT
# abi_compare.cmake - run one gcc -fgnu-tm program on the system libitm and on
# txkit, and require the same SUMMARY line from every run.
#
#   cmake -DEXE=<abi_x> -DEXE_TXKIT=<abi_x_txkit> -DDROPIN=<dir holding libitm.so.1>
#         [-DARGS=a|b] [-DENV=VAR=value|VAR=value] -P abi_compare.cmake
#
# Runs: EXE on the system libitm (its default method); the same EXE on the
# txkit drop-in with TXKIT_METHOD=stm and =serial; EXE_TXKIT (the build linked
# with libtxkit) with TXKIT_METHOD=auto. ENV is added to every run. A run that
# fails, or prints no or several SUMMARY lines, fails the comparison.

foreach(v IN ITEMS EXE EXE_TXKIT DROPIN)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "abi_compare.cmake: -D${v}=... is required")
  endif()
endforeach()
string(REPLACE "|" ";" args "${ARGS}")
string(REPLACE "|" ";" env "${ENV}")

set(names "system libitm" "txkit drop-in, stm" "txkit drop-in, serial" "txkit linked, auto")
set(envs "ABI_EXPECT_RUNTIME=libitm"
         "LD_LIBRARY_PATH=${DROPIN}|ABI_EXPECT_RUNTIME=txkit-dropin|TXKIT_METHOD=stm"
         "LD_LIBRARY_PATH=${DROPIN}|ABI_EXPECT_RUNTIME=txkit-dropin|TXKIT_METHOD=serial"
         "ABI_EXPECT_RUNTIME=txkit-linked|TXKIT_METHOD=auto")
set(exes "${EXE}" "${EXE}" "${EXE}" "${EXE_TXKIT}")

set(reference "")
set(reference_name "")
set(failed 0)
foreach(i RANGE 3)
  list(GET names ${i} name)
  list(GET envs ${i} run_env)
  list(GET exes ${i} exe)
  string(REPLACE "|" ";" run_env "${run_env}")
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env ${run_env} ${env} ${exe} ${args}
    OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 50)
  if(NOT rc EQUAL 0)
    message("---- ${name}: exit status ${rc}\n${out}${err}")
    message(FATAL_ERROR "abi_compare: the run on ${name} failed")
  endif()
  string(REGEX MATCHALL "(^|\n)SUMMARY [^\n]*" lines "${out}")
  list(LENGTH lines n)
  if(NOT n EQUAL 1)
    message("---- ${name}:\n${out}${err}")
    message(FATAL_ERROR "abi_compare: ${n} SUMMARY lines from the run on ${name}, expected 1")
  endif()
  string(STRIP "${lines}" line)
  message("${name}:\n  ${line}")
  if(i EQUAL 0)
    set(reference "${line}")
    set(reference_name "${name}")
  elseif(NOT line STREQUAL reference)
    message("MISMATCH: ${name} differs from ${reference_name}")
    set(failed 1)
  endif()
endforeach()
if(failed)
  message(FATAL_ERROR "abi_compare: the runtimes disagree (see MISMATCH above)")
endif()
message("abi_compare: all 4 runs agree")
