/* test_api.c - unit tests of the C API (include/txkit/tx.h, include/txkit/stats.h).
 *
 * Single-threaded except where a test says otherwise. CTest runs it once per
 * method (TXKIT_METHOD=auto|stm|serial|htm); the htm run skips with exit code
 * 77 when RTM is not usable.
 *
 *   test_api [--no-fork] [SUBSTRING]
 *
 * runs the tests whose name contains SUBSTRING (all by default), each in its
 * own child process unless --no-fork (see tk_run_tests in test_util.h).
 *
 * Variables that a transaction body modifies and that are read after a
 * possible restart are static or volatile: a software abort jumps back to the
 * start of the block (like longjmp), which leaves non-volatile locals of the
 * enclosing function indeterminate.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <txkit.h>

#include "test_util.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Bytes of heap in use (all arenas, mmapped chunks included). Used to prove
 * that tx_malloc'ed blocks of aborted attempts and tx_free'd blocks are
 * really released, without wrapping malloc. Under AddressSanitizer
 * (TXKIT_SANITIZE=ON) glibc's counters do not move: ask ASan's allocator. */
#if defined(__SANITIZE_ADDRESS__)
size_t __sanitizer_get_current_allocated_bytes(void); /* ASan runtime */
static size_t heap_in_use(void) { return __sanitizer_get_current_allocated_bytes(); }
#else
static size_t heap_in_use(void) {
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}
#endif

/* Whether heap_in_use() sees allocations at all (not under valgrind, whose
 * malloc replacement glibc does not count); if not, the heap-size checks are
 * skipped and valgrind's own leak check stands in for them. */
static int heap_accounting_works(void) {
    static int known = -1;
    if (known < 0) {
        size_t before = heap_in_use();
        void *volatile p = malloc(1 << 20);
        size_t during = heap_in_use();
        free(p);
        known = during >= before + (1 << 20);
        if (!known)
            printf("    heap accounting unavailable here: heap-size checks skipped\n");
    }
    return known;
}

/* HEAP_CHECK(cond, fmt, ...): a CHECK_MSG about heap sizes. */
#define HEAP_CHECK(cond, ...)                                        \
    do {                                                             \
        if (heap_accounting_works())                                 \
            CHECK_MSG(cond, __VA_ARGS__);                            \
    } while (0)

/* Blocks larger than glibc's tcache limit, so a free() shows in heap_in_use(). */
#define BLK 8192
/* Allowed drift of heap_in_use() for runtime logs, stdio buffers etc. */
#define HEAP_SLACK (256 * 1024)

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
    TX_ATOMIC { tx_memcpy(dst, src, n); }
}

