/* SPDX-License-Identifier: MIT */
/* checkpoint.S - the returns-twice entries of a transaction.
 *
 * int _txkit_begin(txkit_site_t *site, unsigned flags)            (TX_ATOMIC)
 * uint32_t _ITM_beginTransaction(uint32_t properties, ...)         (gcc -fgnu-tm)
 *   Find where to save (the thread descriptor's checkpoint, read inline for
 *   an outermost TX_ATOMIC; else tk_jb_slot / tk_itm_jb_slot: that one, or a
 *   nested one), save the callee-saved
 *   registers, the caller's stack pointer, the return address and the shadow
 *   stack pointer there, and tail-call the C begin, which returns to our
 *   caller. Saving in place, with 8-byte stores never reloaded wider, avoids a
 *   store-forwarding stall. A hardware attempt starts inside the C begin; when
 *   the CPU aborts it, execution resumes there with all registers and memory as
 *   they were, so no jump is needed.
 *
 * The jump back, tk_longjmp, is in longjmp.S (the engine and the ABI layer
 * call it; this file calls them).
 *
 * tk_jmpbuf layout (runtime/internal.h): rsp rbx rbp r12 r13 r14 r15 rip ssp.
 */
#ifdef __CET__
#include <cet.h>
#endif

/* SAVE: rax = jmpbuf, (%rsp) = our return address. Clobbers rcx. */
.macro SAVE_CHECKPOINT
    leaq 8(%rsp), %rcx          /* the caller's rsp once we have returned */
    movq %rcx, 0(%rax)
    movq %rbx, 8(%rax)
    movq %rbp, 16(%rax)
    movq %r12, 24(%rax)
    movq %r13, 32(%rax)
    movq %r14, 40(%rax)
    movq %r15, 48(%rax)
    movq (%rsp), %rcx           /* return address */
    movq %rcx, 56(%rax)
#if defined(__CET__) && (__CET__ & 2)
    xorl %ecx, %ecx
    rdsspq %rcx                 /* stays 0 when shadow stacks are off */
    testq %rcx, %rcx
    jz 1f
    addq $8, %rcx               /* as it will be once we have returned */
1:
    movq %rcx, 64(%rax)
#endif
    /* (without shadow-stack support in this build ssp is never read:
     * longjmp.S's only reader is under the same condition) */
.endm

    .text
    .globl _txkit_begin
    .type _txkit_begin, @function
    .p2align 4
_txkit_begin:
    .cfi_startproc
    endbr64
    /* The common case inline: the thread has its descriptor (tk_cur) and
     * begins an outermost block (_txkit_tls.depth 0), whose checkpoint is
     * the descriptor's first field (txn.c asserts both offsets). */
    movq tk_cur@gottpoff(%rip), %rax
    movq %fs:(%rax), %rax
    testq %rax, %rax
    jz 9f
    movq _txkit_tls@gottpoff(%rip), %rcx
    cmpl $0, %fs:4(%rcx)
    jne 9f
    SAVE_CHECKPOINT
    movq %rdi, %rsi
    movq %rax, %rdi
    jmp tk_begin_c_outer        /* tk_begin_c_outer(t, site) returns to our caller */
9:  /* the others: tk_jb_slot creates the descriptor, or picks the nested slot */
    pushq %rdi
    .cfi_adjust_cfa_offset 8
    pushq %rsi
    .cfi_adjust_cfa_offset 8
    subq $8, %rsp               /* keep the call 16-byte aligned */
    .cfi_adjust_cfa_offset 8
    call tk_jb_slot
    addq $8, %rsp
    .cfi_adjust_cfa_offset -8
    popq %rsi
    .cfi_adjust_cfa_offset -8
    popq %rdi
    .cfi_adjust_cfa_offset -8
    SAVE_CHECKPOINT
    jmp tk_begin_c              /* tk_begin_c(site, flags) returns to our caller */
    .cfi_endproc
    .size _txkit_begin, .-_txkit_begin

    .globl _ITM_beginTransaction
    .type _ITM_beginTransaction, @function
    .p2align 4
_ITM_beginTransaction:
    .cfi_startproc
    endbr64
    pushq %rdi                  /* also aligns the stack for the call */
    .cfi_adjust_cfa_offset 8
    call tk_itm_jb_slot         /* tk_itm_jb_slot(properties) */
    popq %rdi
    .cfi_adjust_cfa_offset -8
    SAVE_CHECKPOINT
    jmp tk_itm_begin            /* tk_itm_begin(properties) returns the actions */
    .cfi_endproc
    .size _ITM_beginTransaction, .-_ITM_beginTransaction


    .section .note.GNU-stack,"",@progbits
