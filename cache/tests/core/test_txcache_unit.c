/* SPDX-License-Identifier: MIT */
/* test_txcache_unit.c - the cache core, single-threaded, in every sync mode.
 *
 *   test_txcache_unit [--sync lock|tx|cx|rwlock]   (default: every mode available)
 *
 * API behaviour (insert / lookup / replace / remove, meta and body bytes,
 * streamed bodies, size limits and their errors, configuration errors),
 * eviction order under LRU and GDSF in cases where it is known, limits never
 * exceeded, and reference counts: an entry evicted, replaced, removed or
 * destroyed while referenced keeps its bytes until its last release.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_util.h" /* tk_rand */
#include "txcache.h"
#include "txcache_int.h" /* txc_hash */

static const char *mode_name = "?";

/* Failure reports (CHECK, tests/common/check.h) name the sync mode. */
void tk_check_context(void) { fprintf(stderr, "FAIL [%s]:\n", mode_name); }

static txc_sync_t g_sync;
static uint32_t g_slots;

static txc_cache *make(uint64_t max_objects, uint64_t max_bytes, uint64_t min_sz, uint64_t max_sz,
                       txc_policy_t pol) {
    struct txc_config cfg;
    txc_config_default(&cfg);
    cfg.max_objects = max_objects;
    cfg.max_bytes = max_bytes;
    cfg.min_object_size = min_sz;
    cfg.max_object_size = max_sz;
    cfg.policy = pol;
    cfg.sync = g_sync;
    cfg.slots = g_slots;
    char err[128] = "";
    txc_cache *c = txc_create(&cfg, err, sizeof err);
    if (!c)
        fprintf(stderr, "txc_create: %s\n", err);
    CHECK(c != NULL);
    return c;
}

static void check_ok(txc_cache *c) {
    char err[256] = "";
    int r = txc_check(c, err, sizeof err);
    if (r != 0)
        fprintf(stderr, "txc_check: %s\n", err);
    CHECK(r == 0);
}

/* Insert key with a body of n bytes, each byte fill; returns txc_insert's result. */
static int put(txc_cache *c, const char *key, size_t n, int fill) {
    int err = 0;
    txc_entry *e = txc_entry_new(c, key, strlen(key), (int64_t)n, &err);
    CHECK(e != NULL && err == 0);
    unsigned char *buf = malloc(n ? n : 1);
    CHECK(buf != NULL);
    memset(buf, fill, n);
    CHECK(txc_entry_append(e, buf, n) == 0);
    free(buf);
    return txc_insert(c, e);
}

static int has(txc_cache *c, const char *key) { return txc_contains(c, key, strlen(key)); }

static uint64_t live(txc_cache *c) {
    struct txc_stats st;
    txc_stats_get(c, &st);
    return st.live_entries;
}

/* ------------------------------------------------------------------ tests */

/* txc_hash, as its words are defined: the key in 8-byte little-endian words,
 * the last one padded with zero bytes, each mixed in turn. */
static uint64_t ref_hash(const unsigned char *p, size_t len) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (len * 0xff51afd7ed558ccdull);
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w = 0;
        for (int b = 0; b < 8; b++)
            w |= (uint64_t)p[i + (size_t)b] << (8 * b);
        h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
        h ^= h >> 29;
    }
    uint64_t w = 0;
    for (int b = 0; i + (size_t)b < len; b++)
        w |= (uint64_t)p[i + (size_t)b] << (8 * b);
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 29;
    return h;
}

/* Every key length's tail (0-7 bytes after the whole words) at every
 * alignment: the same hash as the definition, and nothing read outside the
 * key (each key is a malloc block of exactly its length: valgrind's run of
 * this test, cache.unit.valgrind, reports a read past it). */
