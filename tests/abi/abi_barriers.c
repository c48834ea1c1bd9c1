/* SPDX-License-Identifier: MIT */
/* abi_barriers.c - every load/store/log barrier type of the libitm ABI, and
 * the memcpy / memmove / memset barriers, committed and cancelled.
 *
 * Types: uint8/16/32/64, float, double, long double, float/double/long
 * double _Complex, 64- and 128-bit vectors here, 256-bit vectors in
 * abi_barriers_avx.c (compiled with -mavx, run only when the CPU has AVX).
 * For each type (see abi_barriers.h): plain C that gcc instruments as it
 * likes, and direct calls of all eight barriers of the type.
 *
 * _ITM_LB logs a thread-local block that a transaction_pure function then
 * changes.
 *
 * Memory: plain memcpy / memmove (overlapping, both directions) / memset and
 * a struct copy, between shared buffers and a private one; then each of the
 * 30 _ITM_memcpy* / _ITM_memmove* variants and the 3 _ITM_memset* ones called
 * directly, the "after read" / "after write" ones after a read or a write of
 * the same bytes in the same transaction.
 *
 * Built at -O0 and -O2: gcc emits different barriers (plain R/W at -O0; the
 * RaW/RfW/WaR/WaW variants and fewer, bigger memcpy barriers at -O2).
 * Each part is a named check, "<part>_commit" and "<part>_cancel".
 */
#include <stdio.h>
#include <string.h>

#include "abi_barriers.h"

int abi_cancel_now = 1;

typedef int abi_m64 __attribute__((vector_size(8)));
typedef float abi_m128 __attribute__((vector_size(16)));

ABI_BARRIER_CASE(U1, uint8_t, SCALAR, 11)
ABI_BARRIER_CASE(U2, uint16_t, SCALAR, 1201)
ABI_BARRIER_CASE(U4, uint32_t, SCALAR, 70001)
ABI_BARRIER_CASE(U8, uint64_t, SCALAR, 5000000001ull)
ABI_BARRIER_CASE(F, float, SCALAR, 1.5f)
ABI_BARRIER_CASE(D, double, SCALAR, 2.25)
ABI_BARRIER_CASE(E, long double, SCALAR, 3.125L)
ABI_BARRIER_CASE(CF, float _Complex, SCALAR, 1.0f + 2.0if)
ABI_BARRIER_CASE(CD, double _Complex, SCALAR, 3.0 + 4.0i)
ABI_BARRIER_CASE(CE, long double _Complex, SCALAR, 5.0L + 6.0iL)
ABI_BARRIER_CASE(M64, abi_m64, VECTOR, 21)
ABI_BARRIER_CASE(M128, abi_m128, VECTOR, 31)

/* in abi_barriers_avx.c */
int abi_barriers_m256(int cancel);

/* Runs check_S(cancel) for every type here; returns how many types failed
 * and names them (with the failure bits) in failed[]. */
static int check_all_types(int cancel, int *mask_all, char *failed, size_t size) {
    static const char *const names[] = {"U1", "U2", "U4", "U8", "F",   "D",
                                        "E",  "CF", "CD", "CE", "M64", "M128"};
    int masks[12] = {
        check_U1(cancel), check_U2(cancel), check_U4(cancel),  check_U8(cancel),
        check_F(cancel),  check_D(cancel),  check_E(cancel),   check_CF(cancel),
        check_CD(cancel), check_CE(cancel), check_M64(cancel), check_M128(cancel),
    };
    int n = 0;
    size_t len = 0;
    failed[0] = '\0';
    *mask_all = 0;
    for (int i = 0; i < 12; i++) {
        if (!masks[i])
            continue;
        n++;
        *mask_all |= masks[i];
        len += (size_t)snprintf(failed + len, size - len, " %s(%s%s%s)", names[i],
                                masks[i] & 1 ? "typed " : "", masks[i] & 2 ? "direct " : "",
                                masks[i] & 4 ? "log" : "");
        if (len >= size)
            break;
    }
    return n;
}

/* ------------------------------------------ plain memcpy / memmove / memset */

