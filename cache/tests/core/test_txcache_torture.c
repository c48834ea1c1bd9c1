/* SPDX-License-Identifier: MIT */
/* test_txcache_torture.c - the cache core under concurrency, with an oracle.
 *
 *   test_txcache_torture --sync lock|tx|cx|rwlock [--threads N] [--seconds S]
 *                        [--policy LRU|GDSF] [--keys K] [--slots N]
 *                        [--expect-runtime txkit|libitm]
 *
 * N threads look up, insert (known and unknown lengths), remove, reference and
 * release entries of K keys in a small cache (evictions all the time), and
 * keep references for a while. Every body is a function of its key and
 * version (the version is in the meta), so a torn entry, a body freed or
 * reused while referenced, or a lookup that returns another key's entry is
 * seen: the bytes are checked at the hit and again before the release. The
 * limits are checked by every thread as it goes (txc_stats_get is a
 * synchronized snapshot), and txc_check's invariants and the reference
 * counts at the end. --expect-runtime fails unless the gcc transactions bind
 * to that libitm-ABI runtime (tx mode under LD_PRELOAD=libitm.so.1).
 * TXKIT_STRESS_SECONDS (tests/runtime/stress_env.h) replaces --seconds; the
 * threads' choices come from a printed seed (TXKIT_STRESS_SEED replays it).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <txkit.h>

#include "stress_env.h" /* tests/runtime */
#include "txcache.h"

#define MAX_THREADS 64
#define HELD 8
#define MAX_OBJECTS 24
#define MAX_BYTES (96 * 1024)
#define MAX_BODY 16000

struct meta {
    uint32_t key;
    uint32_t len;
    uint64_t version;
};

static txc_cache *g_cache;
static int g_keys = 64;
static atomic_int g_stop;
static atomic_ulong g_bad;

static void fail(const char *what, uint32_t key, uint64_t version) {
    fprintf(stderr, "FAIL: %s (key %u version %llx)\n", what, key, (unsigned long long)version);
    atomic_fetch_add(&g_bad, 1);
}

