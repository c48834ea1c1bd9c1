/* SPDX-License-Identifier: MIT */
/* test_txn_barriers.c - the accesses of src/runtime/txn.c (TX_LOAD, TX_STORE,
 * tx_memcpy, tx_memset of include/txkit/tx.h): every type, float bits, mixed
 * widths, rollback, large read and write sets. See api_util.h for how these
 * programs run. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "api_util.h"

/* ================================================================ barriers */

static int8_t g_i8;
static uint8_t g_u8;
static int16_t g_i16;
static uint16_t g_u16;
static int32_t g_i32;
static uint32_t g_u32;
static int64_t g_i64;
static uint64_t g_u64;
static float g_f;
static double g_d;
static int g_target[4];
static int *g_ptr;
static const void *g_cvptr;
static bool g_bool;
static char g_char;
static long g_long;
static unsigned long long g_ull;

static void set_barrier_originals(void) {
    g_i8 = 1;
    g_u8 = 2;
    g_i16 = 3;
    g_u16 = 4;
    g_i32 = 5;
    g_u32 = 6;
    g_i64 = 7;
    g_u64 = 8;
    g_f = 9.5f;
    g_d = 10.25;
    g_ptr = &g_target[0];
    g_cvptr = &g_target[1];
    g_bool = false;
    g_char = 'a';
    g_long = 11;
    g_ull = 12;
}

static void check_barrier_originals_tx(void) {
    CHECK_EQ(TX_LOAD(&g_i8), 1);
    CHECK_EQ(TX_LOAD(&g_u8), 2);
    CHECK_EQ(TX_LOAD(&g_i16), 3);
    CHECK_EQ(TX_LOAD(&g_u16), 4);
    CHECK_EQ(TX_LOAD(&g_i32), 5);
    CHECK_EQ(TX_LOAD(&g_u32), 6);
    CHECK_EQ(TX_LOAD(&g_i64), 7);
    CHECK_EQ(TX_LOAD(&g_u64), 8);
    CHECK(TX_LOAD(&g_f) == 9.5f);
    CHECK(TX_LOAD(&g_d) == 10.25);
    CHECK(TX_LOAD(&g_ptr) == &g_target[0]);
    CHECK(TX_LOAD(&g_cvptr) == &g_target[1]);
    CHECK(TX_LOAD(&g_bool) == false);
    CHECK_EQ(TX_LOAD(&g_char), 'a');
    CHECK_EQ(TX_LOAD(&g_long), 11);
    CHECK_EQ(TX_LOAD(&g_ull), 12);
}

static void store_barrier_new_values(void) {
    TX_STORE(&g_i8, -5);
    TX_STORE(&g_u8, 250);
    TX_STORE(&g_i16, -30000);
    TX_STORE(&g_u16, 65000);
    TX_STORE(&g_i32, INT32_MIN + 3);
    TX_STORE(&g_u32, 0xDEADBEEFu);
    TX_STORE(&g_i64, INT64_MIN + 7);
    TX_STORE(&g_u64, 0xFEDCBA9876543210ULL);
    TX_STORE(&g_f, -3.25f);
    TX_STORE(&g_d, -1.0e300);
    TX_STORE(&g_ptr, &g_target[2]);
    TX_STORE(&g_cvptr, (const void *)&g_target[3]);
    TX_STORE(&g_bool, true);
    TX_STORE(&g_char, 'z');
    TX_STORE(&g_long, -123456789L);
    TX_STORE(&g_ull, ~0ULL);
}

static void check_barrier_new_values_tx(void) {
    CHECK_EQ(TX_LOAD(&g_i8), -5);
    CHECK_EQ(TX_LOAD(&g_u8), 250);
    CHECK_EQ(TX_LOAD(&g_i16), -30000);
    CHECK_EQ(TX_LOAD(&g_u16), 65000);
    CHECK_EQ(TX_LOAD(&g_i32), INT32_MIN + 3);
    CHECK_EQ(TX_LOAD(&g_u32), 0xDEADBEEFu);
    CHECK_EQ(TX_LOAD(&g_i64), INT64_MIN + 7);
    CHECK(TX_LOAD(&g_u64) == 0xFEDCBA9876543210ULL);
    CHECK(TX_LOAD(&g_f) == -3.25f);
    CHECK(TX_LOAD(&g_d) == -1.0e300);
    CHECK(TX_LOAD(&g_ptr) == &g_target[2]);
    CHECK(TX_LOAD(&g_cvptr) == &g_target[3]);
    CHECK(TX_LOAD(&g_bool) == true);
    CHECK_EQ(TX_LOAD(&g_char), 'z');
    CHECK_EQ(TX_LOAD(&g_long), -123456789L);
    CHECK(TX_LOAD(&g_ull) == ~0ULL);
}