#define MB 512
unsigned char mem_a[MB], mem_b[MB];
struct blob {
    long v[5];
    char tag[3];
} blob_src, blob_dst;
unsigned char private_out[64]; /* the private buffer's final contents */

static void mem_init(void) {
    for (int i = 0; i < MB; i++) {
        mem_a[i] = (unsigned char)(i * 7 + 1);
        mem_b[i] = (unsigned char)(255 - i);
    }
    for (int i = 0; i < 5; i++)
        blob_src.v[i] = 1000 + i;
    memcpy(blob_src.tag, "tm", 3);
    memset(&blob_dst, 0, sizeof blob_dst);
    memset(private_out, 0, sizeof private_out);
}

/* local is private to the thread (gcc: not instrumented, "n" side) */
#define MEMOPS_BODY(A, B, local)                                                    \
    do {                                                                            \
        memcpy((B) + 3, (A) + 100, 77);                                             \
        memmove((A) + 10, (A) + 7, 200);    /* overlap, destination above */        \
        memmove((A) + 300, (A) + 305, 150); /* overlap, destination below */        \
        memset((A) + 460, 0xa5, 37);                                                \
        memcpy((local), (A) + 1, 64);       /* shared to private */                 \
        memcpy((B) + 200, (local) + 5, 50); /* private to shared */                 \
        memcpy((B) + 300, (A) + 10, 100);   /* reads what this transaction wrote */ \
        memmove((B) + 101, (B) + 100, 31);                                          \
        memmove((B) + 3, (B) + 4, 76);                                              \
        blob_dst = blob_src; /* struct copy */                                      \
    } while (0)

__attribute__((noinline)) static void memops_tx(int cancel) {
    unsigned char local[64];
    __transaction_atomic {
        MEMOPS_BODY(mem_a, mem_b, local);
        if (cancel && abi_cancel_now)
            __transaction_cancel;
    }
    memcpy(private_out, local, sizeof local);
}

static int check_memops(int cancel) {
    static unsigned char ea[MB], eb[MB];
    unsigned char local[64];
    mem_init();
    memcpy(ea, mem_a, MB);
    memcpy(eb, mem_b, MB);
    struct blob eblob = blob_dst;
    if (!cancel) {
        struct blob saved = blob_dst;
        MEMOPS_BODY(ea, eb, local); /* also sets blob_dst: keep the expected copy */
        eblob = blob_dst;
        blob_dst = saved;
    }
    memops_tx(cancel);
    int ok = memcmp(mem_a, ea, MB) == 0 && memcmp(mem_b, eb, MB) == 0 &&
             memcmp(&blob_dst, &eblob, sizeof eblob) == 0;
    if (!cancel) /* a private destination is not undone by a cancel: only checked here */
        ok = ok && memcmp(private_out, local, sizeof local) == 0;
    return ok;
}

/* ----------------------------------------- the memory barriers, called directly */

void _ITM_memsetW(void *, int, size_t) ABI_PURE;
void _ITM_memsetWaR(void *, int, size_t) ABI_PURE;
void _ITM_memsetWaW(void *, int, size_t) ABI_PURE;
#define ABI_MEMOP_VARIANTS(X, OP, MOVE) \
    X(OP, RnWt, n, t, MOVE)             \
    X(OP, RnWtaR, n, taR, MOVE)         \
    X(OP, RnWtaW, n, taW, MOVE)         \
    X(OP, RtWn, t, n, MOVE)             \
    X(OP, RtWt, t, t, MOVE)             \
    X(OP, RtWtaR, t, taR, MOVE)         \
    X(OP, RtWtaW, t, taW, MOVE)         \
    X(OP, RtaRWn, taR, n, MOVE)         \
    X(OP, RtaRWt, taR, t, MOVE)         \
    X(OP, RtaRWtaR, taR, taR, MOVE)     \
    X(OP, RtaRWtaW, taR, taW, MOVE)     \
    X(OP, RtaWWn, taW, n, MOVE)         \
    X(OP, RtaWWt, taW, t, MOVE)         \
    X(OP, RtaWWtaR, taW, taR, MOVE)     \
    X(OP, RtaWWtaW, taW, taW, MOVE)