static void test_hash(void) {
    uint64_t r = 0x243F6A8885A308D3ull;
    for (size_t len = 0; len <= 72; len++) {
        for (size_t off = 0; off < 8; off++) {
            unsigned char *blk = malloc(off + len + 1);
            CHECK(blk != NULL);
            unsigned char *key = blk + off;
            for (size_t i = 0; i < len; i++)
                key[i] = (unsigned char)(tk_rand(&r) >> 56);
            unsigned char *exact = malloc(len ? len : 1);
            CHECK(exact != NULL);
            memcpy(exact, key, len);
            uint64_t want = ref_hash(key, len);
            CHECK_EQ(txc_hash(exact, len), want);
            CHECK_EQ(txc_hash(key, len), want);
            free(exact);
            free(blk);
        }
    }
}

static void test_config(void) {
    struct txc_config c;
    char err[160];
    txc_config_default(&c);
    CHECK(c.max_objects == 1000 && c.max_bytes == 100ull << 20);
    CHECK(c.min_object_size == 1 && c.max_object_size == 1ull << 20);
    CHECK(c.policy == TXC_POLICY_GDSF && c.sync == TXC_SYNC_LOCK);
    CHECK(txc_config_check(&c, err, sizeof err) == 0);

    c.min_object_size = 10;
    c.max_object_size = 5;
    CHECK(txc_config_check(&c, err, sizeof err) == -EINVAL);
    CHECK(strstr(err, "max_object_size") && strstr(err, "min_object_size"));
    txc_config_default(&c);
    c.max_object_size = 0;
    CHECK(txc_config_check(&c, err, sizeof err) == -EINVAL && strstr(err, "max_object_size"));
    txc_config_default(&c);
    c.max_bytes = 1000;
    CHECK(txc_config_check(&c, err, sizeof err) == -EINVAL && strstr(err, "max_bytes"));
    txc_config_default(&c);
    c.policy = (txc_policy_t)7;
    CHECK(txc_config_check(&c, err, sizeof err) == -EINVAL && strstr(err, "policy"));
    txc_config_default(&c);
    c.sync = (txc_sync_t)9;
    CHECK(txc_config_check(&c, err, sizeof err) == -EINVAL && strstr(err, "sync"));
    txc_config_default(&c);
    c.buckets = (1u << 24) + 1;
    CHECK(txc_config_check(&c, err, sizeof err) == -EINVAL && strstr(err, "buckets"));
    CHECK(txc_create(&c, err, sizeof err) == NULL && strstr(err, "buckets"));
    txc_config_default(&c);
    c.slots = 65;
    CHECK(txc_config_check(&c, err, sizeof err) == -EINVAL && strstr(err, "slots"));
    txc_config_default(&c);
    c.max_objects = 0;
    c.max_bytes = 0; /* no limits at all is fine */
    CHECK(txc_config_check(&c, err, sizeof err) == 0);

    txc_sync_t s;
    txc_policy_t p;
    CHECK(txc_sync_parse("tx", &s) == 0 && s == TXC_SYNC_TX);
    CHECK(txc_sync_parse("CX", &s) == 0 && s == TXC_SYNC_CX);
    CHECK(txc_sync_parse("lock", &s) == 0 && s == TXC_SYNC_LOCK);
    CHECK(txc_sync_parse("RWLock", &s) == 0 && s == TXC_SYNC_RWLOCK);
    CHECK(strcmp(txc_sync_name(TXC_SYNC_RWLOCK), "rwlock") == 0);
    txc_config_default(&c);
    c.sync = (txc_sync_t)4;
    CHECK(txc_config_check(&c, err, sizeof err) == -EINVAL && strstr(err, "rwlock"));
    CHECK(txc_sync_parse("mutex", &s) == -EINVAL);
    CHECK(txc_policy_parse("gdsf", &p) == 0 && p == TXC_POLICY_GDSF);
    CHECK(txc_policy_parse("LRU", &p) == 0 && p == TXC_POLICY_LRU);
    CHECK(txc_policy_parse("lfu", &p) == -EINVAL);
    CHECK(strcmp(txc_sync_name(TXC_SYNC_CX), "cx") == 0);
    CHECK(strcmp(txc_policy_name(TXC_POLICY_GDSF), "GDSF") == 0);
}