/* Every supported type: stores are visible to the transaction's own loads,
 * committed afterwards, and loads/stores outside transactions are plain. */
static void test_barriers_types(void) {
    set_barrier_originals();
    CHECK_EQ(tx_in_transaction(), 0);
    /* Outside a transaction: plain accesses. */
    check_barrier_originals_tx();
    TX_ATOMIC {
        check_barrier_originals_tx();
        store_barrier_new_values();
        check_barrier_new_values_tx();
        /* Storing twice: the last value wins. */
        TX_STORE(&g_i16, 17);
        TX_STORE(&g_i16, -30000);
    }
    CHECK_EQ(tx_in_transaction(), 0);
    /* Plain reads after the commit. */
    CHECK_EQ(g_i8, -5);
    CHECK_EQ(g_u8, 250);
    CHECK_EQ(g_i16, -30000);
    CHECK_EQ(g_u16, 65000);
    CHECK_EQ(g_i32, INT32_MIN + 3);
    CHECK_EQ(g_u32, 0xDEADBEEFu);
    CHECK_EQ(g_i64, INT64_MIN + 7);
    CHECK(g_u64 == 0xFEDCBA9876543210ULL);
    CHECK(g_f == -3.25f);
    CHECK(g_d == -1.0e300);
    CHECK(g_ptr == &g_target[2]);
    CHECK(g_cvptr == &g_target[3]);
    CHECK(g_bool == true);
    CHECK_EQ(g_char, 'z');
    CHECK_EQ(g_long, -123456789L);
    CHECK(g_ull == ~0ULL);
    check_barrier_new_values_tx();

    /* Outside a transaction TX_STORE is a plain write. */
    TX_STORE(&g_i32, 77);
    CHECK_EQ(g_i32, 77);
    /* Qualified pointers: const for loads, volatile for both. */
    const int32_t *cp = &g_i32;
    volatile int64_t *vp = &g_i64;
    TX_ATOMIC {
        CHECK_EQ(TX_LOAD(cp), 77);
        TX_STORE(vp, 4242);
        CHECK_EQ(TX_LOAD(vp), 4242);
    }
    CHECK_EQ(g_i64, 4242);
}

/* Floating point values travel as bits: -0.0, NaN payloads, denormals. */
static double g_dbits[4];
static float g_fbits[4];

static void test_barriers_float_bits(void) {
    uint64_t nan_bits = 0x7FF4000000ABCDEFULL; /* signalling NaN with a payload */
    uint32_t fnan_bits = 0x7FA00123u;
    double dnan, ddenorm = 4.9406564584124654e-324;
    float fnan, fdenorm = 1.40129846e-45f;
    memcpy(&dnan, &nan_bits, sizeof dnan);
    memcpy(&fnan, &fnan_bits, sizeof fnan);
    memset(g_dbits, 0, sizeof g_dbits);
    memset(g_fbits, 0, sizeof g_fbits);
    TX_ATOMIC {
        TX_STORE(&g_dbits[0], -0.0);
        TX_STORE(&g_dbits[1], dnan);
        TX_STORE(&g_dbits[2], ddenorm);
        TX_STORE(&g_dbits[3], INFINITY);
        TX_STORE(&g_fbits[0], -0.0f);
        TX_STORE(&g_fbits[1], fnan);
        TX_STORE(&g_fbits[2], fdenorm);
        TX_STORE(&g_fbits[3], -INFINITY);
        double d1 = TX_LOAD(&g_dbits[1]);
        uint64_t b;
        memcpy(&b, &d1, sizeof b);
        CHECK(b == nan_bits);
        CHECK(signbit(TX_LOAD(&g_dbits[0])));
    }
    uint64_t b;
    uint32_t fb;
    CHECK(g_dbits[0] == 0.0 && signbit(g_dbits[0]));
    memcpy(&b, &g_dbits[1], sizeof b);
    CHECK(b == nan_bits);
    CHECK(g_dbits[2] == ddenorm);
    CHECK(isinf(g_dbits[3]) && g_dbits[3] > 0);
    CHECK(g_fbits[0] == 0.0f && signbit(g_fbits[0]));
    memcpy(&fb, &g_fbits[1], sizeof fb);
    CHECK(fb == fnan_bits);
    CHECK(g_fbits[2] == fdenorm);
    CHECK(isinf(g_fbits[3]) && g_fbits[3] < 0);
    TX_ATOMIC {
        double d = TX_LOAD(&g_dbits[1]);
        float f = TX_LOAD(&g_fbits[1]);
        uint64_t bb;
        uint32_t ff;
        memcpy(&bb, &d, sizeof bb);
        memcpy(&ff, &f, sizeof ff);
        CHECK(bb == nan_bits);
        CHECK(ff == fnan_bits);
    }
}