static uint64_t rnd(uint64_t *s) {
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static unsigned char body_byte(uint32_t key, uint64_t version, size_t i) {
    uint64_t h = (version * 0x9E3779B97F4A7C15ULL) ^ ((uint64_t)key << 17) ^ (i * 0x45D9F3B);
    return (unsigned char)(h ^ (h >> 29) ^ (h >> 41));
}

static int key_str(char *buf, uint32_t key) {
    return sprintf(buf, "http://torture/page/%u?x", key);
}

/* Verify an entry returned for key: meta, key bytes, body (every 7th byte
 * and the last). */
static void verify(const txc_entry *e, uint32_t key) {
    char kb[64];
    int kl = key_str(kb, key);
    size_t len;
    const void *k = txc_entry_key(e, &len);
    if (len != (size_t)kl || memcmp(k, kb, len) != 0) {
        fail("lookup returned another key's entry", key, 0);
        return;
    }
    const struct meta *m = txc_entry_meta(e, &len);
    if (len != sizeof *m || !m || m->key != key) {
        fail("meta torn or wrong", key, 0);
        return;
    }
    const unsigned char *b = txc_entry_body(e, &len);
    if (len != m->len) {
        fail("body length differs from the meta's", key, m->version);
        return;
    }
    for (size_t i = 0; i < len; i += 7)
        if (b[i] != body_byte(key, m->version, i)) {
            fail("body bytes changed (freed or torn)", key, m->version);
            return;
        }
    if (len && b[len - 1] != body_byte(key, m->version, len - 1))
        fail("last body byte changed", key, m->version);
}

struct worker {
    pthread_t th;
    int id;
    uint64_t rng;
    uint64_t ops, hits, inserts, removes;
    txc_entry *held[HELD];
    uint32_t held_key[HELD];
};

static void do_insert(struct worker *w, uint32_t key) {
    char kb[64];
    int kl = key_str(kb, key);
    uint64_t version = ((uint64_t)w->id << 40) | ++w->inserts;
    struct meta m = {key, (uint32_t)(1 + rnd(&w->rng) % MAX_BODY), version};
    int streamed = (rnd(&w->rng) & 3) == 0;
    int err = 0;
    txc_entry *e = txc_entry_new(g_cache, kb, (size_t)kl, streamed ? -1 : (int64_t)m.len, &err);
    if (!e) {
        fail("txc_entry_new failed", key, version);
        return;
    }
    if (txc_entry_set_meta(e, &m, sizeof m) != 0) {
        fail("set_meta failed", key, version);
        txc_entry_abandon(e);
        return;
    }
    unsigned char buf[1024];
    size_t off = 0;
    while (off < m.len) {
        size_t n = m.len - off;
        if (n > sizeof buf)
            n = sizeof buf;
        if (streamed && n > 300)
            n = 300 + rnd(&w->rng) % (n - 300 + 1);
        for (size_t i = 0; i < n; i++)
            buf[i] = body_byte(key, version, off + i);
        if (txc_entry_append(e, buf, n) != 0) {
            fail("append failed", key, version);
            txc_entry_abandon(e);
            return;
        }
        off += n;
    }
    /* sometimes keep a reference across the publication */
    txc_entry *keep = (rnd(&w->rng) & 7) == 0 ? txc_entry_ref(e) : NULL;
    int r = txc_insert(g_cache, e);
    if (r != 0)
        fail("txc_insert failed", key, version);
    if (keep) {
        verify(keep, key);
        txc_entry_release(keep);
    }
}

static void *worker_main(void *arg) {
    struct worker *w = arg;
    while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
        uint64_t r = rnd(&w->rng);
        /* skewed keys: a few hot ones, so threads share entries */
        uint32_t key = (uint32_t)(r % 4 == 0 ? (r >> 8) % g_keys : (r >> 8) % 6);
        unsigned op = (unsigned)((r >> 40) % 100);
        char kb[64];
        int kl = key_str(kb, key);
        if (op < 55) {
            txc_entry *e = txc_lookup(g_cache, kb, (size_t)kl);
            if (e) {
                w->hits++;
                verify(e, key);
                int slot = (int)((r >> 50) % HELD);
                if (w->held[slot]) { /* check again what was held a while */
                    verify(w->held[slot], w->held_key[slot]);
                    txc_entry_release(w->held[slot]);
                }
                w->held[slot] = e;
                w->held_key[slot] = key;
            }
        } else if (op < 80) {
            do_insert(w, key);
        } else if (op < 88) {
            int rc = txc_remove(g_cache, kb, (size_t)kl);
            if (rc != 0 && rc != -ENOENT)
                fail("txc_remove returned an unexpected value", key, 0);
            w->removes += rc == 0;
        } else if (op < 94) {
            int slot = (int)((r >> 50) % HELD);
            if (w->held[slot]) { /* a second reference, released at once */
                txc_entry *e2 = txc_entry_ref(w->held[slot]);
                verify(e2, w->held_key[slot]);
                txc_entry_release(e2);
            }
        } else if (op < 99) {
            int slot = (int)((r >> 50) % HELD);
            if (w->held[slot]) {
                verify(w->held[slot], w->held_key[slot]);
                txc_entry_release(w->held[slot]);
                w->held[slot] = NULL;
            }
        } else {
            struct txc_stats st;
            txc_stats_get(g_cache, &st);
            if (st.objects > MAX_OBJECTS || st.bytes > MAX_BYTES)
                fail("limit exceeded", 0, st.objects);
        }
        w->ops++;
    }
    for (int i = 0; i < HELD; i++)
        if (w->held[i]) {
            verify(w->held[i], w->held_key[i]);
            txc_entry_release(w->held[i]);
            w->held[i] = NULL;
        }
    return NULL;
}

static const char *itm_runtime(void) {
    void *sym = dlsym(RTLD_DEFAULT, "_ITM_beginTransaction");
    Dl_info info;
    if (!sym || !dladdr(sym, &info) || !info.dli_fname)
        return "none";
    void *tk = dlsym(RTLD_DEFAULT, "txkit_version");
    Dl_info tki;
    if (tk && dladdr(tk, &tki) && tki.dli_fbase == info.dli_fbase)
        return "txkit";
    return strstr(info.dli_fname, "libitm") ? "libitm" : info.dli_fname;
}