static void test_basic(void) {
    txc_cache *c = make(100, 1 << 20, 1, 1 << 16, TXC_POLICY_GDSF);
    const char *k = "http://h/a?1";
    CHECK(txc_lookup(c, k, strlen(k)) == NULL);

    int err = 0;
    txc_entry *e = txc_entry_new(c, k, strlen(k), 5, &err);
    CHECK(e && err == 0);
    CHECK(txc_entry_set_meta(e, "META\0x", 6) == 0);
    CHECK(txc_entry_append(e, "he", 2) == 0);
    CHECK(txc_entry_append(e, "llo", 3) == 0);
    CHECK(txc_insert(c, e) == 0);
    check_ok(c);

    txc_entry *h = txc_lookup(c, k, strlen(k));
    CHECK(h != NULL);
    size_t len;
    const char *p = txc_entry_body(h, &len);
    CHECK(len == 5 && memcmp(p, "hello", 5) == 0);
    p = txc_entry_meta(h, &len);
    CHECK(len == 6 && memcmp(p, "META\0x", 6) == 0);
    p = txc_entry_key(h, &len);
    CHECK(len == strlen(k) && memcmp(p, k, len) == 0);
    CHECK(txc_entry_ref(h) == h);
    txc_entry_release(h);
    txc_entry_release(h);

    /* replace: the new bytes are served, the old entry is gone */
    CHECK(put(c, k, 300, 'B') == 0);
    h = txc_lookup(c, k, strlen(k));
    CHECK(h != NULL);
    p = txc_entry_body(h, &len);
    CHECK(len == 300 && p[0] == 'B' && p[299] == 'B');
    txc_entry_release(h);

    struct txc_stats st;
    txc_stats_get(c, &st);
    CHECK(st.inserts == 2 && st.replaced == 1 && st.objects == 1);
    CHECK(st.bytes == strlen(k) + 300);
    CHECK(st.lookups == 3 && st.hits == 2 && st.misses == 1);
    CHECK(st.live_entries == 1);

    CHECK(txc_remove(c, k, strlen(k)) == 0);
    CHECK(txc_remove(c, k, strlen(k)) == -ENOENT);
    CHECK(txc_lookup(c, k, strlen(k)) == NULL);
    txc_stats_get(c, &st);
    CHECK(st.objects == 0 && st.bytes == 0 && st.removals == 1 && st.live_entries == 0);

    /* keys are bytes, not strings; similar keys do not collide */
    int err2 = 0;
    txc_entry *a = txc_entry_new(c, "k\0a", 3, 1, &err2);
    txc_entry *b = txc_entry_new(c, "k\0b", 3, 1, &err2);
    CHECK(a && b);
    CHECK(txc_entry_append(a, "A", 1) == 0 && txc_entry_append(b, "B", 1) == 0);
    CHECK(txc_insert(c, a) == 0 && txc_insert(c, b) == 0);
    h = txc_lookup(c, "k\0b", 3);
    CHECK(h && ((const char *)txc_entry_body(h, NULL))[0] == 'B');
    txc_entry_release(h);
    h = txc_lookup(c, "k\0a", 3);
    CHECK(h && ((const char *)txc_entry_body(h, NULL))[0] == 'A');
    txc_entry_release(h);
    CHECK(txc_lookup(c, "k\0", 2) == NULL);
    check_ok(c);
    txc_destroy(c);
}

