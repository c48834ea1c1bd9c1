/* SPDX-License-Identifier: MIT */
/* abi_barriers.h - the load/store/log barrier checks of abi_barriers, as
 * macros over one type, shared by abi_barriers.c and abi_barriers_avx.c (the
 * 256-bit vectors, compiled with -mavx).
 *
 * For a type T with ABI suffix S (U1, U2, U4, U8, F, D, E, CF, CD, CE, M64,
 * M128, M256), ABI_BARRIER_CASE defines:
 *
 *   typed_S(cancel)   a transaction over a shared T[4] written as plain C:
 *                     gcc picks the barriers (_ITM_R/W at -O0; RaW, RfW, WaW,
 *                     WaR ... at -O2, or memcpy barriers for types it has no
 *                     barrier for), with a read-after-write checked inside;
 *   direct_S(cancel)  a transaction that calls every barrier of the type
 *                     itself: _ITM_R, RaR, RaW, RfW, W, WaR, WaW and L (the
 *                     log barrier, on a thread-local that a transaction_pure
 *                     function then overwrites behind gcc's back);
 *   check_S(cancel)   runs both, committed (cancel = 0) or cancelled, and
 *                     compares with the same operations done without a
 *                     transaction (committed) or with the values before
 *                     (cancelled). Returns 0 or a bit mask of what differed
 *                     (1: typed, 2: direct, 4: logged thread-local).
 *
 * Values are small integers, exact in every type, so == is exact (not
 * memcmp: a long double has padding bytes).
 */
#ifndef TXKIT_TESTS_ABI_BARRIERS_H
#define TXKIT_TESTS_ABI_BARRIERS_H

#include <stdint.h>
#include <string.h>

#include "abi_common.h"

extern int abi_cancel_now; /* 1, in another file: gcc cannot fold the cancel */

/* Equality of two values. Vectors compare lane by lane, without taking an
 * address: inside a transaction, a local whose address escapes may be
 * written through barriers (gcc does that), and a write-back runtime such as
 * txkit's STM keeps the new value in its write set until the commit, so a
 * transaction_pure function handed that address would read the old bytes. */
#define ABI_EQ_SCALAR(a, b) ((a) == (b))
#define ABI_EQ_VECTOR(a, b)                                      \
    __extension__({                                              \
        __typeof__((a) == (b)) m_ = (a) == (b);                  \
        int all_ = 1;                                            \
        for (size_t i_ = 0; i_ < sizeof m_ / sizeof m_[0]; i_++) \
            all_ &= m_[i_] != 0;                                 \
        all_;                                                    \
    })

/* Element k (0..3) of the initial array: BASE + k in every lane. */
#define ABI_INIT_SCALAR(T, dst, base, k) ((dst) = (T)((base) + (k)))
#define ABI_INIT_VECTOR(T, dst, base, k)                                \
    do {                                                                \
        for (size_t e_ = 0; e_ < sizeof(T) / sizeof((dst)[0]); e_++)    \
            (dst)[e_] = (__typeof__((dst)[0]))((base) + (k) + (int)e_); \
    } while (0)

/* The libitm ABI's barriers for one type (no libitm.h is installed). */
#define ABI_DECLARE_BARRIERS(S, T)     \
    T _ITM_R##S(const T *) ABI_PURE;   \
    T _ITM_RaR##S(const T *) ABI_PURE; \
    T _ITM_RaW##S(const T *) ABI_PURE; \
    T _ITM_RfW##S(const T *) ABI_PURE; \
    void _ITM_W##S(T *, T) ABI_PURE;   \
    void _ITM_WaR##S(T *, T) ABI_PURE; \
    void _ITM_WaW##S(T *, T) ABI_PURE; \
    void _ITM_L##S(const T *) ABI_PURE;

/* The typed transaction's body, on g (shared data in the transaction, a
 * private copy for the expected values). x_ and y_ are what it read. */
#define ABI_TYPED_BODY(g, x_, y_)                                       \
    do {                                                                \
        x_ = (g)[0];              /* load */                            \
        (g)[1] = x_ + 1;          /* store */                           \
        y_ = (g)[1];              /* load after own store */            \
        (g)[1] = y_ + x_;         /* store after store */               \
        (g)[2] = (g)[2] + (g)[0]; /* read for write, load after load */ \
        (g)[3] = (g)[1] * 2;      /* load after store, store */         \
    } while (0)