static void tx_set(void *dst, int c, size_t n) {
    TX_ATOMIC { tx_memset(dst, c, n); }
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
            CHECK_MSG(memcmp(g_buf, model, sizeof model) == 0, "tx_memset +%zu len %zu", doff,
                      len);
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

/* ================================================================ nesting */

static long g_n1, g_n2, g_n3;

static int nested_helper(void) {
    volatile int depth_inside = 0; /* written in the block, read after it */
    TX_ATOMIC {
        depth_inside = tx_in_transaction();
        TX_STORE(&g_n3, TX_LOAD(&g_n3) + 1);
    }
    return depth_inside;
}

static void test_nesting(void) {
    g_n1 = g_n2 = g_n3 = 0;
    tx_stats_t s0 = tk_stats();
    CHECK_EQ(tx_in_transaction(), 0);
    TX_ATOMIC {
        CHECK_EQ(tx_in_transaction(), 1);
        TX_STORE(&g_n1, 1);
        TX_ATOMIC {
            CHECK_EQ(tx_in_transaction(), 2);
            CHECK_EQ(TX_LOAD(&g_n1), 1); /* the outer level's write */
            TX_STORE(&g_n2, 2);
            TX_ATOMIC {
                CHECK_EQ(tx_in_transaction(), 3);
                TX_STORE(&g_n1, 10);
            }
            CHECK_EQ(tx_in_transaction(), 2);
        }
        CHECK_EQ(tx_in_transaction(), 1);
        CHECK_EQ(TX_LOAD(&g_n2), 2);
        CHECK_EQ(TX_LOAD(&g_n1), 10);
        CHECK_EQ(nested_helper(), 2);
        CHECK_EQ(tx_in_transaction(), 1);
        CHECK_EQ(TX_LOAD(&g_n3), 1);
    }
    CHECK_EQ(tx_in_transaction(), 0);
    CHECK_EQ(g_n1, 10);
    CHECK_EQ(g_n2, 2);
    CHECK_EQ(g_n3, 1);
    tx_stats_t s1 = tk_stats();
    /* Flat nesting: one transaction, one commit. */
    CHECK_EQ(s1.transactions - s0.transactions, 1);
    CHECK_EQ(tx_stats_commits(&s1) - tx_stats_commits(&s0), 1);
    /* The helper alone is an outermost transaction. */
    CHECK_EQ(nested_helper(), 1);
    CHECK_EQ(g_n3, 2);

    /* A restart in an inner block restarts the outermost one: the outer
     * level's stores of the aborted attempt are gone in the next one. */
    g_n1 = g_n2 = 0;
    struct tk_attempts a;
    tk_attempts_init(&a);
    TX_ATOMIC {
        int n = tk_attempt_no(&a);
        CHECK_EQ(TX_LOAD(&g_n1), 0);
        CHECK_EQ(TX_LOAD(&g_n2), 0);
        TX_STORE(&g_n1, 10 + n);
        TX_ATOMIC {
            TX_STORE(&g_n2, 20 + n);
            TX_ATOMIC {
                CHECK_EQ(tx_in_transaction(), 3);
                if (n == 0)
                    tx_restart();
            }
        }
        CHECK_EQ(tx_in_transaction(), 1);
    }
    CHECK_EQ(tx_in_transaction(), 0);
    CHECK_EQ(tk_explicit_aborts() - a.explicit_base, 1);
    CHECK_EQ(g_n1, 11);
    CHECK_EQ(g_n2, 21);

    /* break out of an inner block leaves that level only. */
    g_n1 = g_n2 = 0;
    TX_ATOMIC {
        TX_ATOMIC {
            TX_STORE(&g_n1, 1);
            if (TX_LOAD(&g_n1) == 1)
                break;
            TX_STORE(&g_n1, 2);
        }
        CHECK_EQ(tx_in_transaction(), 1);
        TX_STORE(&g_n2, 3);
    }
    CHECK_EQ(tx_in_transaction(), 0);
    CHECK_EQ(g_n1, 1);
    CHECK_EQ(g_n2, 3);

    /* A block of a single statement. */
    TX_ATOMIC TX_STORE(&g_n3, 99);
    CHECK_EQ(g_n3, 99);
}

/* =============================================================== handlers */

#define MAX_EVENTS 4096
static int g_events[MAX_EVENTS];
static volatile int g_nevents;
static long g_hx;

static void reset_events(void) {
    g_nevents = 0;
    memset(g_events, 0, sizeof g_events);
}

static void record_handler(void *arg) {
    CHECK_EQ(tx_in_transaction(), 0);
    CHECK(g_nevents < MAX_EVENTS);
    g_events[g_nevents] = (int)(intptr_t)arg;
    g_nevents = g_nevents + 1;
}

/* Abort handler that also checks that the rollback happened before it ran. */
static void record_abort_handler(void *arg) {
    CHECK_EQ(g_hx, 0);
    record_handler(arg);
}

static void test_on_commit_order_once(void) {
    reset_events();
    struct tk_attempts a;
    tk_attempts_init(&a);
    TX_ATOMIC {
        int n = tk_attempt_no(&a);
        for (int i = 0; i < 5; i++)
            CHECK_EQ(tx_on_commit(record_handler, (void *)(intptr_t)(100 * n + i)), 0);
        CHECK_EQ(g_nevents, 0); /* not before the commit */
        if (n == 0)
            tx_restart(); /* discards the first attempt's registrations */
        TX_ATOMIC {
            CHECK_EQ(tx_on_commit(record_handler, (void *)(intptr_t)(100 * n + 5)), 0);
        }
        CHECK_EQ(g_nevents, 0); /* not at the end of a nested block either */
    }
    CHECK_EQ(tk_explicit_aborts() - a.explicit_base, 1);
    CHECK_EQ(g_nevents, 6);
    for (int i = 0; i < 6; i++)
        CHECK_EQ(g_events[i], 100 + i);
    /* Once only: later transactions do not run them again. */
    TX_ATOMIC { TX_STORE(&g_hx, 0); }
    TX_ATOMIC { CHECK_EQ(tx_on_commit(record_handler, (void *)(intptr_t)7), 0); }
    CHECK_EQ(g_nevents, 7);
    CHECK_EQ(g_events[6], 7);

    /* Many registrations keep their order. */
    reset_events();
    TX_ATOMIC {
        for (int i = 0; i < 3000; i++)
            CHECK_EQ(tx_on_commit(record_handler, (void *)(intptr_t)i), 0);
    }
    CHECK_EQ(g_nevents, 3000);
    for (int i = 0; i < 3000; i++)
        CHECK_EQ(g_events[i], i);

    /* Outside a transaction fn(arg) runs at once. */
    reset_events();
    CHECK_EQ(tx_on_commit(record_handler, (void *)(intptr_t)42), 0);
    CHECK_EQ(g_nevents, 1);
    CHECK_EQ(g_events[0], 42);
}

static void test_on_abort_order(void) {
    reset_events();
    g_hx = 0;
    struct tk_attempts a;
    tk_attempts_init(&a);
    TX_ATOMIC {
        int n = tk_attempt_no(&a);
        CHECK_EQ(TX_LOAD(&g_hx), 0);
        TX_STORE(&g_hx, 1); /* record_abort_handler checks this was undone */
        CHECK_EQ(tx_on_abort(record_abort_handler, (void *)(intptr_t)1), 0);
        CHECK_EQ(tx_on_abort(record_abort_handler, (void *)(intptr_t)2), 0);
        TX_ATOMIC { CHECK_EQ(tx_on_abort(record_abort_handler, (void *)(intptr_t)3), 0); }
        if (n < 2)
            tx_restart();
        TX_STORE(&g_hx, 0);
    }
    CHECK_EQ(tk_explicit_aborts() - a.explicit_base, 2);
    if (!tk_hw_possible()) {
        /* Two aborted attempts, newest registration first; none at commit. */
        static const int want[] = {3, 2, 1, 3, 2, 1};
        CHECK_EQ(g_nevents, 6);
        for (int i = 0; i < 6; i++)
            CHECK_EQ(g_events[i], want[i]);
        CHECK_EQ(a.handler_runs, 2);
    } else {
        /* Hardware attempts run no abort handlers; software ones in order. */
        CHECK(g_nevents % 3 == 0 && g_nevents <= 6);
        for (int i = 0; i < g_nevents; i++)
            CHECK_EQ(g_events[i], 3 - i % 3);
    }
    CHECK_EQ(g_hx, 0);

    /* Outside a transaction tx_on_abort does nothing, now or later. */
    reset_events();
    CHECK_EQ(tx_on_abort(record_handler, (void *)(intptr_t)9), 0);
    CHECK_EQ(g_nevents, 0);
    tk_attempts_init(&a);
    TX_ATOMIC {
        if (tk_attempt_no(&a) == 0)
            tx_restart();
    }
    for (int i = 0; i < g_nevents; i++)
        CHECK(g_events[i] != 9);
    CHECK_EQ(g_nevents, 0);
}

/* A handler runs outside any transaction, so it may run one of its own. */
static long g_in_handler_tx;

static void handler_inner_commit(void *arg) {
    (void)arg;
    CHECK_EQ(tx_in_transaction(), 0);
    g_in_handler_tx += 100;
}

static void handler_with_tx(void *arg) {
    CHECK_EQ(tx_in_transaction(), 0);
    TX_ATOMIC {
        CHECK_EQ(tx_in_transaction(), 1);
        TX_STORE(&g_in_handler_tx, TX_LOAD(&g_in_handler_tx) + (long)(intptr_t)arg);
        CHECK_EQ(tx_on_commit(handler_inner_commit, NULL), 0);
    }
    CHECK_EQ(tx_in_transaction(), 0);
}

static void test_commit_handler_runs_transaction(void) {
    g_in_handler_tx = 0;
    TX_ATOMIC {
        CHECK_EQ(tx_on_commit(handler_with_tx, (void *)(intptr_t)5), 0);
        CHECK_EQ(tx_on_commit(handler_with_tx, (void *)(intptr_t)7), 0);
    }
    CHECK_EQ(g_in_handler_tx, 5 + 100 + 7 + 100);
}

/* An abort handler runs outside any transaction too, so it may start one;
 * afterwards the aborted transaction must retry and commit normally. */
static void test_abort_handler_runs_transaction(void) {
    g_in_handler_tx = 0;
    g_hx = 0;
    struct tk_attempts a;
    tk_attempts_init(&a);
    TX_ATOMIC {
        int n = tk_attempt_no(&a);
        TX_STORE(&g_hx, TX_LOAD(&g_hx) + 1);
        CHECK_EQ(tx_on_abort(handler_with_tx, (void *)(intptr_t)1), 0);
        if (n == 0)
            tx_restart();
    }
    CHECK_EQ(tx_in_transaction(), 0);
    CHECK_EQ(g_hx, 1);
    CHECK_EQ(tk_explicit_aborts() - a.explicit_base, 1);
    if (!tk_hw_possible())
        CHECK_EQ(g_in_handler_tx, 1 + 100);
}

/* tx_on_commit_copy: the handler sees the data as it was at registration. */
struct cc_data {
    int a;
    double b;
    char s[40];
};
static struct cc_data g_cc_src;
static struct cc_data g_cc_seen[8];
static volatile int g_cc_n;
static const void *g_cc_ptrs[8];

static void cc_handler(void *p) {
    CHECK_EQ(tx_in_transaction(), 0);
    CHECK((uintptr_t)p % alignof(max_align_t) == 0);
    CHECK(g_cc_n < 8);
    memcpy(&g_cc_seen[g_cc_n], p, sizeof(struct cc_data));
    g_cc_ptrs[g_cc_n] = p;
    g_cc_n = g_cc_n + 1;
}

static unsigned char g_big_copy_src[10000];
static volatile int g_big_copy_ok;

static void big_copy_handler(void *p) {
    CHECK((uintptr_t)p % alignof(max_align_t) == 0);
    const unsigned char *c = p;
    for (size_t i = 0; i < sizeof g_big_copy_src; i++)
        CHECK_EQ(c[i], (unsigned char)(i * 13 + 5));
    g_big_copy_ok = g_big_copy_ok + 1;
}

static volatile int g_odd_copy_ok;

static void odd_copy_handler(void *p) {
    CHECK((uintptr_t)p % alignof(max_align_t) == 0);
    CHECK(memcmp(p, "xyz", 3) == 0);
    g_odd_copy_ok = g_odd_copy_ok + 1;
}

static void test_on_commit_copy(void) {
    g_cc_n = 0;
    memset(&g_cc_src, 0, sizeof g_cc_src);
    g_cc_src.a = 1;
    g_cc_src.b = 2.5;
    strcpy(g_cc_src.s, "first");
    struct tk_attempts a;
    tk_attempts_init(&a);
    TX_ATOMIC {
        int n = tk_attempt_no(&a);
        struct cc_data local = {10 + n, 0.5, "local"};
        CHECK_EQ(tx_on_commit_copy(cc_handler, &local, sizeof local), 0);
        local.a = -1; /* changed after registration: the copy keeps 10 + n */
        strcpy(local.s, "clobbered");
        CHECK_EQ(tx_on_commit_copy(cc_handler, &g_cc_src, sizeof g_cc_src), 0);
        TX_STORE(&g_cc_src.a, 99);
        CHECK_EQ(g_cc_n, 0);
        if (n == 0)
            tx_restart();
    }
    CHECK_EQ(g_cc_n, 2); /* the aborted attempt's two are discarded */
    CHECK_EQ(g_cc_seen[0].a, 11);
    CHECK(g_cc_seen[0].b == 0.5);
    CHECK(strcmp(g_cc_seen[0].s, "local") == 0);
    CHECK_EQ(g_cc_seen[1].a, 1);
    CHECK(strcmp(g_cc_seen[1].s, "first") == 0);
    CHECK(g_cc_ptrs[1] != (const void *)&g_cc_src);
    CHECK_EQ(g_cc_src.a, 99);

    /* Odd and large sizes. */
    for (size_t i = 0; i < sizeof g_big_copy_src; i++)
        g_big_copy_src[i] = (unsigned char)(i * 13 + 5);
    g_big_copy_ok = 0;
    g_odd_copy_ok = 0;
    TX_ATOMIC {
        char odd[3] = {'x', 'y', 'z'};
        CHECK_EQ(tx_on_commit_copy(odd_copy_handler, odd, sizeof odd), 0);
        CHECK_EQ(tx_on_commit_copy(big_copy_handler, g_big_copy_src, sizeof g_big_copy_src), 0);
        odd[0] = 'q';
        g_big_copy_src[0] = 0; /* plain write after registration */
        CHECK_EQ(tx_on_commit_copy(odd_copy_handler, "xyz", 3), 0);
    }
    CHECK_EQ(g_odd_copy_ok, 2);
    CHECK_EQ(g_big_copy_ok, 1);

    /* Mixed with tx_on_commit: one registration order. */
    reset_events();
    g_cc_n = 0;
    TX_ATOMIC {
        struct cc_data d = {5, 5.0, "five"};
        CHECK_EQ(tx_on_commit(record_handler, (void *)(intptr_t)1), 0);
        CHECK_EQ(tx_on_commit_copy(cc_handler, &d, sizeof d), 0);
        CHECK_EQ(tx_on_commit(record_handler, (void *)(intptr_t)2), 0);
    }
    CHECK_EQ(g_nevents, 2);
    CHECK_EQ(g_cc_n, 1);
    CHECK_EQ(g_cc_seen[0].a, 5);

    /* Outside a transaction: at once, still with a copy. */
    g_cc_n = 0;
    struct cc_data out = {7, 7.0, "outside"};
    CHECK_EQ(tx_on_commit_copy(cc_handler, &out, sizeof out), 0);
    CHECK_EQ(g_cc_n, 1);
    CHECK_EQ(g_cc_seen[0].a, 7);
    CHECK(strcmp(g_cc_seen[0].s, "outside") == 0);
}

/* ========================================================= tx_malloc/free */

static void *g_slot;

static void malloc_with_3_restarts(void) {
    struct tk_attempts a;
    tk_attempts_init(&a);
    TX_ATOMIC {
        int n = tk_attempt_no(&a);
        unsigned char *b = tx_malloc(BLK);
        CHECK(b != NULL);
        memset(b, n, BLK); /* new private memory: plain writes */
        TX_STORE(&g_slot, (void *)b);
        if (n < 3)
            tx_restart();
    }
    unsigned char *b = g_slot;
    CHECK_EQ(b[0], 3);
    CHECK_EQ(b[BLK - 1], 3);
    tx_free(b);
}

static void test_tx_malloc_basic(void) {
    /* Outside a transaction: malloc and free. */
    void *p = tx_malloc(100);
    CHECK(p != NULL);
    memset(p, 1, 100);
    tx_free(p);
    tx_free(NULL);

    /* Committed blocks stay; blocks of aborted attempts are freed. Warm the
     * runtime's logs first, then measure. */
    for (int round = 0; round < 2; round++) {
        size_t before = heap_in_use();
        const int iters = round == 0 ? 20 : 200;
        for (int it = 0; it < iters; it++)
            malloc_with_3_restarts();
        size_t after = heap_in_use();
        if (round == 1)
            HEAP_CHECK(after <= before + HEAP_SLACK,
                      "heap grew by %zu bytes over %d transactions that each aborted 3 "
                      "attempts holding a %d-byte tx_malloc block",
                      after - before, iters, BLK);
    }
}

/* tx_free is deferred to the commit, and undone by an abort. Returns the
 * heap in use before the block was allocated. */
static size_t free_deferred_once(void) {
    size_t base = heap_in_use();
    unsigned char *p = malloc(BLK);
    CHECK(p != NULL);
    memset(p, 0xAB, BLK);
    g_slot = p;
    struct tk_attempts a;
    tk_attempts_init(&a);
    TX_ATOMIC {
        int n = tk_attempt_no(&a);
        unsigned char *q = TX_LOAD(&g_slot);
        CHECK(q != NULL);
        tx_free(q);
        /* Still allocated: free() would have overwritten the first bytes. */
        for (int i = 0; i < 64; i++)
            CHECK_EQ(q[i], 0xAB);
        TX_STORE(&g_slot, NULL);
        if (n < 2)
            tx_restart(); /* a free done by an aborted attempt would double-free */
    }
    CHECK(g_slot == NULL);
    return base;
}

static void test_tx_free_deferred(void) {
    free_deferred_once(); /* the first transactions of a thread allocate its logs */
    size_t base = free_deferred_once();
    HEAP_CHECK(heap_in_use() <= base + BLK / 2, "block not freed at commit (%zu -> %zu)", base,
              heap_in_use());
}

static void malloc_free_restart_once(void) {
    struct tk_attempts a;
    tk_attempts_init(&a);
    TX_ATOMIC {
        int n = tk_attempt_no(&a);
        unsigned char *b = tx_malloc(BLK);
        CHECK(b != NULL);
        memset(b, 0x5A, BLK);
        tx_free(b);
        CHECK_EQ(b[BLK / 2], 0x5A);
        if (n == 0)
            tx_restart();
    }
}

/* tx_malloc and tx_free in the same transaction: freed at commit, once. */
static void test_tx_malloc_free_same(void) {
    malloc_free_restart_once();
    size_t base = heap_in_use();
    for (int it = 0; it < 100; it++)
        malloc_free_restart_once();
    HEAP_CHECK(heap_in_use() <= base + HEAP_SLACK, "heap grew %zu -> %zu", base, heap_in_use());
}

/* tx_malloc/tx_free while injected aborts hit attempts at random. */
#define FAULT_BLOCKS 300
static void *g_blocks[FAULT_BLOCKS];
static volatile long g_fault_handler_runs;

static void count_fault_abort(void *arg) {
    (void)arg;
    CHECK_EQ(tx_in_transaction(), 0);
    g_fault_handler_runs = g_fault_handler_runs + 1;
}

static void set_all_faults(double p) {
    CHECK_EQ(txkit_set_fault(TXKIT_STM, p), 0);
    CHECK_EQ(txkit_set_fault(TXKIT_SERIAL, p), 0);
    CHECK_EQ(txkit_set_fault(TXKIT_HTM, p), 0);
}

static void fault_alloc_block(int i) {
    TX_ATOMIC {
        CHECK_EQ(tx_on_abort(count_fault_abort, NULL), 0);
        unsigned char *b = tx_malloc(BLK);
        CHECK(b != NULL);
        memset(b, i & 0xff, BLK);
        TX_STORE(&g_blocks[i], (void *)b);
    }
}

static void fault_free_block(int i) {
    TX_ATOMIC {
        void *b = TX_LOAD(&g_blocks[i]);
        tx_free(b);
        TX_STORE(&g_blocks[i], NULL);
    }
}

static void test_tx_malloc_fault_injection(void) {
    memset(g_blocks, 0, sizeof g_blocks);
    g_fault_handler_runs = 0;
    /* warm-up of the logs at this size */
    TX_ATOMIC { tx_free(tx_malloc(BLK)); }
    size_t base = heap_in_use();
    tx_stats_t s0 = tk_stats();
    set_all_faults(0.5);
    for (int i = 0; i < FAULT_BLOCKS; i++)
        fault_alloc_block(i);
    set_all_faults(0.0);
    tx_stats_t s1 = tk_stats();
    uint64_t injected = s1.aborts_by_cause[TXKIT_CAUSE_INJECTED] -
                        s0.aborts_by_cause[TXKIT_CAUSE_INJECTED];
    uint64_t aborts = tx_stats_aborts(&s1) - tx_stats_aborts(&s0);
    printf("    %d transactions, %llu injected aborts, %ld abort-handler runs\n", FAULT_BLOCKS,
           (unsigned long long)injected, (long)g_fault_handler_runs);
    CHECK_MSG(injected > 0, "txkit_set_fault(m, 0.5) injected nothing in %d transactions",
              FAULT_BLOCKS);
    CHECK_EQ(tx_stats_commits(&s1) - tx_stats_commits(&s0), FAULT_BLOCKS);
    if (!tk_hw_possible())
        CHECK_EQ(g_fault_handler_runs, aborts);
    for (int i = 0; i < FAULT_BLOCKS; i++) {
        unsigned char *b = g_blocks[i];
        CHECK(b != NULL);
        CHECK_EQ(b[0], i & 0xff);
        CHECK_EQ(b[BLK - 1], i & 0xff);
        for (int j = 0; j < i; j += 37)
            CHECK(g_blocks[j] != g_blocks[i]);
    }
    /* Exactly the committed blocks are live: the aborted attempts' are freed. */
    size_t live = heap_in_use() - base;
    HEAP_CHECK(live >= (size_t)FAULT_BLOCKS * BLK && live <= (size_t)FAULT_BLOCKS * BLK + HEAP_SLACK,
              "live heap %zu bytes, expected %d blocks of %d bytes (%llu injected aborts)", live,
              FAULT_BLOCKS, BLK, (unsigned long long)injected);

    /* Free them under injection: a free by an aborted attempt would be a
     * double free (glibc aborts) or leave the heap wrong. */
    set_all_faults(0.5);
    for (int i = 0; i < FAULT_BLOCKS; i++)
        fault_free_block(i);
    set_all_faults(0.0);
    for (int i = 0; i < FAULT_BLOCKS; i++)
        CHECK(g_blocks[i] == NULL);
    HEAP_CHECK(heap_in_use() <= base + HEAP_SLACK, "heap %zu -> %zu after freeing everything", base,
              heap_in_use());
}

/* With every hardware and software attempt failing, the serial fallback
 * must still get the transaction through. */
static long g_progress;

static void test_fault_progress(void) {
    g_progress = 0;
    g_fault_handler_runs = 0;
    size_t base = heap_in_use();
    tx_stats_t s0 = tk_stats();
    CHECK_EQ(txkit_set_fault(TXKIT_STM, 1.0), 0);
    CHECK_EQ(txkit_set_fault(TXKIT_HTM, 1.0), 0);
    CHECK_EQ(txkit_set_fault(TXKIT_SERIAL, 0.0), 0);
    for (int i = 0; i < 3; i++) {
        TX_ATOMIC {
            CHECK_EQ(tx_on_abort(count_fault_abort, NULL), 0);
            void *b = tx_malloc(BLK);
            CHECK(b != NULL);
            tx_free(b);
            TX_STORE(&g_progress, TX_LOAD(&g_progress) + 1);
        }
    }
    set_all_faults(0.0);
    tx_stats_t s1 = tk_stats();
    CHECK_EQ(g_progress, 3);
    CHECK_EQ(tx_stats_commits(&s1) - tx_stats_commits(&s0), 3);
    CHECK_EQ(s1.commits[TXKIT_SERIAL] - s0.commits[TXKIT_SERIAL], 3);
    /* (auto on one thread runs alone, serially: nothing to inject into) */
    if (txkit_get_method() == TXKIT_STM ||
        (tk_hw_possible() && txkit_get_method() == TXKIT_HTM && !tk_rtm_simulated()))
        CHECK(s1.aborts_by_cause[TXKIT_CAUSE_INJECTED] - s0.aborts_by_cause[TXKIT_CAUSE_INJECTED] >=
              3);
    if (txkit_get_method() == TXKIT_STM)
        CHECK_EQ(s1.to_serial - s0.to_serial, 3);
    if (!tk_hw_possible())
        CHECK_EQ(g_fault_handler_runs, tx_stats_aborts(&s1) - tx_stats_aborts(&s0));
    HEAP_CHECK(heap_in_use() <= base + HEAP_SLACK, "heap %zu -> %zu", base, heap_in_use());
}

static void store_progress(long v) {
    TX_ATOMIC { TX_STORE(&g_progress, v); }
}

static void test_set_fault_errors(void) {
    CHECK_EQ(txkit_set_fault(TXKIT_STM, -0.1), -EINVAL);
    CHECK_EQ(txkit_set_fault(TXKIT_STM, 1.5), -EINVAL);
    CHECK_EQ(txkit_set_fault(TXKIT_STM, NAN), -EINVAL);
    CHECK_EQ(txkit_set_fault((txkit_method_t)17, 0.5), -EINVAL);
    CHECK_EQ(txkit_set_fault(TXKIT_AUTO, 0.5), -EINVAL); /* only methods that execute */
    CHECK_EQ(txkit_set_fault((txkit_method_t)-1, 0.5), -EINVAL);
    CHECK_EQ(txkit_set_fault(TXKIT_STM, 0.0), 0);
    CHECK_EQ(txkit_set_fault(TXKIT_HTM, 0.0), 0);
    CHECK_EQ(txkit_set_fault(TXKIT_SERIAL, 0.0), 0);
    /* A rejected call changed nothing: transactions commit without aborts. */
    tx_stats_t s0 = tk_stats();
    for (int i = 0; i < 50; i++)
        store_progress(i);
    tx_stats_t s1 = tk_stats();
    CHECK_EQ(s1.aborts_by_cause[TXKIT_CAUSE_INJECTED], s0.aborts_by_cause[TXKIT_CAUSE_INJECTED]);
}

/* ============================================================ irrevocable */

static volatile int g_irrev_side;
static long g_ix, g_iy;

static void irrevocable_increment(void) {
    TX_ATOMIC {
        TX_STORE(&g_ix, TX_LOAD(&g_ix) + 1);
        tx_irrevocable();
        g_irrev_side = g_irrev_side + 1;
    }
}

static void test_irrevocable(void) {
    g_irrev_side = 0;
    g_ix = 0;
    g_iy = 0;
    tx_stats_t s0 = tk_stats();
    TX_ATOMIC {
        TX_STORE(&g_ix, TX_LOAD(&g_ix) + 1);
        tx_irrevocable();
        CHECK_EQ(tx_in_transaction(), 1);
        g_irrev_side = g_irrev_side + 1; /* a non-undoable effect: exactly once */
        tx_irrevocable();               /* again: nothing changes */
        TX_STORE(&g_iy, TX_LOAD(&g_ix) * 10);
    }
    tx_stats_t s1 = tk_stats();
    CHECK_EQ(g_irrev_side, 1);
    CHECK_EQ(g_ix, 1);
    CHECK_EQ(g_iy, 10);
    CHECK_EQ(s1.irrevocable - s0.irrevocable, 1);
    CHECK_EQ(tx_stats_commits(&s1) - tx_stats_commits(&s0), 1);

    /* After a restart, and from an inner block. */
    g_irrev_side = 0;
    struct tk_attempts a;
    tk_attempts_init(&a);
    TX_ATOMIC {
        int n = tk_attempt_no(&a);
        TX_STORE(&g_ix, 100 + n);
        if (n == 0)
            tx_restart();
        TX_ATOMIC {
            tx_irrevocable();
            g_irrev_side = g_irrev_side + 1;
        }
        TX_STORE(&g_iy, TX_LOAD(&g_ix));
    }
    CHECK_EQ(g_irrev_side, 1);
    CHECK_EQ(g_ix, 101);
    CHECK_EQ(g_iy, 101);

    /* Injection may abort the attempt before tx_irrevocable(), never after. */
    g_irrev_side = 0;
    set_all_faults(1.0);
    for (int i = 0; i < 5; i++)
        irrevocable_increment();
    set_all_faults(0.0);
    CHECK_EQ(g_irrev_side, 5);
    CHECK_EQ(g_ix, 106);

    /* Outside a transaction it does nothing. */
    s0 = tk_stats();
    tx_irrevocable();
    CHECK_EQ(tx_in_transaction(), 0);
    s1 = tk_stats();
    CHECK_EQ(s1.irrevocable, s0.irrevocable);
    CHECK_EQ(s1.transactions, s0.transactions);
}

/* ================================================================ restart */

static long g_rx;

static void restart_from_deep(int depth) {
    if (depth < 0)
        return;
    if (depth > 0) {
        restart_from_deep(depth - 1);
        return;
    }
    tx_restart();
}

/* One transaction that restarts k times; returns the abort-handler runs. */
static int restart_k_times(int k) {
    struct tk_attempts a;
    tk_attempts_init(&a);
    TX_ATOMIC {
        int n = tk_attempt_no(&a);
        CHECK_EQ(TX_LOAD(&g_rx), 0);
        TX_STORE(&g_rx, 1 + n);
        if (n < k) {
            if (n % 2)
                restart_from_deep(5); /* from a few frames down */
            tx_restart();
        }
    }
    return a.handler_runs;
}

static void test_restart(void) {
    for (int k = 0; k <= 9; k++) {
        g_rx = 0;
        tx_stats_t s0 = tk_stats();
        int handler_runs = restart_k_times(k);
        tx_stats_t s1 = tk_stats();
        CHECK_EQ(g_rx, 1 + k);
        CHECK_EQ(s1.aborts_by_cause[TXKIT_CAUSE_EXPLICIT] - s0.aborts_by_cause[TXKIT_CAUSE_EXPLICIT],
                 k);
        CHECK_EQ(tx_stats_commits(&s1) - tx_stats_commits(&s0), 1);
        CHECK_EQ(s1.transactions - s0.transactions, 1);
        if (!tk_hw_possible()) {
            CHECK_EQ(handler_runs, k);
            CHECK_EQ(tx_stats_aborts(&s1) - tx_stats_aborts(&s0), k);
        }
    }
}

/* ============================================== leaving the block commits */

static long g_lx, g_ly;
static volatile int g_leave_commits;

static void leave_commit_handler(void *arg) {
    (void)arg;
    g_leave_commits = g_leave_commits + 1;
}

static int leave_by_return(void) {
    TX_ATOMIC {
        CHECK_EQ(tx_on_commit(leave_commit_handler, NULL), 0);
        TX_STORE(&g_lx, 5);
        if (TX_LOAD(&g_lx) == 5)
            return 7;
        TX_STORE(&g_ly, 1);
    }
    return 0;
}

static void test_leave_block(void) {
    tx_stats_t s0, s1;

    g_lx = g_ly = 0;
    g_leave_commits = 0;
    s0 = tk_stats();
    TX_ATOMIC {
        CHECK_EQ(tx_on_commit(leave_commit_handler, NULL), 0);
        TX_STORE(&g_lx, 1);
        if (TX_LOAD(&g_lx) == 1)
            break;
        TX_STORE(&g_ly, 1);
    }
    s1 = tk_stats();
    CHECK_EQ(tx_in_transaction(), 0);
    CHECK_EQ(g_lx, 1);
    CHECK_EQ(g_ly, 0);
    CHECK_EQ(g_leave_commits, 1);
    CHECK_EQ(tx_stats_commits(&s1) - tx_stats_commits(&s0), 1);

    g_lx = g_ly = 0;
    s0 = tk_stats();
    CHECK_EQ(leave_by_return(), 7);
    s1 = tk_stats();
    CHECK_EQ(tx_in_transaction(), 0);
    CHECK_EQ(g_lx, 5);
    CHECK_EQ(g_ly, 0);
    CHECK_EQ(g_leave_commits, 2);
    CHECK_EQ(tx_stats_commits(&s1) - tx_stats_commits(&s0), 1);

    g_lx = g_ly = 0;
    s0 = tk_stats();
    TX_ATOMIC {
        CHECK_EQ(tx_on_commit(leave_commit_handler, NULL), 0);
        TX_STORE(&g_lx, 2);
        if (TX_LOAD(&g_lx) == 2)
            continue; /* ends the block, like break */
        TX_STORE(&g_ly, 1);
    }
    s1 = tk_stats();
    CHECK_EQ(tx_in_transaction(), 0);
    CHECK_EQ(g_lx, 2);
    CHECK_EQ(g_ly, 0);
    CHECK_EQ(g_leave_commits, 3);
    CHECK_EQ(tx_stats_commits(&s1) - tx_stats_commits(&s0), 1);

    g_lx = g_ly = 0;
    s0 = tk_stats();
    TX_ATOMIC {
        CHECK_EQ(tx_on_commit(leave_commit_handler, NULL), 0);
        TX_STORE(&g_lx, 3);
        if (TX_LOAD(&g_lx) == 3)
            goto out;
        TX_STORE(&g_ly, 1);
    }
out:
    s1 = tk_stats();
    CHECK_EQ(tx_in_transaction(), 0);
    CHECK_EQ(g_lx, 3);
    CHECK_EQ(g_ly, 0);
    CHECK_EQ(g_leave_commits, 4);
    CHECK_EQ(tx_stats_commits(&s1) - tx_stats_commits(&s0), 1);

    /* Leaving after a restart: the committed attempt is the second one. */
    g_lx = 0;
    struct tk_attempts a;
    tk_attempts_init(&a);
    TX_ATOMIC {
        int n = tk_attempt_no(&a);
        TX_STORE(&g_lx, 10 + n);
        if (n == 0)
            tx_restart();
        break;
    }
    CHECK_EQ(g_lx, 11);
    CHECK_EQ(tx_in_transaction(), 0);
}

/* ============================================================== methods */

static void test_method_names(void) {
    static const char *const names[] = {"auto", "htm", "stm", "serial"};
    CHECK_EQ(TXKIT_AUTO, 0);
    CHECK_EQ(TXKIT_NMETHODS, 4);
    for (int i = 0; i < TXKIT_NMETHODS; i++) {
        txkit_method_t m = (txkit_method_t)-1;
        CHECK(strcmp(txkit_method_name(i), names[i]) == 0);
        CHECK_EQ(txkit_method_parse(names[i], &m), 0);
        CHECK_EQ(m, i);
        CHECK_EQ(txkit_method_parse(txkit_method_name(i), &m), 0);
        CHECK_EQ(m, i);
    }
    CHECK(strcmp(txkit_method_name(TXKIT_NMETHODS), "?") == 0);
    CHECK(strcmp(txkit_method_name(-1), "?") == 0);
    CHECK(strcmp(txkit_method_name(1000), "?") == 0);
    static const char *const bad[] = {"", "bogus", "STM", "Serial", "stm ", " stm", "autox", "4",
                                      "hardware"};
    for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
        txkit_method_t m = TXKIT_SERIAL;
        CHECK_MSG(txkit_method_parse(bad[i], &m) == -EINVAL, "parse(\"%s\")", bad[i]);
    }
}

