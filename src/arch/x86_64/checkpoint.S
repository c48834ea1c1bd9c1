/* checkpoint.S - the returns-twice entry of an atomic block, and the jump back.
 *
 * int _txkit_begin(txkit_site_t *site, unsigned flags)
 *   Asks tk_jb_slot() where to save (the thread descriptor's checkpoint, or a
 *   scratch slot inside a transaction), saves the callee-saved registers, the
 *   caller's stack pointer and the return address there, and tail-calls
 *   tk_begin_c(site, flags). Saving in place, with 8-byte stores that are never
 *   reloaded wider, avoids a store-forwarding stall. A hardware attempt starts
 *   inside tk_begin_c; when the CPU aborts it, execution resumes there with
 *   all registers and memory as they were, so no jump is needed.
 *
 * void tk_longjmp(const tk_jmpbuf *jb, int value)
 *   Restores the registers and "returns" from _txkit_begin again with value,
 *   after a software abort has been rolled back.
 *
 * tk_jmpbuf layout (runtime/internal.h): rsp rbx rbp r12 r13 r14 r15 rip.
 */
    .text
    .globl _txkit_begin
    .type _txkit_begin, @function
    .p2align 4
_txkit_begin:
    .cfi_startproc
    endbr64
    pushq %rdi
    .cfi_adjust_cfa_offset 8
    pushq %rsi
    .cfi_adjust_cfa_offset 8
    subq $8, %rsp               /* keep the call 16-byte aligned */
    .cfi_adjust_cfa_offset 8
    call tk_jb_slot             /* rax = where to save (the thread's checkpoint) */
    addq $8, %rsp
    .cfi_adjust_cfa_offset -8
    popq %rsi
    .cfi_adjust_cfa_offset -8
    popq %rdi
    .cfi_adjust_cfa_offset -8
    /* Callee-saved registers are intact: tk_jb_slot preserved them. */
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
    jmp tk_begin_c              /* tail call: tk_begin_c(site, flags) returns to our caller */
    .cfi_endproc
    .size _txkit_begin, .-_txkit_begin

    .globl tk_longjmp
    .hidden tk_longjmp
    .type tk_longjmp, @function
    .p2align 4
tk_longjmp:
    .cfi_startproc
    endbr64
    movl %esi, %eax
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
