/* SPDX-License-Identifier: MIT */
/* longjmp.S - the jump back to a checkpoint (checkpoint.S saved it).
 *
 * void tk_longjmp(const tk_jmpbuf *jb, int value)
 *   Restores the registers and "returns" from the begin again with value,
 *   after a software abort has been rolled back. Under AddressSanitizer
 *   (TXKIT_SANITIZE) the frames it drops would leave their redzones poisoned;
 *   its callers are instrumented C and it is declared noreturn, so gcc calls
 *   __asan_handle_no_return() before each call, as for longjmp
 *   (tests/runtime/test_restart_stack.c).
 *
 * tk_jmpbuf layout (runtime/internal.h): rsp rbx rbp r12 r13 r14 r15 rip ssp.
 */
#ifdef __CET__
#include <cet.h>
#endif

    .text
    .globl tk_longjmp
    .hidden tk_longjmp
    .type tk_longjmp, @function
    .p2align 4
tk_longjmp:
    .cfi_startproc
    endbr64
    movl %esi, %eax
#if defined(__CET__) && (__CET__ & 2)
    movq 64(%rdi), %rdx
    testq %rdx, %rdx
    jz 3f
    xorl %ecx, %ecx
    rdsspq %rcx
    subq %rcx, %rdx             /* bytes of shadow stack to drop */
    shrq $3, %rdx
2:  cmpq $255, %rdx
    jbe 4f
    movl $255, %ecx
    incsspq %rcx
    subq $255, %rdx
    jmp 2b
4:  incsspq %rdx
3:
#endif
    movq 8(%rdi), %rbx
    movq 16(%rdi), %rbp
    movq 24(%rdi), %r12
    movq 32(%rdi), %r13
    movq 40(%rdi), %r14
    movq 48(%rdi), %r15
    movq 0(%rdi), %rsp
    jmp *56(%rdi)
    .cfi_endproc
    .size tk_longjmp, .-tk_longjmp

    .section .note.GNU-stack,"",@progbits