static long g_mx;

/* Runs one transaction and says which method committed it. */
static int committing_method(void) {
    tx_stats_t s0 = tk_stats();
    TX_ATOMIC { TX_STORE(&g_mx, TX_LOAD(&g_mx) + 1); }
    tx_stats_t s1 = tk_stats();
    int found = -1;
    for (int m = 0; m < TXKIT_NMETHODS; m++) {
        uint64_t d = s1.commits[m] - s0.commits[m];
        CHECK(d <= 1);
        if (d == 1) {
            CHECK_EQ(found, -1);
            found = m;
        }
    }
    CHECK(found > TXKIT_AUTO); /* the auto slot is always 0 */
    return found;
}

struct thread_method_arg {
    txkit_method_t seen;
    int committed_by;
};

static void *thread_method_probe(void *p) {
    struct thread_method_arg *arg = p;
    arg->seen = txkit_get_method();
    arg->committed_by = committing_method();
    return NULL;
}

static void test_set_method(void) {
    txkit_method_t orig = txkit_get_method();
    /* Before any txkit_set_method, TXKIT_METHOD decides. */
    CHECK_EQ(orig, tk_env_method());
    if (orig == TXKIT_STM)
        CHECK_EQ(committing_method(), TXKIT_STM);
    if (orig == TXKIT_SERIAL)
        CHECK_EQ(committing_method(), TXKIT_SERIAL);

    if (!txkit_htm_usable()) {
        CHECK_EQ(txkit_set_method(TXKIT_HTM), -ENOTSUP);
        CHECK_EQ(txkit_get_method(), orig);
        CHECK_EQ(txkit_set_thread_method(TXKIT_HTM), -ENOTSUP);
        CHECK_EQ(txkit_get_method(), orig);
    } else {
        CHECK_EQ(txkit_set_method(TXKIT_HTM), 0);
        CHECK_EQ(txkit_get_method(), TXKIT_HTM);
        int by = committing_method();
        CHECK(by == TXKIT_HTM || by == TXKIT_SERIAL);
    }
    CHECK_EQ(txkit_set_method((txkit_method_t)-1), -EINVAL);
    CHECK_EQ(txkit_set_method(TXKIT_NMETHODS), -EINVAL);
    CHECK_EQ(txkit_set_method((txkit_method_t)99), -EINVAL);
    CHECK_EQ(txkit_set_thread_method(-2), -EINVAL);
    CHECK_EQ(txkit_set_thread_method(TXKIT_NMETHODS), -EINVAL);
    CHECK_EQ(txkit_set_thread_method(99), -EINVAL);

    CHECK_EQ(txkit_set_method(TXKIT_STM), 0);
    CHECK_EQ(txkit_get_method(), TXKIT_STM);
    CHECK_EQ(committing_method(), TXKIT_STM);
    CHECK_EQ(txkit_set_method(TXKIT_SERIAL), 0);
    CHECK_EQ(txkit_get_method(), TXKIT_SERIAL);
    CHECK_EQ(committing_method(), TXKIT_SERIAL);
    CHECK_EQ(txkit_set_method(TXKIT_AUTO), 0);
    CHECK_EQ(txkit_get_method(), TXKIT_AUTO);
    committing_method();

    /* The thread's own choice wins over the process's, for this thread only. */
    CHECK_EQ(txkit_set_method(TXKIT_STM), 0);
    CHECK_EQ(txkit_set_thread_method(TXKIT_SERIAL), 0);
    CHECK_EQ(txkit_get_method(), TXKIT_SERIAL);
    CHECK_EQ(committing_method(), TXKIT_SERIAL);
    CHECK_EQ(txkit_set_method(TXKIT_AUTO), 0);
    CHECK_EQ(txkit_get_method(), TXKIT_SERIAL);
    CHECK_EQ(txkit_set_method(TXKIT_STM), 0);
    struct thread_method_arg arg = {TXKIT_AUTO, -1};
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, thread_method_probe, &arg), 0);
    CHECK_EQ(pthread_join(th, NULL), 0);
    CHECK_EQ(arg.seen, TXKIT_STM);
    CHECK_EQ(arg.committed_by, TXKIT_STM);
    CHECK_EQ(txkit_get_method(), TXKIT_SERIAL);
    CHECK_EQ(txkit_set_thread_method(-1), 0); /* follow the process again */
    CHECK_EQ(txkit_get_method(), TXKIT_STM);
    CHECK_EQ(committing_method(), TXKIT_STM);

    /* Not inside a transaction; the failed call changes nothing. */
    static volatile int busy_rc;
    TX_ATOMIC { busy_rc = txkit_set_thread_method(TXKIT_SERIAL); }
    CHECK_EQ(busy_rc, -EBUSY);
    CHECK_EQ(txkit_get_method(), TXKIT_STM);

    /* The process method may change inside a transaction: next one uses it. */
    static volatile int set_rc;
    TX_ATOMIC {
        TX_STORE(&g_mx, 0);
        set_rc = txkit_set_method(TXKIT_SERIAL);
    }
    CHECK_EQ(set_rc, 0);
    CHECK_EQ(txkit_get_method(), TXKIT_SERIAL);
    CHECK_EQ(committing_method(), TXKIT_SERIAL);

    CHECK_EQ(txkit_set_method(orig), 0);
    CHECK_EQ(txkit_get_method(), orig);
}