/* A software abort undoes the stores of every type. */
static void test_barriers_rollback(void) {
    set_barrier_originals();
    struct tk_attempts a;
    tk_attempts_init(&a);
    TX_ATOMIC {
        int n = tk_attempt_no(&a);
        check_barrier_originals_tx();
        if (n == 0) {
            store_barrier_new_values();
            check_barrier_new_values_tx();
            tx_restart();
        }
    }
    CHECK_EQ(tk_explicit_aborts() - a.explicit_base, 1);
    /* The committed attempt stored nothing. */
    check_barrier_originals_tx();
    CHECK_EQ(g_i8, 1);
    CHECK_EQ(g_u64, 8);
    CHECK(g_d == 10.25);
    CHECK(g_ptr == &g_target[0]);
}

/* Accesses of different widths to the same words: each store changes exactly
 * its bytes, loads of any width see the merged result, neighbours stay. */
typedef union {
    uint64_t w[4];
    uint32_t d[8];
    uint16_t h[16];
    uint8_t b[32];
} mixed_t;
static mixed_t g_mix;

static void test_barriers_mixed_widths(void) {
    mixed_t model;
    memset(&g_mix, 0x11, sizeof g_mix);
    memset(&model, 0x11, sizeof model);
    model.w[0] = 0x0102030405060708ULL;
    model.b[3] = 0xAA;
    model.h[5] = 0xBBCC;
    model.d[3] = 0x99887766u;
    model.b[17] = 0x42;
    model.d[5] = 0xCAFEF00Du;
    model.b[20] = 0x5A;
    TX_ATOMIC {
        TX_STORE(&g_mix.w[0], 0x0102030405060708ULL);
        TX_STORE(&g_mix.b[3], 0xAA);
        TX_STORE(&g_mix.h[5], 0xBBCC);
        TX_STORE(&g_mix.d[3], 0x99887766u);
        TX_STORE(&g_mix.b[17], 0x42);
        TX_STORE(&g_mix.d[5], 0xCAFEF00Du);
        TX_STORE(&g_mix.b[20], 0x5A); /* inside the word just stored as 32 bits */
        for (size_t i = 0; i < 4; i++)
            CHECK(TX_LOAD(&g_mix.w[i]) == model.w[i]);
        for (size_t i = 0; i < 8; i++)
            CHECK_EQ(TX_LOAD(&g_mix.d[i]), model.d[i]);
        for (size_t i = 0; i < 16; i++)
            CHECK_EQ(TX_LOAD(&g_mix.h[i]), model.h[i]);
        for (size_t i = 0; i < 32; i++)
            CHECK_EQ(TX_LOAD(&g_mix.b[i]), model.b[i]);
    }
    CHECK(memcmp(&g_mix, &model, sizeof model) == 0);

    /* The same under a restart: the aborted attempt leaves no byte behind. */
    struct tk_attempts a;
    tk_attempts_init(&a);
    TX_ATOMIC {
        int n = tk_attempt_no(&a);
        for (size_t i = 0; i < 32; i++)
            CHECK_EQ(TX_LOAD(&g_mix.b[i]), model.b[i]);
        if (n == 0) {
            TX_STORE(&g_mix.b[1], 0);
            TX_STORE(&g_mix.h[3], 0);
            TX_STORE(&g_mix.d[2], 0);
            TX_STORE(&g_mix.w[3], 0);
            TX_STORE(&g_mix.b[31], 0);
            tx_restart();
        }
    }
    CHECK(memcmp(&g_mix, &model, sizeof model) == 0);
}

