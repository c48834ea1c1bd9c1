/* SPDX-License-Identifier: MIT */
/* itm.h - the libitm ABI's constants (values fixed by the ABI, as gcc emits
 * them) and what the ABI layer shares inside txkit. */
#ifndef TK_ITM_H
#define TK_ITM_H

#include "runtime/internal.h"

/* _ITM_codeProperties */
#define TK_PR_INSTRUMENTED 0x0001u
#define TK_PR_UNINSTRUMENTED 0x0002u
#define TK_PR_HAS_NO_ABORT 0x0008u
#define TK_PR_DOES_GO_IRREVOCABLE 0x0040u
#define TK_PR_READ_ONLY 0x4000u
/* The properties txkit decides by (the code it may run, whether the block
 * may be cancelled, whether it goes irrevocable): two blocks whose
 * properties differ only in others (gcc marks a block that writes nothing
 * pr_readOnly, for one) begin the same way. */
#define TK_PR_DECIDES \
    (TK_PR_INSTRUMENTED | TK_PR_UNINSTRUMENTED | TK_PR_HAS_NO_ABORT | TK_PR_DOES_GO_IRREVOCABLE)

/* _ITM_actions */
#define TK_A_RUN_INSTRUMENTED 0x01u
#define TK_A_RUN_UNINSTRUMENTED 0x02u
#define TK_A_SAVE_LIVE 0x04u
#define TK_A_RESTORE_LIVE 0x08u
#define TK_A_ABORT 0x10u

/* _ITM_abortReason */
#define TK_USER_ABORT 1u
#define TK_OUTER_ABORT 16u

/* _ITM_howExecuting */
#define TK_OUTSIDE 0
#define TK_RETRYABLE 1
#define TK_IRREVOCABLE 2

/* A nested transaction that may be cancelled (closed nesting): where to go
 * back to, and how much of each log was there when it began. */
typedef struct tk_itm_cp {
    tk_jmpbuf jb;
    unsigned depth; /* nesting depth of the nested transaction itself */
    tk_vec saved;   /* the method's checkpoint (struct tk_method) */
    size_t ulog_len, allocs_len, frees_len, handlers_len, arena_len, captured_len;
} tk_itm_cp;

#endif /* TK_ITM_H */