#define ABI_ALL_MEMOPS(X) ABI_MEMOP_VARIANTS(X, memcpy, 0) ABI_MEMOP_VARIANTS(X, memmove, 1)

#define DECLARE_MEMOP(OP, V, SK, DK, MOVE) void _ITM_##OP##V(void *, const void *, size_t) ABI_PURE;
ABI_ALL_MEMOPS(DECLARE_MEMOP)

#define DM_LEN 64
#define DM_CASES 30
unsigned char dm[DM_CASES][DM_LEN]; /* one shared region per variant */

#define IS_T_n 0
#define IS_T_t 1
#define IS_T_taR 1
#define IS_T_taW 1
/* "after read" / "after write": the same transaction read or wrote all of
 * those bytes before (the hint is a promise: a runtime may skip logging
 * bytes it was told were written already). SET and READ are the
 * transactional or the plain versions. */
#define PRIME_n(SET, READ, p, len, v) ((void)0)
#define PRIME_t(SET, READ, p, len, v) ((void)0)
#define PRIME_taR(SET, READ, p, len, v) READ(p, len)
#define PRIME_taW(SET, READ, p, len, v)                   \
    do {                                                  \
        SET(p, v, (len) / 2);                             \
        SET((p) + (len) / 2, (v) + 1, (len) - (len) / 2); \
    } while (0)

#define TX_READ(p, len)                        \
    do {                                       \
        unsigned char scratch_[DM_LEN];        \
        _ITM_memcpyRtWn(scratch_, (p), (len)); \
    } while (0)
#define PLAIN_READ(p, len) ((void)(p), (void)(len))

/* One variant: where its source and destination are, by kind. Both shared:
 * the copy stays inside the region (memmove: overlapping, downward for even
 * cases and upward for odd ones); one private side: a private buffer. */
#define MEMOP_BODY(COPY, SET, READ, SK, DK, MOVE, I, region, lsrc, ldst)     \
    do {                                                                     \
        size_t soff_ = 3, doff_ = 3, len_ = 41;                              \
        if (IS_T_##SK && IS_T_##DK) {                                        \
            if (!(MOVE)) {                                                   \
                soff_ = 0, doff_ = 32, len_ = 29;                            \
            } else if ((I)&1) {                                              \
                soff_ = 9, doff_ = 2, len_ = 40;                             \
            } else {                                                         \
                soff_ = 0, doff_ = 5, len_ = 40;                             \
            }                                                                \
        }                                                                    \
        unsigned char *src_ = IS_T_##SK ? (region) + soff_ : (lsrc) + soff_; \
        unsigned char *dst_ = IS_T_##DK ? (region) + doff_ : (ldst) + doff_; \
        PRIME_##SK(SET, READ, src_, len_, 0x30 + (I));                       \
        PRIME_##DK(SET, READ, dst_, len_, 0x60 + (I));                       \
        COPY(dst_, src_, len_);                                              \
    } while (0)

#define DEFINE_MEMOP(OP, V, SK, DK, MOVE)                                                         \
    __attribute__((noinline)) static void tx_##OP##V(                                             \
        int i, unsigned char *region, unsigned char *lsrc, unsigned char *ldst, int cancel) {     \
        __transaction_atomic {                                                                    \
            MEMOP_BODY(_ITM_##OP##V, _ITM_memsetW, TX_READ, SK, DK, MOVE, i, region, lsrc, ldst); \
            if (cancel && abi_cancel_now)                                                         \
                __transaction_cancel;                                                             \
        }                                                                                         \
    }                                                                                             \
    static void plain_##OP##V(int i, unsigned char *region, unsigned char *lsrc,                  \
                              unsigned char *ldst) {                                              \
        MEMOP_BODY(OP, memset, PLAIN_READ, SK, DK, MOVE, i, region, lsrc, ldst);                  \
    }
ABI_ALL_MEMOPS(DEFINE_MEMOP)

struct memop_case {
    const char *name;
    void (*tx)(int, unsigned char *, unsigned char *, unsigned char *, int);
    void (*plain)(int, unsigned char *, unsigned char *, unsigned char *);
};
#define MEMOP_ENTRY(OP, V, SK, DK, MOVE) {"_ITM_" #OP #V, tx_##OP##V, plain_##OP##V},
static const struct memop_case memop_cases[DM_CASES] = {ABI_ALL_MEMOPS(MEMOP_ENTRY)};