/* ================================================================= stats */

static void increment_mx(void) {
    TX_ATOMIC { TX_STORE(&g_mx, TX_LOAD(&g_mx) + 1); }
}

static void *thread_three_commits(void *p) {
    (void)p;
    for (int i = 0; i < 3; i++)
        increment_mx();
    return NULL;
}

static void run_with_restarts(int k) {
    struct tk_attempts a;
    tk_attempts_init(&a);
    TX_ATOMIC {
        if (tk_attempt_no(&a) < k)
            tx_restart();
    }
}

static void one_of_three_kinds(int i) {
    if (i % 3 == 0)
        TX_ATOMIC { TX_STORE(&g_mx, i); }
    else if (i % 3 == 1)
        TX_ATOMIC { (void)TX_LOAD(&g_mx); }
    else
        TX_ATOMIC {}
}

static void test_stats(void) {
    CHECK_EQ(tx_stats_get(NULL), -EINVAL);
    increment_mx(); /* this thread has run a transaction */
    tx_stats_t s0 = tk_stats();
    CHECK(s0.threads >= 1);
    CHECK_EQ(s0.commits[TXKIT_AUTO], 0);
    CHECK_EQ(s0.aborts[TXKIT_AUTO], 0);
    CHECK_EQ(tx_stats_commits(&s0),
             s0.commits[0] + s0.commits[1] + s0.commits[2] + s0.commits[3]);
    CHECK_EQ(tx_stats_aborts(&s0), s0.aborts[0] + s0.aborts[1] + s0.aborts[2] + s0.aborts[3]);
    uint64_t by_cause = 0;
    for (int c = 0; c < TXKIT_NCAUSES; c++)
        by_cause += s0.aborts_by_cause[c];
    CHECK_EQ(by_cause, tx_stats_aborts(&s0));
    uint64_t hist = 0;
    for (int b = 0; b < TXKIT_RETRY_BUCKETS; b++)
        hist += s0.retries_hist[b];
    CHECK_EQ(hist, tx_stats_commits(&s0));

    /* K commits add K, read-only ones and empty ones included. */
    const int K = 250;
    for (int i = 0; i < K; i++)
        one_of_three_kinds(i);
    tx_stats_t s1 = tk_stats();
    CHECK_EQ(tx_stats_commits(&s1) - tx_stats_commits(&s0), K);
    CHECK_EQ(s1.transactions - s0.transactions, K);
    CHECK_EQ(s1.commits[TXKIT_AUTO], 0);
    if (!tk_hw_possible()) {
        CHECK_EQ(tx_stats_aborts(&s1), tx_stats_aborts(&s0));
        CHECK_EQ(s1.retries_hist[0] - s0.retries_hist[0], K);
    }

    /* Retry histogram buckets: 0, 1, 2, 3-4, 5-8, 9-16, 17-32, >32. */
    static const int restarts[] = {0, 1, 2, 3, 4, 5, 8, 9, 16, 17};
    static const int bucket[] = {0, 1, 2, 3, 3, 4, 4, 5, 5, 6};
    for (size_t i = 0; i < ARRAY_LEN(restarts); i++) {
        int k = restarts[i];
        tx_stats_t a0 = tk_stats();
        run_with_restarts(k);
        tx_stats_t a1 = tk_stats();
        CHECK_EQ(a1.aborts_by_cause[TXKIT_CAUSE_EXPLICIT] - a0.aborts_by_cause[TXKIT_CAUSE_EXPLICIT],
                 k);
        CHECK(tx_stats_aborts(&a1) - tx_stats_aborts(&a0) >= (uint64_t)k);
        if (!tk_hw_possible()) {
            CHECK_EQ(tx_stats_aborts(&a1) - tx_stats_aborts(&a0), k);
            for (int b = 0; b < TXKIT_RETRY_BUCKETS; b++)
                CHECK_MSG(a1.retries_hist[b] - a0.retries_hist[b] == (b == bucket[i] ? 1u : 0u),
                          "%d restarts: bucket %d moved by %llu (want bucket %d)", k, b,
                          (unsigned long long)(a1.retries_hist[b] - a0.retries_hist[b]),
                          bucket[i]);
        }
        /* A running total of time: it can only grow, and grows with aborts
         * (first attempts are timed only by sampling; retries always). */
        CHECK_MSG(a1.ns_aborted >= a0.ns_aborted, "%d restarts: ns_aborted went from %llu to %llu",
                  k, (unsigned long long)a0.ns_aborted, (unsigned long long)a1.ns_aborted);
        if (k >= 2 && !tk_hw_possible())
            CHECK_MSG(a1.ns_aborted > a0.ns_aborted, "%d restarts: ns_aborted stayed at %llu", k,
                      (unsigned long long)a0.ns_aborted);
    }

    /* A thread that exits still counts. */
    tx_stats_t t0 = tk_stats();
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, thread_three_commits, NULL), 0);
    CHECK_EQ(pthread_join(th, NULL), 0);
    tx_stats_t t1 = tk_stats();
    CHECK_EQ(t1.threads - t0.threads, 1);
    CHECK_EQ(tx_stats_commits(&t1) - tx_stats_commits(&t0), 3);
    CHECK_EQ(t1.transactions - t0.transactions, 3);

    /* Cause names. */
    CHECK(strcmp(txkit_cause_name(TXKIT_CAUSE_CONFLICT), "conflict") == 0);
    CHECK(strcmp(txkit_cause_name(TXKIT_CAUSE_CAPACITY), "capacity") == 0);
    for (int c = 0; c < TXKIT_NCAUSES; c++) {
        const char *n = txkit_cause_name(c);
        CHECK(n != NULL && *n && strcmp(n, "?") != 0);
        for (int d = 0; d < c; d++)
            CHECK(strcmp(n, txkit_cause_name(d)) != 0);
    }
    CHECK(strcmp(txkit_cause_name(TXKIT_NCAUSES), "?") == 0);
    CHECK(strcmp(txkit_cause_name(-1), "?") == 0);

    /* The printed summary says something. */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(f != NULL);
    tx_stats_t s2 = tk_stats();
    tx_stats_print(&s2, f);
    CHECK_EQ(fclose(f), 0);
    CHECK(text != NULL && len > 20);
    CHECK(strlen(text) == len);
    free(text);
}