static void test_stream_and_limits(void) {
    txc_cache *c = make(100, 1 << 20, 8, 100000, TXC_POLICY_LRU);
    int err = 0;
    /* known lengths outside [min, max] are refused up front */
    CHECK(txc_entry_new(c, "big", 3, 100001, &err) == NULL && err == -EFBIG);
    CHECK(txc_entry_new(c, "small", 5, 7, &err) == NULL && err == -ERANGE);
    CHECK(txc_entry_new(c, "", 0, 10, &err) == NULL && err == -EINVAL);

    /* unknown length: the buffer grows; the bytes come back in order */
    txc_entry *e = txc_entry_new(c, "s", 1, -1, &err);
    CHECK(e && err == 0);
    unsigned char chunk[777];
    size_t total = 0;
    for (int i = 0; i < 100; i++) {
        for (size_t j = 0; j < sizeof chunk; j++)
            chunk[j] = (unsigned char)((total + j) * 7 + 3);
        CHECK(txc_entry_append(e, chunk, sizeof chunk) == 0);
        total += sizeof chunk;
    }
    CHECK(txc_insert(c, e) == 0);
    txc_entry *h = txc_lookup(c, "s", 1);
    CHECK(h);
    size_t len;
    const unsigned char *p = txc_entry_body(h, &len);
    CHECK(len == total);
    for (size_t i = 0; i < len; i++)
        CHECK(p[i] == (unsigned char)(i * 7 + 3));
    txc_entry_release(h);

    /* past max_object_size while streaming: -EFBIG, the entry is given up */
    e = txc_entry_new(c, "t", 1, -1, &err);
    CHECK(e);
    static unsigned char big[60000];
    CHECK(txc_entry_append(e, big, sizeof big) == 0);
    CHECK(txc_entry_append(e, big, sizeof big) == -EFBIG);
    txc_entry_abandon(e);
    CHECK(!has(c, "t"));

    /* a streamed body below min_object_size: -ERANGE, not cached */
    e = txc_entry_new(c, "u", 1, -1, &err);
    CHECK(e && txc_entry_append(e, "1234", 4) == 0);
    CHECK(txc_insert(c, e) == -ERANGE);
    CHECK(!has(c, "u"));
    /* a body shorter than declared (an aborted response): not cached */
    e = txc_entry_new(c, "v", 1, 100, &err);
    CHECK(e && txc_entry_append(e, big, 50) == 0);
    CHECK(txc_insert(c, e) == -ERANGE);
    CHECK(!has(c, "v"));
    struct txc_stats st;
    txc_stats_get(c, &st);
    CHECK(st.rejected == 2 && st.live_entries == 1);
    check_ok(c);
    txc_destroy(c);

    /* larger than max_bytes even in an empty cache (key + meta count) */
    c = make(10, 1000, 1, 1000, TXC_POLICY_GDSF);
    CHECK(put(c, "0123456789", 995, 'x') == -ERANGE);
    CHECK(put(c, "k", 999, 'x') == 0);
    CHECK(has(c, "k"));
    check_ok(c);
    txc_destroy(c);
}