/* The memset barriers: plain, after a read, after a write. */
__attribute__((noinline)) static void tx_memsets(unsigned char *region, int cancel) {
    __transaction_atomic {
        _ITM_memsetW(region + 1, 0x11, 20);
        TX_READ(region + 25, 20);
        _ITM_memsetWaR(region + 25, 0x22, 20);
        _ITM_memsetW(region + 45, 0x33, 17);
        _ITM_memsetWaW(region + 47, 0x44, 10);
        if (cancel && abi_cancel_now)
            __transaction_cancel;
    }
}

static void plain_memsets(unsigned char *region) {
    memset(region + 1, 0x11, 20);
    memset(region + 25, 0x22, 20);
    memset(region + 45, 0x33, 17);
    memset(region + 47, 0x44, 10);
}

/* Returns the number of variants that failed; names them in failed[]. */
static int check_direct_memops(int cancel, char *failed, size_t size) {
    int n = 0;
    size_t len = 0;
    failed[0] = '\0';
    for (int i = 0; i <= DM_CASES; i++) {
        static unsigned char region[DM_LEN];
        unsigned char want[DM_LEN], lsrc[DM_LEN], ldst[DM_LEN], wsrc[DM_LEN], wdst[DM_LEN];
        unsigned char *shared = i < DM_CASES ? dm[i] : region;
        for (int k = 0; k < DM_LEN; k++) {
            shared[k] = (unsigned char)(i * 31 + k * 3 + 1);
            lsrc[k] = (unsigned char)(200 - k);
            ldst[k] = 0;
        }
        memcpy(want, shared, DM_LEN);
        memcpy(wsrc, lsrc, DM_LEN);
        memcpy(wdst, ldst, DM_LEN);
        if (i < DM_CASES) {
            if (!cancel)
                memop_cases[i].plain(i, want, wsrc, wdst);
            memop_cases[i].tx(i, shared, lsrc, ldst, cancel);
        } else {
            if (!cancel)
                plain_memsets(want);
            tx_memsets(shared, cancel);
        }
        int ok = memcmp(shared, want, DM_LEN) == 0 && memcmp(lsrc, wsrc, DM_LEN) == 0;
        if (!cancel)
            ok = ok && memcmp(ldst, wdst, DM_LEN) == 0;
        if (!ok) {
            n++;
            len += (size_t)snprintf(failed + len, size - len, " %s",
                                    i < DM_CASES ? memop_cases[i].name : "_ITM_memset*");
            if (len >= size)
                break;
        }
    }
    return n;
}

/* --------------------------------------------------------- _ITM_LB: a block */

void _ITM_LB(const void *, size_t) ABI_PURE;

static __thread unsigned char tl_block[40];
int lb_marker;

ABI_PURE static void scribble_tl_block(void) { memset(tl_block + 3, 0xee, 30); }

/* Logs a thread-local block, then changes it behind gcc's back: a cancel
 * must bring the logged bytes back. */
__attribute__((noinline)) static void log_block_tx(int cancel) {
    __transaction_atomic {
        _ITM_LB(tl_block + 2, 34);
        scribble_tl_block();
        lb_marker = lb_marker + 1;
        if (cancel && abi_cancel_now)
            __transaction_cancel;
    }
}

static int check_log_block(int cancel) {
    unsigned char want[sizeof tl_block];
    for (size_t i = 0; i < sizeof tl_block; i++)
        tl_block[i] = (unsigned char)(i + 100);
    memcpy(want, tl_block, sizeof want);
    if (!cancel)
        memset(want + 3, 0xee, 30);
    log_block_tx(cancel);
    return memcmp(tl_block, want, sizeof want) == 0;
}

/* --------------------------------------------------- unaligned (packed) fields */

struct __attribute__((packed)) packed {
    uint8_t c;
    uint32_t u4;
    uint64_t u8;
    uint16_t u2;
    double d;
    uint8_t tail[5];
} pk[2];