/* Write sets of every size around the point where software TM starts
 * indexing them (stm_norec.c: WS_SMALL), with words that share a bloom bit
 * (512 bytes apart) and words that share one: each word written once or
 * again, whole or in part, reads its own writes, and an aborted attempt
 * leaves nothing behind. */
#define WS_WORDS 48
static uint64_t g_ws[WS_WORDS * 64]; /* word k at g_ws[k * 64]: 512 bytes apart */

static void test_write_set_sizes(void) {
    for (int n = 1; n <= WS_WORDS; n++) {
        for (int k = 0; k < WS_WORDS; k++)
            g_ws[k * 64] = (uint64_t)k;
        struct tk_attempts a;
        tk_attempts_init(&a);
        TX_ATOMIC {
            int att = tk_attempt_no(&a);
            for (int i = 0; i < n; i++) {
                int k = (i * 7) % n; /* a permutation of 0..n-1 for n not a multiple of 7 */
                if (n % 7 == 0)
                    k = i;
                CHECK_EQ(TX_LOAD(&g_ws[k * 64]), (uint64_t)k);
                TX_STORE(&g_ws[k * 64], (uint64_t)(1000 + k + att));
                if (i % 3 == 0) /* its low byte again: found, not added */
                    TX_STORE((uint8_t *)&g_ws[k * 64], (uint8_t)(k + 7));
                if (i % 4 == 1) /* the whole word again */
                    TX_STORE(&g_ws[k * 64], (uint64_t)(2000 + k + att));
            }
            for (int i = 0; i < n; i++) {
                int k = (i * 7) % n;
                if (n % 7 == 0)
                    k = i;
                uint64_t want = (uint64_t)(i % 4 == 1 ? 2000 + k + att : 1000 + k + att);
                if (i % 3 == 0 && i % 4 != 1)
                    want = (want & ~0xffull) | (uint8_t)(k + 7);
                CHECK_EQ(TX_LOAD(&g_ws[k * 64]), want);
            }
            for (int k = n; k < WS_WORDS; k++) /* same bloom bits, never written */
                CHECK_EQ(TX_LOAD(&g_ws[k * 64]), (uint64_t)k);
            if (att == 0)
                tx_restart();
        }
        for (int i = 0; i < n; i++) {
            int k = (i * 7) % n;
            if (n % 7 == 0)
                k = i;
            uint64_t want = (uint64_t)(i % 4 == 1 ? 2001 + k : 1001 + k);
            if (i % 3 == 0 && i % 4 != 1)
                want = (want & ~0xffull) | (uint8_t)(k + 7);
            CHECK_EQ(g_ws[k * 64], want);
        }
        for (int k = n; k < WS_WORDS; k++)
            CHECK_EQ(g_ws[k * 64], (uint64_t)k);
    }
}

/* Big read and write sets: logs must grow, and a rollback of thousands of
 * words must restore every one of them. */
#define BIG_N 20000
static long g_big[BIG_N];

static void test_big_transaction(void) {
    for (long i = 0; i < BIG_N; i++)
        g_big[i] = i;
    struct tk_attempts a;
    tk_attempts_init(&a);
    TX_ATOMIC {
        int n = tk_attempt_no(&a);
        long sum = 0;
        for (long i = 0; i < BIG_N; i++) {
            long v = TX_LOAD(&g_big[i]);
            CHECK_EQ(v, i);
            sum += v;
        }
        CHECK_EQ(sum, (long)BIG_N * (BIG_N - 1) / 2);
        for (long i = 0; i < BIG_N; i++)
            TX_STORE(&g_big[i], 3 * i + n);
        for (long i = 0; i < BIG_N; i += 97)
            CHECK_EQ(TX_LOAD(&g_big[i]), 3 * i + n);
        if (n == 0)
            tx_restart();
    }
    CHECK_EQ(tk_explicit_aborts() - a.explicit_base, 1);
    for (long i = 0; i < BIG_N; i++)
        CHECK_EQ(g_big[i], 3 * i + 1);
}

/* ============================================================ memcpy/memset */

static unsigned char g_buf[256];
static unsigned char g_src[256];

static void fill_pattern(unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(seed * 31u + i * 7u + 1u);
}