static void test_lru_order(void) {
    txc_cache *c = make(3, 0, 1, 1000, TXC_POLICY_LRU);
    CHECK(put(c, "A", 10, 'a') == 0);
    CHECK(put(c, "B", 10, 'b') == 0);
    CHECK(put(c, "C", 10, 'c') == 0);
    txc_entry_release(txc_lookup(c, "A", 1)); /* order now B, C, A */
    CHECK(put(c, "D", 10, 'd') == 0);         /* evicts B */
    CHECK(!has(c, "B") && has(c, "A") && has(c, "C") && has(c, "D"));
    txc_entry_release(txc_lookup(c, "C", 1)); /* order A, D, C */
    CHECK(put(c, "E", 10, 'e') == 0);         /* evicts A */
    CHECK(!has(c, "A") && has(c, "C") && has(c, "D") && has(c, "E"));
    CHECK(put(c, "F", 10, 'f') == 0); /* evicts D */
    CHECK(!has(c, "D") && has(c, "C") && has(c, "E") && has(c, "F"));
    /* replacing refreshes: E replaced, then G evicts C */
    CHECK(put(c, "E", 20, 'E') == 0);
    CHECK(put(c, "G", 10, 'g') == 0);
    CHECK(!has(c, "C") && has(c, "E") && has(c, "F") && has(c, "G"));
    check_ok(c);
    struct txc_stats st;
    txc_stats_get(c, &st);
    CHECK(st.evictions == 4 && st.replaced == 1 && st.objects == 3);
    txc_destroy(c);

    /* many hits between evictions: the lazy re-keying must still find the
     * least recently used among many stale heap keys */
    c = make(16, 0, 1, 1000, TXC_POLICY_LRU);
    char k[8];
    for (int i = 0; i < 16; i++) {
        snprintf(k, sizeof k, "k%d", i);
        CHECK(put(c, k, 10, i) == 0);
    }
    /* touch every key but k7, in reverse: k7 is the oldest, then k15 ... k0 */
    for (int i = 15; i >= 0; i--) {
        if (i == 7)
            continue;
        snprintf(k, sizeof k, "k%d", i);
        txc_entry_release(txc_lookup(c, k, strlen(k)));
    }
    CHECK(put(c, "n0", 10, 0) == 0);
    CHECK(!has(c, "k7") && has(c, "k15"));
    CHECK(put(c, "n1", 10, 0) == 0);
    CHECK(!has(c, "k15") && has(c, "k14"));
    CHECK(put(c, "n2", 10, 0) == 0);
    CHECK(!has(c, "k14") && has(c, "k0"));
    check_ok(c);
    txc_destroy(c);
}

static void test_gdsf_order(void) {
    /* no hits: the largest goes first (lowest 1 * K / size) */
    txc_cache *c = make(3, 0, 1, 100000, TXC_POLICY_GDSF);
    CHECK(put(c, "S", 100, 's') == 0);
    CHECK(put(c, "M", 1000, 'm') == 0);
    CHECK(put(c, "L", 10000, 'l') == 0);
    CHECK(put(c, "X", 100, 'x') == 0); /* evicts L; the clock becomes L's priority */
    CHECK(!has(c, "L") && has(c, "S") && has(c, "M") && has(c, "X"));
    /* 20 hits lift M (21 K / 1001) above S and X (about K / 101) */
    for (int i = 0; i < 20; i++)
        txc_entry_release(txc_lookup(c, "M", 1));
    CHECK(put(c, "Y", 5000, 'y') == 0); /* evicts S (inserted before the aging) */
    CHECK(!has(c, "S") && has(c, "M") && has(c, "X") && has(c, "Y"));
    /* aging: the clock is now S's priority; Y started from it, X before it */
    CHECK(put(c, "Z", 100, 'z') == 0); /* evicts X */
    CHECK(!has(c, "X") && has(c, "M") && has(c, "Y") && has(c, "Z"));
    /* Y (clock + K/5001) is now below M (21 K / 1001), and Z (clock + K/101) */
    CHECK(put(c, "W", 100, 'w') == 0);
    CHECK(!has(c, "Y") && has(c, "M") && has(c, "Z") && has(c, "W"));
    check_ok(c);
    txc_destroy(c);

    /* byte limit: one large insert evicts several small ones, lowest first */
    c = make(0, 4000, 1, 4000, TXC_POLICY_GDSF);
    CHECK(put(c, "a", 1000, 1) == 0);
    CHECK(put(c, "b", 500, 1) == 0);
    CHECK(put(c, "c", 1000, 1) == 0);
    CHECK(put(c, "d", 1000, 1) == 0);
    txc_entry_release(txc_lookup(c, "a", 1));
    txc_entry_release(txc_lookup(c, "c", 1));
    CHECK(put(c, "e", 1500, 1) == 0); /* needs 1002 more bytes: evicts d, then b */
    CHECK(!has(c, "d") && !has(c, "b") && has(c, "a") && has(c, "c") && has(c, "e"));
    struct txc_stats st;
    txc_stats_get(c, &st);
    CHECK(st.bytes <= 4000 && st.evictions == 2);
    check_ok(c);
    txc_destroy(c);
}