static void test_version_and_rtm_info(void) {
    CHECK(strcmp(txkit_version(), TXKIT_VERSION_STRING) == 0);
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", TXKIT_VERSION_MAJOR, TXKIT_VERSION_MINOR,
             TXKIT_VERSION_PATCH);
    CHECK(strcmp(txkit_version(), want) == 0);

    struct txkit_rtm_info info;
    memset(&info, 0x7f, sizeof info);
    txkit_rtm_info(&info);
    CHECK(memchr(info.reason, '\0', sizeof info.reason) != NULL);
    CHECK(memchr(info.vendor, '\0', sizeof info.vendor) != NULL);
    CHECK(info.reason[0] != '\0');
    CHECK_EQ(info.usable, txkit_htm_usable());
    CHECK(info.usable == 0 || info.usable == 1);
    if (!info.cpuid_rtm || info.rtm_always_abort)
        CHECK_EQ(info.usable, 0);
    CHECK(info.probe_tries >= 0);
    CHECK(info.probe_commits >= 0 && info.probe_commits <= info.probe_tries);
    printf("    RTM: vendor '%s', cpuid_rtm=%d, usable=%d (%s)\n", info.vendor, info.cpuid_rtm,
           info.usable, info.reason);
}

/* ============================================== program errors (fork) */