int main(int argc, char **argv) {
    txc_sync_t sync = TXC_SYNC_LOCK;
    txc_policy_t policy = TXC_POLICY_GDSF;
    int nthreads = 4;
    double seconds = 2;
    const char *expect = NULL;
    unsigned slots = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "%s: missing value\n", a);
            return 2;
        }
        i++;
        if (strcmp(a, "--sync") == 0) {
            if (txc_sync_parse(v, &sync) != 0) {
                fprintf(stderr, "--sync: unknown mode '%s'\n", v);
                return 2;
            }
        } else if (strcmp(a, "--policy") == 0) {
            if (txc_policy_parse(v, &policy) != 0) {
                fprintf(stderr, "--policy: unknown policy '%s'\n", v);
                return 2;
            }
        } else if (strcmp(a, "--threads") == 0) {
            nthreads = atoi(v);
            if (nthreads < 1 || nthreads > MAX_THREADS) {
                fprintf(stderr, "--threads: 1..%d\n", MAX_THREADS);
                return 2;
            }
        } else if (strcmp(a, "--seconds") == 0) {
            seconds = atof(v);
        } else if (strcmp(a, "--keys") == 0) {
            g_keys = atoi(v);
            if (g_keys < 6) {
                fprintf(stderr, "--keys: at least 6\n");
                return 2;
            }
        } else if (strcmp(a, "--slots") == 0) {
            slots = (unsigned)atoi(v);
        } else if (strcmp(a, "--expect-runtime") == 0) {
            expect = v;
        } else {
            fprintf(stderr, "unknown option %s\n", a);
            return 2;
        }
    }
    struct txc_config cfg;
    txc_config_default(&cfg);
    cfg.max_objects = MAX_OBJECTS;
    cfg.max_bytes = MAX_BYTES;
    cfg.max_object_size = MAX_BODY;
    cfg.policy = policy;
    cfg.sync = sync;
    cfg.buckets = 16; /* long chains: more sharing between operations */
    cfg.slots = slots;
    char err[256];
    if (txc_config_check(&cfg, err, sizeof err) != 0) {
        printf("skipped: %s\n", err);
        return 77;
    }
    const char *rt = itm_runtime();
    if (sync == TXC_SYNC_TX && expect && strcmp(rt, expect) != 0) {
        fprintf(stderr, "FAIL: gcc transactions bind to %s, expected %s\n", rt, expect);
        return 1;
    }
    g_cache = txc_create(&cfg, err, sizeof err);
    if (!g_cache) {
        fprintf(stderr, "FAIL: txc_create: %s\n", err);
        return 1;
    }
    seconds = tk_stress_seconds(seconds);
    uint64_t seed = tk_stress_seed("test_txcache_torture");
    tx_stats_t s0, s1;
    tx_stats_get(&s0);
    static struct worker w[MAX_THREADS];
    for (int i = 0; i < nthreads; i++) {
        w[i].id = i + 1;
        w[i].rng = 0x9E3779B97F4A7C15ULL * (uint64_t)(i + 1) + seed;
        if (pthread_create(&w[i].th, NULL, worker_main, &w[i]) != 0) {
            fprintf(stderr, "FAIL: pthread_create\n");
            return 1;
        }
    }
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    nanosleep(&ts, NULL);
    atomic_store(&g_stop, 1);
    uint64_t ops = 0, hits = 0, ins = 0, rem = 0;
    for (int i = 0; i < nthreads; i++) {
        pthread_join(w[i].th, NULL);
        ops += w[i].ops;
        hits += w[i].hits;
        ins += w[i].inserts;
        rem += w[i].removes;
    }
    tx_stats_get(&s1);
    int bad = 0;
    if (txc_check(g_cache, err, sizeof err) != 0) {
        fprintf(stderr, "FAIL: txc_check: %s\n", err);
        bad = 1;
    }
    struct txc_stats st;
    txc_stats_get(g_cache, &st);
    if (st.objects > MAX_OBJECTS || st.bytes > MAX_BYTES) {
        fprintf(stderr, "FAIL: limits exceeded at the end\n");
        bad = 1;
    }
    if (st.live_entries != st.objects) {
        fprintf(stderr, "FAIL: %llu live entries for %llu cached, no reference held\n",
                (unsigned long long)st.live_entries, (unsigned long long)st.objects);
        bad = 1;
    }
    if (st.hits != hits || st.inserts + st.rejected != ins || st.removals != rem) {
        fprintf(stderr,
                "FAIL: statistics disagree with the threads' counts (hits %llu/%llu, "
                "inserts %llu+%llu/%llu, removals %llu/%llu)\n",
                (unsigned long long)st.hits, (unsigned long long)hits,
                (unsigned long long)st.inserts, (unsigned long long)st.rejected,
                (unsigned long long)ins, (unsigned long long)st.removals, (unsigned long long)rem);
        bad = 1;
    }
    if (st.evictions == 0 || st.hits == 0) {
        fprintf(stderr, "FAIL: the run did not exercise evictions and hits\n");
        bad = 1;
    }
    txc_destroy(g_cache);
    if (txc_live_entries_all() != 0) {
        fprintf(stderr, "FAIL: %llu entries not freed after destroy\n",
                (unsigned long long)txc_live_entries_all());
        bad = 1;
    }
    unsigned long nb = atomic_load(&g_bad);
    printf("sync %s (runtime %s, TXKIT_METHOD=%s) policy %s threads %d: %llu ops, %llu hits, "
           "%llu inserts, %llu evictions, %llu removals; txkit commits %llu aborts %llu; %lu "
           "failures\n",
           txc_sync_name(sync), rt, getenv("TXKIT_METHOD") ? getenv("TXKIT_METHOD") : "-",
           txc_policy_name(policy), nthreads, (unsigned long long)ops, (unsigned long long)hits,
           (unsigned long long)st.inserts, (unsigned long long)st.evictions,
           (unsigned long long)st.removals,
           (unsigned long long)(tx_stats_commits(&s1) - tx_stats_commits(&s0)),
           (unsigned long long)(tx_stats_aborts(&s1) - tx_stats_aborts(&s0)), nb);
    return bad || nb ? 1 : 0;
}