static void test_limits_random(void) {
    for (int pol = 0; pol < 2; pol++) {
        txc_cache *c = make(37, 200000, 1, 20000, (txc_policy_t)pol);
        unsigned x = 12345;
        char k[16];
        for (int i = 0; i < 3000; i++) {
            x = x * 1103515245u + 12345u;
            int key = (int)(x >> 16) % 120;
            snprintf(k, sizeof k, "r%d", key);
            unsigned op = (x >> 8) % 10;
            if (op < 5) {
                txc_entry *h = txc_lookup(c, k, strlen(k));
                if (h) {
                    size_t len;
                    const unsigned char *b = txc_entry_body(h, &len);
                    CHECK(len > 0 && b[0] == (unsigned char)key &&
                          b[len - 1] == (unsigned char)key);
                    txc_entry_release(h);
                }
            } else if (op < 9) {
                size_t n = 1 + (x >> 3) % 20000;
                CHECK(put(c, k, n, key) == 0);
            } else {
                int r = txc_remove(c, k, strlen(k));
                CHECK(r == 0 || r == -ENOENT);
            }
            struct txc_stats st;
            txc_stats_get(c, &st);
            CHECK(st.objects <= 37 && st.bytes <= 200000);
            CHECK(st.live_entries == st.objects);
            if (i % 100 == 0)
                check_ok(c);
        }
        check_ok(c);
        txc_destroy(c);
    }
}

static void test_refcounts(void) {
    uint64_t base = txc_live_entries_all();
    txc_cache *c = make(2, 0, 1, 1000, TXC_POLICY_LRU);
    CHECK(put(c, "a", 100, 'a') == 0);
    txc_entry *ha = txc_lookup(c, "a", 1);
    CHECK(ha);
    /* removed while referenced */
    CHECK(txc_remove(c, "a", 1) == 0);
    CHECK(live(c) == 1);
    /* evicted while referenced */
    CHECK(put(c, "b", 100, 'b') == 0);
    txc_entry *hb = txc_lookup(c, "b", 1);
    txc_entry *hb2 = txc_entry_ref(hb);
    CHECK(put(c, "c", 100, 'c') == 0);
    CHECK(put(c, "d", 100, 'd') == 0); /* evicts b */
    CHECK(!has(c, "b"));
    /* replaced while referenced */
    txc_entry *hc = txc_lookup(c, "c", 1);
    CHECK(put(c, "c", 100, 'C') == 0);
    CHECK(live(c) == 5); /* a, b, old c, new c, d */
    const unsigned char *p;
    size_t len;
    p = txc_entry_body(ha, &len);
    CHECK(len == 100 && p[0] == 'a' && p[99] == 'a');
    p = txc_entry_body(hb, &len);
    CHECK(len == 100 && p[0] == 'b' && p[99] == 'b');
    p = txc_entry_body(hc, &len);
    CHECK(len == 100 && p[0] == 'c' && p[99] == 'c');
    txc_entry_release(ha);
    CHECK(live(c) == 4);
    txc_entry_release(hb);
    CHECK(live(c) == 4); /* one reference left on b */
    txc_entry_release(hb2);
    txc_entry_release(hc);
    CHECK(live(c) == 2);
    check_ok(c);

    /* a builder abandoned, and one referenced before a rejected insert */
    int err;
    txc_entry *e = txc_entry_new(c, "z", 1, -1, &err);
    CHECK(live(c) == 3);
    txc_entry_abandon(e);
    CHECK(live(c) == 2);
    e = txc_entry_new(c, "z", 1, -1, &err);
    txc_entry *ez = txc_entry_ref(e);
    CHECK(txc_insert(c, e) == -ERANGE); /* empty body, min 1 */
    CHECK(live(c) == 3);
    txc_entry_release(ez);
    CHECK(live(c) == 2);

    /* destroyed while referenced: the entry outlives the cache */
    txc_entry *hd = txc_lookup(c, "d", 1);
    CHECK(hd);
    CHECK(txc_entry_ref(hd) == hd);
    txc_destroy(c);
    CHECK(txc_live_entries_all() == base + 1);
    p = txc_entry_body(hd, &len);
    CHECK(len == 100 && p[0] == 'd' && p[99] == 'd');
    txc_entry_release(hd);
    CHECK(txc_live_entries_all() == base + 1);
    txc_entry_release(hd);
    CHECK(txc_live_entries_all() == base);
}