static void die_restart_outside(void) { tx_restart(); }

static void die_restart_after_irrevocable(void) {
    TX_ATOMIC {
        tx_irrevocable();
        tx_restart();
    }
}

/* fn must kill the process with a message on stderr. */
static void expect_death(const char *what, void (*fn)(void)) {
    int pfd[2];
    CHECK_EQ(pipe(pfd), 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        struct rlimit no_core = {0, 0};
        setrlimit(RLIMIT_CORE, &no_core);
        close(pfd[0]);
        dup2(pfd[1], 2);
        fn();
        _exit(0); /* survived: the parent reports it */
    }
    close(pfd[1]);
    char msg[1024];
    size_t len = 0;
    for (;;) {
        ssize_t r = read(pfd[0], msg + len, sizeof msg - 1 - len);
        if (r <= 0)
            break;
        len += (size_t)r;
        if (len == sizeof msg - 1)
            break;
    }
    msg[len] = '\0';
    close(pfd[0]);
    int st = 0;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK_MSG(!(WIFEXITED(st) && WEXITSTATUS(st) == 0), "%s: the process survived", what);
    CHECK_MSG(len > 0, "%s: the process died without a message", what);
    printf("    %s: died as it must (%s %d), said: %s", what,
           WIFSIGNALED(st) ? "signal" : "exit", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st),
           msg);
    if (len && msg[len - 1] != '\n')
        putchar('\n');
}