#define ABI_BARRIER_CASE(S, T, KIND, BASE)                                \
    ABI_DECLARE_BARRIERS(S, T)                                            \
    T typed_g_##S[4];                                                     \
    T direct_g_##S[4];                                                    \
    static __thread T tl_##S;                                             \
                                                                          \
    ABI_PURE static void set_tl_##S(T v) { tl_##S = v; }                  \
                                                                          \
    static void init_##S(void) {                                          \
        for (int k = 0; k < 4; k++) {                                     \
            ABI_INIT_##KIND(T, typed_g_##S[k], BASE, k);                  \
            ABI_INIT_##KIND(T, direct_g_##S[k], BASE, k + 4);             \
        }                                                                 \
        ABI_INIT_##KIND(T, tl_##S, BASE, 9);                              \
    }                                                                     \
                                                                          \
    __attribute__((noinline)) static void typed_##S(int cancel) {         \
        __transaction_atomic {                                            \
            T x, y;                                                       \
            ABI_TYPED_BODY(typed_g_##S, x, y);                            \
            T want = x + 1;                                               \
            CHECK(ABI_EQ_##KIND(y, want)); /* read-after-write, inside */ \
            if (cancel && abi_cancel_now)                                 \
                __transaction_cancel;                                     \
        }                                                                 \
    }                                                                     \
                                                                          \
    __attribute__((noinline)) static void direct_##S(int cancel) {        \
        __transaction_atomic {                                            \
            T *g = direct_g_##S;                                          \
            T a = _ITM_R##S(&g[0]);                                       \
            T b = _ITM_RaR##S(&g[0]);                                     \
            CHECK(ABI_EQ_##KIND(a, b));                                   \
            _ITM_W##S(&g[1], a + 1);                                      \
            T c = _ITM_RaW##S(&g[1]);                                     \
            T want = a + 1;                                               \
            CHECK(ABI_EQ_##KIND(c, want));                                \
            _ITM_WaW##S(&g[1], c + b);                                    \
            T d = _ITM_RfW##S(&g[2]);                                     \
            _ITM_WaR##S(&g[2], d + 2);                                    \
            T e = _ITM_R##S(&g[3]);                                       \
            _ITM_WaR##S(&g[3], e * 2);                                    \
            _ITM_L##S(&tl_##S);                                           \
            set_tl_##S(a * 3);                                            \
            if (cancel && abi_cancel_now)                                 \
                __transaction_cancel;                                     \
        }                                                                 \
    }                                                                     \
                                                                          \
    __attribute__((unused)) static int check_##S(int cancel) {            \
        T ex[4], dx[4], etl;                                              \
        int failed = 0;                                                   \
        init_##S();                                                       \
        memcpy(ex, typed_g_##S, sizeof ex);                               \
        memcpy(dx, direct_g_##S, sizeof dx);                              \
        etl = tl_##S;                                                     \
        if (!cancel) {                                                    \
            T x, y;                                                       \
            ABI_TYPED_BODY(ex, x, y);                                     \
            (void)y;                                                      \
            T a = dx[0];                                                  \
            dx[1] = a + 1 + a;                                            \
            dx[2] = dx[2] + 2;                                            \
            dx[3] = dx[3] * 2;                                            \
            etl = a * 3;                                                  \
            (void)x;                                                      \
        }                                                                 \
        typed_##S(cancel);                                                \
        direct_##S(cancel);                                               \
        for (int k = 0; k < 4; k++) {                                     \
            if (!ABI_EQ_##KIND(typed_g_##S[k], ex[k]))                    \
                failed |= 1;                                              \
            if (!ABI_EQ_##KIND(direct_g_##S[k], dx[k]))                   \
                failed |= 2;                                              \
        }                                                                 \
        if (!ABI_EQ_##KIND(tl_##S, etl))                                  \
            failed |= 4;                                                  \
        return failed;                                                    \
    }

#endif /* TXKIT_TESTS_ABI_BARRIERS_H */