static void test_unlimited(void) {
    /* no object or byte limit: the heap grows past its first allocation */
    txc_cache *c = make(0, 0, 1, 100, TXC_POLICY_GDSF);
    char k[16];
    for (int i = 0; i < 5000; i++) {
        snprintf(k, sizeof k, "u%d", i);
        CHECK(put(c, k, 1 + i % 100, 1) == 0);
    }
    struct txc_stats st;
    txc_stats_get(c, &st);
    CHECK(st.objects == 5000 && st.evictions == 0);
    check_ok(c);
    txc_destroy(c);
}

/* A body buffer goes back to the pool of the thread that took it: one freed
 * by another thread is not handed out there (its lines are still in the
 * builder's CPU cache), and its builder gets it again once the buffers its
 * own pool holds of that size are taken. */
#define HOME_BODY 5000
#define HOME_TRIES 64 /* more than a pool keeps of a size */
struct home_arg {
    txc_cache *c;
    txc_entry *theirs;
    const void *theirs_body;
    const void *mine_body;
};

static txc_entry *home_new(txc_cache *c) {
    int err = 0;
    txc_entry *e = txc_entry_new(c, "h", 1, HOME_BODY, &err);
    CHECK(e != NULL);
    CHECK(txc_entry_append(e, "h", 1) == 0);
    return e;
}

static const void *body_of(txc_entry *e) {
    size_t len;
    return txc_entry_body(e, &len);
}

static void *home_thread(void *p) {
    struct home_arg *a = p;
    txc_entry_abandon(a->theirs); /* the last reference: freed here */
    txc_entry *e = home_new(a->c);
    a->mine_body = body_of(e);
    txc_entry_abandon(e);
    return NULL;
}

static void test_buffers_go_home(void) {
    txc_cache *c = make(0, 0, 1, 10000, TXC_POLICY_GDSF);
    txc_entry *e = home_new(c);
    struct home_arg a = {c, e, body_of(e), NULL};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, home_thread, &a) == 0);
    CHECK(pthread_join(th, NULL) == 0);
    CHECK(a.mine_body != a.theirs_body);
    txc_entry *held[HOME_TRIES];
    int found = 0;
    for (int i = 0; i < HOME_TRIES; i++) {
        held[i] = home_new(c);
        found |= body_of(held[i]) == a.theirs_body;
    }
    CHECK(found);
    for (int i = 0; i < HOME_TRIES; i++)
        txc_entry_abandon(held[i]);
    txc_destroy(c);
}

/* A reader that stays inside its read-side section (descheduled there, in
 * real life) holds back every header retired meanwhile; the reclaims that run
 * every few retirements must not each walk that growing backlog (they did:
 * quadratic, 10% of the cache benchmark's time on a loaded machine). Then the
 * reader leaves and everything is freed. Tx and cx modes (epochs). */
#define BEHIND_N 4000
static int behind_go, behind_done;
static pthread_mutex_t behind_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t behind_cv = PTHREAD_COND_INITIALIZER;