/* Transactions in loops live in their own functions: gcc's -Wclobbered
 * (part of -Wextra) cannot tell that a loop counter is never modified between
 * the block's checkpoint and a restart. */
static void tx_copy(void *dst, const void *src, size_t n) {
    TX_ATOMIC {
        tx_memcpy(dst, src, n);
    }
}

static void tx_set(void *dst, int c, size_t n) {
    TX_ATOMIC {
        tx_memset(dst, c, n);
    }
}

static void test_memcpy_memset(void) {
    static const size_t lens[] = {0, 1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 24, 31, 33, 64, 100};
    unsigned char model[256];
    unsigned seed = 0;
    for (size_t doff = 0; doff < 10; doff++) {
        for (size_t li = 0; li < ARRAY_LEN(lens); li++) {
            size_t len = lens[li];
            for (size_t soff = 0; soff < 10; soff += 3) {
                seed++;
                fill_pattern(g_buf, sizeof g_buf, seed);
                fill_pattern(g_src, sizeof g_src, seed * 7 + 3);
                memcpy(model, g_buf, sizeof model);
                memcpy(model + 40 + doff, g_src + soff, len);
                tx_copy(g_buf + 40 + doff, g_src + soff, len);
                CHECK_MSG(memcmp(g_buf, model, sizeof model) == 0,
                          "tx_memcpy dst+%zu src+%zu len %zu", doff, soff, len);
            }
            int c = (int)(0x80 + doff * 16 + li);
            memcpy(model, g_buf, sizeof model);
            memset(model + 40 + doff, c, len);
            tx_set(g_buf + 40 + doff, c, len);
            CHECK_MSG(memcmp(g_buf, model, sizeof model) == 0, "tx_memset +%zu len %zu", doff, len);
        }
    }

    /* Reads of own writes through every path: memset, then loads; store in
     * the middle, then memcpy out of the written range; memcpy over stores. */
    fill_pattern(g_buf, sizeof g_buf, 1000);
    memcpy(model, g_buf, sizeof model);
    memset(model + 3, 0x5C, 50);
    model[20] = 0xE1;
    memcpy(model + 100, model + 10, 30);
    model[110] = 0x07;
    memcpy(model + 150, model + 105, 11);
    TX_ATOMIC {
        tx_memset(g_buf + 3, 0x5C, 50);
        for (size_t i = 3; i < 53; i++)
            CHECK_EQ(TX_LOAD(&g_buf[i]), 0x5C);
        CHECK_EQ(TX_LOAD(&g_buf[2]), model[2]);
        CHECK_EQ(TX_LOAD(&g_buf[53]), model[53]);
        TX_STORE(&g_buf[20], 0xE1);
        tx_memcpy(g_buf + 100, g_buf + 10, 30);
        TX_STORE(&g_buf[110], 0x07);
        tx_memcpy(g_buf + 150, g_buf + 105, 11);
        for (size_t i = 0; i < sizeof g_buf; i++)
            CHECK_EQ(TX_LOAD(&g_buf[i]), model[i]);
    }
    CHECK(memcmp(g_buf, model, sizeof model) == 0);

    /* Rollback: nothing written by an aborted attempt survives. */
    struct tk_attempts a;
    tk_attempts_init(&a);
    TX_ATOMIC {
        int n = tk_attempt_no(&a);
        for (size_t i = 0; i < sizeof g_buf; i++)
            CHECK_EQ(TX_LOAD(&g_buf[i]), model[i]);
        if (n == 0) {
            tx_memset(g_buf, 0, sizeof g_buf);
            tx_memcpy(g_buf + 7, g_src, 77);
            tx_restart();
        }
    }
    CHECK(memcmp(g_buf, model, sizeof model) == 0);

    /* Outside a transaction they are memcpy and memset. */
    tx_memset(g_buf, 0x33, 10);
    tx_memcpy(g_buf + 10, g_src, 10);
    for (size_t i = 0; i < 10; i++) {
        CHECK_EQ(g_buf[i], 0x33);
        CHECK_EQ(g_buf[10 + i], g_src[i]);
    }

    /* Into and out of a block allocated by the transaction. */
    static unsigned char *volatile blk;
    TX_ATOMIC {
        unsigned char *p = tx_malloc(64);
        CHECK(p != NULL);
        tx_memcpy(p, g_src, 64);
        tx_memset(p + 8, 0xEE, 8);
        tx_memcpy(g_buf, p, 64);
        blk = p;
    }
    for (size_t i = 0; i < 64; i++) {
        unsigned char want = (i >= 8 && i < 16) ? 0xEE : g_src[i];
        CHECK_EQ(blk[i], want);
        CHECK_EQ(g_buf[i], want);
    }
    tx_free(blk);
}

