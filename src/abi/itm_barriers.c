/* SPDX-License-Identifier: MIT */
/* itm_barriers.c - the libitm ABI's load, store, log and memory barriers.
 *
 * Every barrier has one fast path: when the running attempt needs no
 * instrumentation (hardware, irrevocable, outside a transaction) it is a plain
 * access; otherwise it goes to the method's barrier in pieces of at most 8
 * bytes. The R/RaR/RaW/RfW and W/WaR/WaW variants are hints that NOrec does
 * not need, so they share the code. Defined with macros over the ABI's types
 * rather than written out 130 times.
 */
#include <string.h>

#include "abi/itm.h"
#include "methods/method.h"


/* Whole aligned words, up to four: gcc merges adjacent fields of a struct
 * into one vector access (_ITM_RM128 for two counters side by side), which
 * then takes the word barriers one word at a time, not tk_copy's byte ranges
 * (callgrind, the cache's insert section: ~300 instructions each before). */
static inline bool itm_words(uintptr_t a, size_t n) {
    return n > 8 && n <= 32 && !(n & 7) && !(a & 7);
}

/* Aligned words (gcc's pointers and counters) take the inline software read
 * of TX_LOAD, and anything within one 8-byte word goes to the method
 * directly; only other wider or straddling accesses are split by tk_copy. */
__attribute__((always_inline)) static inline void itm_load(void *dst, const void *src, size_t n);

/* The runtime's read of an aligned word that the inline one left (the value
 * returned: the common path keeps no stack slot for it). */
static __attribute__((noinline)) uint64_t itm_load_slow(const void *src, unsigned n) {
    uint64_t v = 0;
    _txkit_load_bytes(&v, src, n);
    return v;
}

static __attribute__((noinline)) void itm_load_word(void *dst, const void *src) {
    itm_load(dst, src, 8);
}
static inline void itm_load_words(void *dst, const void *src, size_t n) {
    for (size_t i = 0; i < n; i += 8)
        itm_load_word((char *)dst + i, (const char *)src + i);
}

__attribute__((always_inline)) static inline void itm_load(void *dst, const void *src, size_t n) {
    unsigned acc = _txkit_tls.access;
    if (TXKIT_LIKELY(!(acc & TXKIT_ACC_LOAD))) {
        __builtin_memcpy(dst, src, n);
    } else if ((n == 8 || n == 4) && !((uintptr_t)src & (n - 1))) {
        uint64_t w;
        if (!_txkit_load_sw_try(src, (unsigned)n, acc, 1, &w))
            w = itm_load_slow(src, (unsigned)n);
        __builtin_memcpy(dst, &w, n);
    } else if (n <= 8 && tk_piece((uintptr_t)src, n) == n) {
        _txkit_load_bytes(dst, src, n);
    } else if (itm_words((uintptr_t)src, n)) {
        itm_load_words(dst, src, n);
    } else {
        tk_copy(dst, src, n, 1, 0, 0); /* pieces of <= 8 bytes through the barrier */
    }
}

/* Always inline: each _ITM_W* barrier gets the path for its own size (the
 * undo log's record and the store without memcpy's size switch: vacation,
 * 1 thread, 70 -> 39 instructions per 8-byte store, callgrind). */
static inline void itm_store(void *dst, const void *src, size_t n);
static inline void itm_store_words(void *dst, const void *src, size_t n) {
    for (size_t i = 0; i < n; i += 8)
        itm_store((char *)dst + i, (const char *)src + i, 8);
}

__attribute__((always_inline)) static inline void itm_store(void *dst, const void *src, size_t n) {
    if (TXKIT_LIKELY(!(_txkit_tls.access & TXKIT_ACC_STORE))) {
        __builtin_memcpy(dst, src, n);
    } else if (n <= 8 && tk_piece((uintptr_t)dst, n) == n) {
        /* straight to the method: the access bits say an attempt runs */
        tk_thread *t = tk_cur;
        if (TXKIT_LIKELY(!t->doomed))
            tk_method_store(t, dst, src, n);
        else
            _txkit_store_bytes(dst, src, n); /* C++ unwinding: its rules */
    } else if (itm_words((uintptr_t)dst, n)) {
        itm_store_words(dst, src, n);
    } else {
        tk_copy(dst, src, n, 0, 1, 0);
    }
}

/* _ITM_L*: memory only this transaction uses (e.g. a local whose address
 * escaped) that must get its old value back on abort. A hardware attempt
 * and an irrevocable one need nothing. */
static void itm_log(const void *addr, size_t n) {
    tk_thread *t = tk_cur;
    if (_txkit_tls.depth == 0 || !_txkit_tls.access || !t || t->doomed || t->ctl.irrevocable)
        return;
    tk_undo_log(t, addr, n);
}