static void test_program_errors(void) {
    expect_death("tx_restart() outside a transaction", die_restart_outside);
    expect_death("tx_restart() after tx_irrevocable()", die_restart_after_irrevocable);
}

/* ================================================================== main */

static const struct tk_test tests[] = {
    {"barriers_types", test_barriers_types},
    {"barriers_float_bits", test_barriers_float_bits},
    {"barriers_rollback", test_barriers_rollback},
    {"barriers_mixed_widths", test_barriers_mixed_widths},
    {"big_transaction", test_big_transaction},
    {"memcpy_memset", test_memcpy_memset},
    {"nesting", test_nesting},
    {"on_commit_order_once", test_on_commit_order_once},
    {"on_abort_order", test_on_abort_order},
    {"commit_handler_runs_transaction", test_commit_handler_runs_transaction},
    {"abort_handler_runs_transaction", test_abort_handler_runs_transaction},
    {"on_commit_copy", test_on_commit_copy},
    {"tx_malloc_basic", test_tx_malloc_basic},
    {"tx_free_deferred", test_tx_free_deferred},
    {"tx_malloc_free_same", test_tx_malloc_free_same},
    {"tx_malloc_fault_injection", test_tx_malloc_fault_injection},
    {"fault_progress", test_fault_progress},
    {"set_fault_errors", test_set_fault_errors},
    {"irrevocable", test_irrevocable},
    {"restart", test_restart},
    {"leave_block", test_leave_block},
    {"method_names", test_method_names},
    {"set_method", test_set_method},
    {"stats", test_stats},
    {"version_and_rtm_info", test_version_and_rtm_info},
    {"program_errors", test_program_errors},
};

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    tk_skip_unless_method_usable("test_api");
    printf("txkit %s, method %s, RTM usable: %d\n", txkit_version(),
           txkit_method_name(txkit_get_method()), txkit_htm_usable());
    heap_accounting_works(); /* decided once, before any test */
    return tk_run_tests(tests, ARRAY_LEN(tests), argc, argv);
}