/* Copies between shared data and the thread's own memory (a local buffer):
 * tx_memcpy_from writes the local in place, so the block reads it directly
 * (with tx_memcpy a software attempt buffered it until the commit: the block
 * read the old bytes, and the commit wrote into a local that was gone);
 * tx_memcpy_to is a transactional write of dst, undone by an abort. */
static __attribute__((noinline)) void copy_to_local(unsigned char *seen, size_t off, size_t len) {
    TX_ATOMIC {
        unsigned char local[80];
        memset(local, 0, sizeof local);
        tx_memcpy_from(local + off, g_src + 5 + off, len);
        memcpy(seen, local, 80); /* read directly */
    }
}

static void test_memcpy_private(void) {
    static const size_t lens[] = {0, 1, 3, 7, 8, 9, 16, 17, 31, 64};
    for (size_t off = 0; off < 9; off += 2) {
        for (size_t li = 0; li < ARRAY_LEN(lens); li++) {
            size_t len = lens[li];
            fill_pattern(g_src, sizeof g_src, (unsigned)(off * 31 + li));
            unsigned char seen[80];
            copy_to_local(seen, off, len);
            for (size_t i = 0; i < sizeof seen; i++) {
                unsigned char want = i >= off && i < off + len ? g_src[5 + i] : 0;
                CHECK_MSG(seen[i] == want, "tx_memcpy_from +%zu len %zu: byte %zu is %u, not %u",
                          off, len, i, seen[i], want);
            }
        }
    }
    /* what the block wrote before the copy is what it reads from */
    fill_pattern(g_buf, sizeof g_buf, 77);
    unsigned char model[64];
    memcpy(model, g_buf, sizeof model);
    memset(model + 10, 0xAB, 20);
    unsigned char seen[64];
    TX_ATOMIC {
        unsigned char local[64];
        tx_memset(g_buf + 10, 0xAB, 20);
        tx_memcpy_from(local, g_buf, sizeof local);
        memcpy(seen, local, sizeof seen);
    }
    CHECK(memcmp(seen, model, sizeof model) == 0);
    /* tx_memcpy_to: a write, read back in the block, kept by the commit and
     * undone by an abort */
    unsigned char src[40];
    fill_pattern(src, sizeof src, 99);
    fill_pattern(g_buf, sizeof g_buf, 98);
    memcpy(model, g_buf, sizeof model);
    struct tk_attempts a;
    tk_attempts_init(&a);
    TX_ATOMIC {
        int n = tk_attempt_no(&a);
        for (size_t i = 0; i < sizeof model; i++)
            CHECK_EQ(TX_LOAD(&g_buf[i]), model[i]);
        tx_memcpy_to(g_buf + 3, src, sizeof src);
        for (size_t i = 0; i < sizeof src; i++)
            CHECK_EQ(TX_LOAD(&g_buf[3 + i]), src[i]);
        if (n == 0)
            tx_restart();
    }
    memcpy(model + 3, src, sizeof src);
    CHECK(memcmp(g_buf, model, sizeof model) == 0);
    /* outside a transaction: memcpy */
    unsigned char out[16];
    tx_memcpy_from(out, g_src, sizeof out);
    CHECK(memcmp(out, g_src, sizeof out) == 0);
    tx_memcpy_to(g_buf, out, sizeof out);
    CHECK(memcmp(g_buf, out, sizeof out) == 0);
}

/* ================================================================== main */

static const struct tk_test tests[] = {
    {"barriers_types", test_barriers_types},
    {"barriers_float_bits", test_barriers_float_bits},
    {"barriers_rollback", test_barriers_rollback},
    {"barriers_mixed_widths", test_barriers_mixed_widths},
    {"write_set_sizes", test_write_set_sizes},
    {"big_transaction", test_big_transaction},
    {"memcpy_memset", test_memcpy_memset},
    {"memcpy_private", test_memcpy_private},
};

int main(int argc, char **argv) {
    return api_main("test_txn_barriers", tests, ARRAY_LEN(tests), argc, argv);
}