#define PACKED_BODY(p)                                \
    do {                                              \
        (p)[1].u4 = (p)[0].u4 + 3;                    \
        (p)[1].u8 = (p)[0].u8 * 2 + (p)[1].u4;        \
        (p)[0].u2 = (uint16_t)((p)[1].c + (p)[0].u2); \
        (p)[1].d = (p)[0].d + 0.5;                    \
        (p)[0].u8 = (p)[1].u8 + 1;                    \
    } while (0)

static void packed_init(void) {
    memset(pk, 0, sizeof pk);
    for (int i = 0; i < 2; i++) {
        pk[i].c = (uint8_t)(7 + i);
        pk[i].u4 = 0x01020304u + (uint32_t)i;
        pk[i].u8 = 0x1112131415161718ull + (uint64_t)i;
        pk[i].u2 = (uint16_t)(0x2122 + i);
        pk[i].d = 1.25 * (i + 1);
    }
}

__attribute__((noinline)) static void packed_tx(int cancel) {
    __transaction_atomic {
        PACKED_BODY(pk);
        if (cancel && abi_cancel_now)
            __transaction_cancel;
    }
}

static int check_packed(int cancel) {
    struct packed want[2];
    packed_init();
    memcpy(want, pk, sizeof want);
    if (!cancel)
        PACKED_BODY(want);
    packed_tx(cancel);
    return memcmp(pk, want, sizeof want) == 0;
}

/* ------------------------------------------------------------------- main */

int main(void) {
    abi_init("abi_barriers");
    char failed[512];
    int mask;
    int avx = __builtin_cpu_supports("avx");
    for (int cancel = 0; cancel <= 1; cancel++) {
        const char *phase = cancel ? "cancel" : "commit";
        char name[32], detail[600];
        int nfail = check_all_types(cancel, &mask, failed, sizeof failed);
        snprintf(detail, sizeof detail, "types that differ:%s", failed);
        snprintf(name, sizeof name, "typed_%s", phase);
        ABI_EXPECT(name, !(mask & 1), detail);
        snprintf(name, sizeof name, "direct_%s", phase);
        ABI_EXPECT(name, !(mask & 2), detail);
        snprintf(name, sizeof name, "log_%s", phase);
        ABI_EXPECT(name, !(mask & 4), detail);
        snprintf(name, sizeof name, "log_block_%s", phase);
        ABI_EXPECT(name, check_log_block(cancel), "_ITM_LB: the thread-local block differs");
        if (!cancel) /* the cancel phase is in the named checks only (ABI_MAYFAIL) */
            abi_summary("types_%s=%d/12", phase, 12 - nfail);

        if (avx) {
            int m256 = abi_barriers_m256(cancel);
            snprintf(detail, sizeof detail, "M256 failure bits %d (1 typed, 2 direct, 4 log)",
                     m256);
            snprintf(name, sizeof name, "m256_%s", phase);
            ABI_EXPECT(name, m256 == 0, detail);
        }

        snprintf(name, sizeof name, "memops_%s", phase);
        int mem_ok = check_memops(cancel);
        ABI_EXPECT(name, mem_ok, "memcpy/memmove/memset/struct copy results differ");

        nfail = check_direct_memops(cancel, failed, sizeof failed);
        snprintf(detail, sizeof detail, "variants that differ:%s", failed);
        snprintf(name, sizeof name, "memops_direct_%s", phase);
        ABI_EXPECT(name, nfail == 0, detail);
        if (!cancel)
            abi_summary("memops_%s=%d memops_direct_%s=%d/%d", phase, mem_ok, phase,
                        DM_CASES + 1 - nfail, DM_CASES + 1);

        snprintf(name, sizeof name, "packed_%s", phase);
        int packed_ok = check_packed(cancel);
        ABI_EXPECT(name, packed_ok, "unaligned fields of a packed struct differ");
        if (!cancel)
            abi_summary("packed_%s=%d", phase, packed_ok);
    }
    printf("INFO abi_barriers: 256-bit vectors %s\n", avx ? "checked" : "skipped: no AVX");
    abi_summary("m256=%s", avx ? "checked" : "skipped");
    return abi_finish();
}