typedef int tk_m64 __attribute__((vector_size(8), may_alias));
typedef float tk_m128 __attribute__((vector_size(16), may_alias));
typedef float tk_m256 __attribute__((vector_size(32), may_alias));

#define ITM_READ(NAME, T, ATTR)                                    \
    TK_EXPORT ATTR T _ITM_##NAME(const T *p) {                     \
        T v;                                                       \
        if (TXKIT_LIKELY(!(_txkit_tls.access & TXKIT_ACC_LOAD))) { \
            __builtin_memcpy(&v, p, sizeof v);                     \
            return v; /* its own return, not a shared exit */      \
        }                                                          \
        itm_load(&v, p, sizeof v);                                 \
        return v;                                                  \
    }
#define ITM_WRITE(NAME, T, ATTR) \
    TK_EXPORT ATTR void _ITM_##NAME(T *p, T v) { itm_store(p, &v, sizeof v); }

#define ITM_TYPE(S, T, ATTR)   \
    ITM_READ(R##S, T, ATTR)    \
    ITM_READ(RaR##S, T, ATTR)  \
    ITM_READ(RaW##S, T, ATTR)  \
    ITM_READ(RfW##S, T, ATTR)  \
    ITM_WRITE(W##S, T, ATTR)   \
    ITM_WRITE(WaR##S, T, ATTR) \
    ITM_WRITE(WaW##S, T, ATTR) \
    TK_EXPORT ATTR void _ITM_L##S(const T *p) { itm_log(p, sizeof *p); }

#define NOATTR
ITM_TYPE(U1, uint8_t, NOATTR)
ITM_TYPE(U2, uint16_t, NOATTR)
ITM_TYPE(U4, uint32_t, NOATTR)
ITM_TYPE(U8, uint64_t, NOATTR)
ITM_TYPE(F, float, NOATTR)
ITM_TYPE(D, double, NOATTR)
ITM_TYPE(E, long double, NOATTR)
ITM_TYPE(CF, float _Complex, NOATTR)
ITM_TYPE(CD, double _Complex, NOATTR)
ITM_TYPE(CE, long double _Complex, NOATTR)
ITM_TYPE(M64, tk_m64, NOATTR)
ITM_TYPE(M128, tk_m128, NOATTR)
/* 256-bit vectors travel in ymm registers only when AVX is on, as in the
 * callers that use them (gcc emits these barriers only under -mavx). */
ITM_TYPE(M256, tk_m256, __attribute__((target("avx"))))

TK_EXPORT void _ITM_LB(const void *p, size_t n) { itm_log(p, n); }

/* ------------------------------------------------- memcpy, memmove, memset */

/* _ITM_mem{cpy,move}R{n,t,taR,taW}W{n,t,taR,taW}: n = not transactional. */
#define ITM_COPY(OP, MOVE, SRC, SRC_TX, DST, DST_TX)                                 \
    TK_EXPORT void _ITM_##OP##R##SRC##W##DST(void *dst, const void *src, size_t n) { \
        tk_copy(dst, src, n, SRC_TX, DST_TX, MOVE);                                  \
    }
#define ITM_COPIES(OP, MOVE)           \
    ITM_COPY(OP, MOVE, n, 0, t, 1)     \
    ITM_COPY(OP, MOVE, n, 0, taR, 1)   \
    ITM_COPY(OP, MOVE, n, 0, taW, 1)   \
    ITM_COPY(OP, MOVE, t, 1, n, 0)     \
    ITM_COPY(OP, MOVE, t, 1, t, 1)     \
    ITM_COPY(OP, MOVE, t, 1, taR, 1)   \
    ITM_COPY(OP, MOVE, t, 1, taW, 1)   \
    ITM_COPY(OP, MOVE, taR, 1, n, 0)   \
    ITM_COPY(OP, MOVE, taR, 1, t, 1)   \
    ITM_COPY(OP, MOVE, taR, 1, taR, 1) \
    ITM_COPY(OP, MOVE, taR, 1, taW, 1) \
    ITM_COPY(OP, MOVE, taW, 1, n, 0)   \
    ITM_COPY(OP, MOVE, taW, 1, t, 1)   \
    ITM_COPY(OP, MOVE, taW, 1, taR, 1) \
    ITM_COPY(OP, MOVE, taW, 1, taW, 1)
ITM_COPIES(memcpy, 0)
ITM_COPIES(memmove, 1)

#define ITM_SET(NAME) \
    TK_EXPORT void _ITM_##NAME(void *dst, int c, size_t n) { tx_memset(dst, c, n); }
ITM_SET(memsetW)
ITM_SET(memsetWaR)
ITM_SET(memsetWaW)