static void behind_wait(int *flag) {
    pthread_mutex_lock(&behind_mu);
    while (!*flag)
        pthread_cond_wait(&behind_cv, &behind_mu);
    pthread_mutex_unlock(&behind_mu);
}

static void behind_set(int *flag) {
    pthread_mutex_lock(&behind_mu);
    *flag = 1;
    pthread_cond_broadcast(&behind_cv);
    pthread_mutex_unlock(&behind_mu);
}

static void *behind_reader(void *arg) {
    (void)arg;
    txc_rd_enter();
    behind_set(&behind_go);
    behind_wait(&behind_done);
    txc_rd_exit();
    return NULL;
}

static void test_reclaim_behind_reader(void) {
    uint64_t base = txc_live_entries_all();
    txc_cache *c = make(4, 0, 1, 1000, TXC_POLICY_LRU);
    behind_go = behind_done = 0;
    pthread_t th;
    CHECK(pthread_create(&th, NULL, behind_reader, NULL) == 0);
    behind_wait(&behind_go);
    uint64_t v0 = txc_limbo_visits();
    char key[32];
    for (int i = 0; i < BEHIND_N; i++) { /* each insert past the 4th evicts one */
        snprintf(key, sizeof key, "k%d", i);
        CHECK(put(c, key, 16, 'a' + i % 26) == 0);
    }
    uint64_t visits = txc_limbo_visits() - v0;
    if (visits >= 4u * BEHIND_N)
        fprintf(stderr, "%llu headers visited for %d evictions behind a reader\n",
                (unsigned long long)visits, BEHIND_N);
    CHECK(visits < 4u * BEHIND_N); /* a walk per batch of the whole backlog: ~N^2 / 16 */
    behind_set(&behind_done);
    CHECK(pthread_join(th, NULL) == 0);
    txc_reclaim(1); /* returns once every header retired so far is freed */
    CHECK(txc_live_entries_all() == base + 4);
    check_ok(c);
    txc_destroy(c);
    txc_reclaim(1);
    CHECK(txc_live_entries_all() == base);
}

int main(int argc, char **argv) {
    txc_sync_t modes[4] = {TXC_SYNC_LOCK, TXC_SYNC_TX, TXC_SYNC_CX, TXC_SYNC_RWLOCK};
    int nmodes = 4;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--sync") == 0 && i + 1 < argc) {
            if (txc_sync_parse(argv[++i], &modes[0]) != 0) {
                fprintf(stderr, "--sync: unknown mode '%s' (lock, tx, cx, rwlock)\n", argv[i]);
                return 2;
            }
            nmodes = 1;
        } else {
            fprintf(stderr, "usage: %s [--sync lock|tx|cx|rwlock]\n", argv[0]);
            return 2;
        }
    }
    test_config();
    mode_name = "hash";
    test_hash();
    for (int m = 0; m < nmodes; m++) {
        struct txc_config cfg;
        txc_config_default(&cfg);
        cfg.sync = modes[m];
        char err[160];
        g_sync = modes[m];
        mode_name = txc_sync_name(modes[m]);
        if (txc_config_check(&cfg, err, sizeof err) != 0) {
            printf("[%s] skipped: %s\n", mode_name, err);
            if (nmodes == 1)
                return 77;
            continue;
        }
        /* one slot per CPU, then 4 and 1 slots (whatever the CPU count) */
        static const uint32_t slots[] = {0, 3, 1};
        for (int k = 0; k < 3; k++) {
            g_slots = slots[k];
            test_basic();
            test_stream_and_limits();
            test_lru_order();
            test_gdsf_order();
            test_limits_random();
            test_refcounts();
            test_unlimited();
        }
        test_buffers_go_home();
        if (txc_plans_apart(modes[m])) /* the modes with epochs */
            test_reclaim_behind_reader();
        printf("[%s] ok\n", mode_name);
    }
    CHECK(txc_live_entries_all() == 0);
    return 0;
}
