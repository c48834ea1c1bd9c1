/* checkpoint.S - the returns-twice entry of an atomic block, and the jump back.
 *
 * int _txkit_begin(txkit_site_t *site, unsigned flags)
 *   Saves the callee-saved registers, the caller's stack pointer and the return
 *   address in a tk_jmpbuf on its own stack, then calls
 *   tk_begin_c(site, flags, &jmpbuf), which copies it into the thread's
 *   descriptor when this is the outermost block. A hardware attempt starts
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
    leaq 8(%rsp), %rax          /* the caller's rsp once we have returned */
    subq $72, %rsp
    .cfi_adjust_cfa_offset 72
    movq %rax, 0(%rsp)
    movq %rbx, 8(%rsp)
    movq %rbp, 16(%rsp)
    movq %r12, 24(%rsp)
    movq %r13, 32(%rsp)
    movq %r14, 40(%rsp)
    movq %r15, 48(%rsp)
    movq 72(%rsp), %rax         /* return address */
    movq %rax, 56(%rsp)
    movq %rsp, %rdx
    call tk_begin_c
    addq $72, %rsp
    .cfi_adjust_cfa_offset -72
    ret
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
