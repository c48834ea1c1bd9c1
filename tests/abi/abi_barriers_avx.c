/* SPDX-License-Identifier: MIT */
/* abi_barriers_avx.c - the 256-bit vector barriers (_ITM_*M256) of
 * abi_barriers. Compiled with -mavx: 256-bit vectors travel in ymm registers,
 * as gcc passes them only when AVX is on. abi_barriers calls this file only
 * when the CPU has AVX.
 */
#include "abi_barriers.h"

typedef double abi_m256 __attribute__((vector_size(32)));

ABI_BARRIER_CASE(M256, abi_m256, VECTOR, 41)

int abi_barriers_m256(int cancel);

/* 0, or the failure bits of check_M256 (1 typed, 2 direct, 4 log). */
int abi_barriers_m256(int cancel) { return check_M256(cancel); }
