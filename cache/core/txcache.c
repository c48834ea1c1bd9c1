/* SPDX-License-Identifier: MIT */
/* txcache.c - configuration, entry builders and memory of the cache core.
 * Nothing here touches shared structure: see txcache_core.c for that. */
#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "txcache_int.h"

/* txcache_int.h: a lookup's fields on the header's first line, apart from
 * what the heap's sifts write */
_Static_assert(offsetof(struct txc_entry, next) + sizeof(void *) <= TXC_LINE &&
                   offsetof(struct txc_entry, heap_pos) >= TXC_LINE,
               "txc_entry: the first line is a lookup's");

void txc_config_default(struct txc_config *c) {
    memset(c, 0, sizeof *c);
    c->max_objects = 1000;
    c->max_bytes = 100ull << 20;
    c->min_object_size = 1;
    c->max_object_size = 1ull << 20;
    c->policy = TXC_POLICY_GDSF;
    c->sync = TXC_SYNC_LOCK;
    c->buckets = 0;
}

__attribute__((format(printf, 3, 4))) static int bad(char *err, size_t errlen, const char *fmt,
                                                     ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}

int txc_config_check(const struct txc_config *c, char *err, size_t errlen) {
    if (!c)
        return bad(err, errlen, "no configuration");
    if ((unsigned)c->policy > TXC_POLICY_GDSF)
        return bad(err, errlen, "policy must be LRU or GDSF (got %d)", (int)c->policy);
    if ((unsigned)c->sync > TXC_SYNC_RWLOCK)
        return bad(err, errlen, "sync must be lock, tx, cx or rwlock (got %d)", (int)c->sync);
#ifndef TXC_HAVE_GNU_TM
    if (c->sync == TXC_SYNC_TX)
        return bad(err, errlen, "sync tx is not available: txcache was built without gcc -fgnu-tm");
#endif
    if (c->max_object_size == 0)
        return bad(err, errlen, "max_object_size must be > 0");
    if (c->max_object_size < c->min_object_size)
        return bad(err, errlen, "max_object_size must be >= min_object_size (%llu < %llu)",
                   (unsigned long long)c->max_object_size, (unsigned long long)c->min_object_size);
    if (c->max_bytes && c->max_object_size > c->max_bytes)
        return bad(err, errlen, "max_object_size must be <= max_bytes (%llu > %llu)",
                   (unsigned long long)c->max_object_size, (unsigned long long)c->max_bytes);
    if (c->max_object_size > (UINT64_MAX >> 2))
        return bad(err, errlen, "max_object_size is too large");
    if (c->buckets > (1u << 24))
        return bad(err, errlen, "buckets must be <= %u (got %u)", 1u << 24, c->buckets);
    if (c->slots > TXC_SLOTS_MAX)
        return bad(err, errlen, "slots must be <= %d (got %u)", TXC_SLOTS_MAX, c->slots);
    return 0;
}

const char *txc_sync_name(txc_sync_t s) {
    switch (s) {
    case TXC_SYNC_LOCK:
        return "lock";
    case TXC_SYNC_TX:
        return "tx";
    case TXC_SYNC_CX:
        return "cx";
    case TXC_SYNC_RWLOCK:
        return "rwlock";
    }
    return "?";
}

int txc_sync_parse(const char *s, txc_sync_t *out) {
    static const txc_sync_t all[] = {TXC_SYNC_LOCK, TXC_SYNC_TX, TXC_SYNC_CX, TXC_SYNC_RWLOCK};
    for (size_t i = 0; s && i < sizeof all / sizeof all[0]; i++)
        if (strcasecmp(s, txc_sync_name(all[i])) == 0) {
            *out = all[i];
            return 0;
        }
    return -EINVAL;
}

const char *txc_policy_name(txc_policy_t p) {
    return p == TXC_POLICY_LRU ? "LRU" : p == TXC_POLICY_GDSF ? "GDSF" : "?";
}

int txc_policy_parse(const char *s, txc_policy_t *out) {
    if (s && strcasecmp(s, "LRU") == 0)
        *out = TXC_POLICY_LRU;
    else if (s && strcasecmp(s, "GDSF") == 0)
        *out = TXC_POLICY_GDSF;
    else
        return -EINVAL;
    return 0;
}

/* ------------------------------------------------------------ thread slots */

static unsigned next_thread;
static __thread unsigned my_thread_plus1;

unsigned txc_my_slot(const txc_cache *c) {
    /* the CPU (glibc reads it from rseq: no system call) */
    int cpu = sched_getcpu();
    if (__builtin_expect(cpu < 0, 0)) { /* no getcpu: one slot per thread */
        if (!my_thread_plus1)
            my_thread_plus1 = __atomic_add_fetch(&next_thread, 1, __ATOMIC_RELAXED);
        cpu = (int)my_thread_plus1;
    }
    return (unsigned)cpu & (c->nslots - 1);
}

static __thread uint64_t last_stamp;

uint64_t txc_stamp(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    /* strictly increasing per thread, so one thread's accesses are ordered */
    if (now <= last_stamp)
        now = last_stamp + 1;
    last_stamp = now;
    return now;
}

/* ------------------------------------------------------------------ memory */

static uint64_t live_all; /* entries of every cache, not yet freed */

/* Per-thread records that outlive their threads (the pools of payload
 * buffers, the read-side epoch records): a push-only list of blocks, each
 * claimed by one live thread at a time and left on the list for the next
 * thread when its own exits, so that other threads may keep pointers to
 * it. A record embeds a struct txc_claim. */
struct txc_claim {
    int in_use;             /* claimed by a live thread (CAS; released by its exit) */
    struct txc_claim *next; /* immutable once pushed */
};

/* A record of size bytes whose claim is at offset off: one on the list at
 * *head that no live thread holds, else a new one (line-aligned, zeroed)
 * pushed on it; claimed for the calling thread. NULL without memory. Any
 * thread. */
static void *record_claim(struct txc_claim **head, size_t size, size_t off) {
    for (struct txc_claim *c = __atomic_load_n(head, __ATOMIC_ACQUIRE); c; c = c->next) {
        int zero = 0;
        if (!__atomic_load_n(&c->in_use, __ATOMIC_RELAXED) &&
            __atomic_compare_exchange_n(&c->in_use, &zero, 1, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED))
            return (char *)c - off;
    }
    void *r;
    if (posix_memalign(&r, TXC_LINE, size) != 0)
        return NULL;
    memset(r, 0, size);
    struct txc_claim *c = (struct txc_claim *)((char *)r + off);
    c->in_use = 1;
    c->next = __atomic_load_n(head, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(head, &c->next, c, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
        ;
    return r;
}

/* The calling thread's record goes back to the list (its last access). */
static void record_release(struct txc_claim *c) {
    __atomic_store_n(&c->in_use, 0, __ATOMIC_RELEASE);
}

/* Payload buffers. A payload is large (an HTTP response: kilobytes), beyond
 * malloc's per-thread caches, so every malloc and free of one takes an arena
 * lock, and freeing one that another thread built takes that thread's arena
 * lock: two threads that miss at once wait for each other inside glibc (perf,
 * cache benchmark at s = 1, 2 threads: 13% of the time in futex waits and
 * wakes from malloc's locks, 9% in malloc itself). So each thread keeps up to
 * POOL_KEEP freed buffers of each power-of-two size from 4 KB to 128 KB, at
 * most POOL_BYTES in all, and reuses them. (With 4 of each and no byte bound,
 * the same worst case of about 1 MB a thread, the pool missed 13% of the
 * allocations at 1 and at 2 threads: the classes' allocations and frees come
 * in random order; with 16 of each and 1 MB, 1% and 4%: the misses left are
 * a thread freeing more than it allocates. A miss at 2 threads costs page
 * faults too: glibc gives the second thread's arena's free memory back to the
 * system.) Under AddressSanitizer a pooled buffer is poisoned, so a use
 * after its release is still caught. */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POOL_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define POOL_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define POOL_POISON(p, n) ((void)(p), (void)(n))
#define POOL_UNPOISON(p, n) ((void)(p), (void)(n))
#endif
#define POOL_MIN 12 /* log2 of the smallest class, 4 KB */
#define POOL_MAX 17 /* ... and of the largest, 128 KB */
#define POOL_CLASSES (POOL_MAX - POOL_MIN + 1)
#define POOL_KEEP 16
#define POOL_BYTES ((size_t)1 << 20)
/* A buffer goes back to the pool of the thread that took it (its home), not
 * to the pool of whoever frees it. A miss copies a body into the buffer it
 * gets; an entry the other thread built and filled a moment ago (at s = 1
 * most entries stored are unpopular and evicted again soon) still has its
 * lines in that thread's CPU cache, modified, so a buffer passed across
 * threads made the copy fetch every line from the other core: the body copy
 * took 1.6x as long per operation at 2 threads as at 1 (perf, cache
 * benchmark, s = 1). A free by another thread pushes the buffer on its
 * home's return stack (one CAS), which the home takes whole (one exchange)
 * when its own classes run dry. Pools are records that outlive their
 * threads: an exiting thread frees what its pool holds and leaves the record
 * to the next thread that claims it, so a buffer's home is always valid. */
struct pool {
    /* owner thread only */
    void *buf[POOL_CLASSES][POOL_KEEP];
    unsigned n[POOL_CLASSES];
    size_t bytes; /* of all the buffers kept in buf */
    /* other threads give buffers back here: a stack linked through the
     * payloads' back_next (atomic head; pushed by anyone, taken whole by the
     * owner), back_bytes its size in bytes (atomic, a bound, not exact) */
    struct txc_payload *back __attribute__((aligned(TXC_LINE)));
    uint64_t back_bytes;
    struct txc_claim claim __attribute__((aligned(TXC_LINE))); /* on g_pools */
};
static struct txc_claim *g_pools; /* the pools (record_claim) */
static __thread struct pool *my_pool;
static pthread_key_t pool_key; /* its destructor empties an exiting thread's pool */
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

static size_t pool_size(int k) { return (size_t)1 << (k + POOL_MIN); }

/* Free a list of returned buffers (linked through back_next). */
static void pool_free_list(struct txc_payload *pl) {
    while (pl) {
        struct txc_payload *n = pl->back_next;
        POOL_UNPOISON(pl, sizeof *pl + pl->cap);
        free(pl);
        pl = n;
    }
}

static void pool_drain(void *arg) {
    struct pool *p = arg;
    for (int k = 0; k < POOL_CLASSES; k++)
        while (p->n[k]) {
            void *b = p->buf[k][--p->n[k]];
            POOL_UNPOISON(b, pool_size(k));
            free(b);
        }
    p->bytes = 0;
    /* buffers given back after this wait for the record's next owner */
    struct txc_payload *back = __atomic_exchange_n(&p->back, NULL, __ATOMIC_ACQUIRE);
    __atomic_store_n(&p->back_bytes, 0, __ATOMIC_RELAXED);
    pool_free_list(back);
    if (my_pool == p)
        my_pool = NULL;
    record_release(&p->claim);
}
static void pool_init(void) { (void)pthread_key_create(&pool_key, pool_drain); }

/* This thread's pool, claimed or made on first use; NULL without memory. */
static struct pool *pool_get(void) {
    struct pool *p = my_pool;
    if (__builtin_expect(p != NULL, 1))
        return p;
    if (pthread_once(&pool_once, pool_init) != 0 ||
        !(p = record_claim(&g_pools, sizeof *p, offsetof(struct pool, claim))))
        return NULL;
    if (pthread_setspecific(pool_key, p) != 0) { /* no destructor: do not keep one */
        record_release(&p->claim);
        return NULL;
    }
    my_pool = p;
    return p;
}

/* The class (log2 - POOL_MIN) of a block of size bytes, -1 when none. */
static int pool_class(size_t size) {
    if (size > ((size_t)1 << POOL_MAX))
        return -1;
    int k = size <= ((size_t)1 << POOL_MIN) ? POOL_MIN : 64 - __builtin_clzll(size - 1);
    return k - POOL_MIN;
}

/* Keep pl (of class k) in the owner's pool p, or free it when p is full. */
static void pool_keep(struct pool *p, int k, struct txc_payload *pl) {
    size_t size = pool_size(k);
    if (p->n[k] == POOL_KEEP || p->bytes + size > POOL_BYTES) {
        free(pl);
        return;
    }
    POOL_POISON(pl, size);
    p->bytes += size;
    p->buf[k][p->n[k]++] = pl;
}

/* The owner takes back what other threads returned to p. */
static void pool_take_back(struct pool *p) {
    struct txc_payload *pl = __atomic_exchange_n(&p->back, NULL, __ATOMIC_ACQUIRE);
    while (pl) {
        struct txc_payload *n = pl->back_next;
        size_t size = sizeof *pl + pl->cap;
        POOL_UNPOISON(pl, size);
        __atomic_sub_fetch(&p->back_bytes, size, __ATOMIC_RELAXED);
        pool_keep(p, pool_class(size), pl);
        pl = n;
    }
}

/* A payload with room for at least cap bytes of body (*cap: all it has). */
static struct txc_payload *payload_alloc(size_t *cap) {
    int k = pool_class(sizeof(struct txc_payload) + *cap);
    struct pool *p = k < 0 ? NULL : pool_get();
    struct txc_payload *pl;
    if (!p) {
        if ((pl = malloc(sizeof *pl + *cap)) != NULL)
            pl->home = NULL;
        return pl;
    }
    size_t size = pool_size(k);
    *cap = size - sizeof *pl;
    if (!p->n[k] && __atomic_load_n(&p->back, __ATOMIC_RELAXED))
        pool_take_back(p);
    if (p->n[k]) {
        pl = p->buf[k][--p->n[k]];
        p->bytes -= size;
        POOL_UNPOISON(pl, size);
    } else if (!(pl = malloc(size))) {
        return NULL;
    }
    pl->home = p;
    return pl;
}

static void payload_release(struct txc_payload *pl) {
    size_t size = sizeof *pl + pl->cap;
    int k = pool_class(size);
    struct pool *home = pl->home;
    if (!home || k < 0 || size != pool_size(k)) { /* not a pool's (grown by realloc) */
        free(pl);
        return;
    }
    if (home == my_pool) {
        pool_keep(home, k, pl);
        return;
    }
    /* another thread's: back to it, unless it has enough waiting already */
    if (__atomic_add_fetch(&home->back_bytes, size, __ATOMIC_RELAXED) > POOL_BYTES) {
        __atomic_sub_fetch(&home->back_bytes, size, __ATOMIC_RELAXED);
        free(pl);
        return;
    }
    pl->back_next = __atomic_load_n(&home->back, __ATOMIC_RELAXED);
    POOL_POISON(pl->body, pl->cap);
    while (!__atomic_compare_exchange_n(&home->back, &pl->back_next, pl, 1, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED))
        ;
}

uint64_t txc_live_entries_all(void) {
    /* exact without a reclaim: an entry counts until its payload is freed,
     * at its last reference (entry_last_ref) */
    return __atomic_load_n(&live_all, __ATOMIC_RELAXED);
}

static void cache_unref(txc_cache *c) {
    if (__atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        pthread_mutex_destroy(&c->mu);
        cx_destroy(&c->cx);
        free(c);
    }
}

void txc_payload_free(void *arg) {
    struct txc_payload *pl = arg;
    txc_cache *c = pl->cache;
    free(pl->meta);
    payload_release(pl);
    __atomic_sub_fetch(&live_all, 1, __ATOMIC_RELAXED);
    cache_unref(c);
}

void txc_entry_free_now(txc_entry *e) {
    struct txc_payload *pl = e->pl;
    free(e->block);
    txc_payload_free(pl);
}

static void header_retire(txc_entry *e); /* below */

/* The last reference to e went: its payload is freed now (only reference
 * holders read it), and its header too unless readers may still hold it
 * without a reference (an entry published in a tx or cx cache): then after a
 * grace period. */
static void entry_last_ref(txc_entry *e) {
    if (!e->shared) {
        txc_entry_free_now(e);
        return;
    }
    struct txc_payload *pl = e->pl;
    txc_payload_free(pl);
    header_retire(e); /* last: the header may be freed in there */
}

/* An entry header of size bytes, line-aligned (its slots are cache lines),
 * its first zero bytes cleared, e->block set. From malloc, not posix_memalign: a header is a few hundred
 * bytes, which glibc serves from the thread's own cache (tcache) without a
 * lock, where posix_memalign took the arena lock on every miss and freeing a
 * header that another thread built took that thread's arena lock (perf, cache
 * benchmark at s = 1, 2 threads: 5% of the time in posix_memalign, 2% waiting
 * for arena locks). */
static txc_entry *header_alloc(size_t size, size_t zero) {
    void *b = malloc(size + TXC_LINE - 1);
    if (!b)
        return NULL;
    txc_entry *e = (txc_entry *)(((uintptr_t)b + TXC_LINE - 1) & ~(uintptr_t)(TXC_LINE - 1));
    memset(e, 0, zero);
    e->block = b;
    return e;
}

/* ------------------------------------------------------ read-side epochs */

/* Epoch-based reclamation of entry headers for the tx and cx modes, one
 * domain for every cache of the process. A thread announces the global epoch
 * in its record while it may hold a pointer to an entry found without a
 * reference (txc_rd_enter .. txc_rd_exit). A header whose entry lost its last
 * reference (after the cache let it go: no lookup can reach it any more) is
 * retired: tagged with the epoch after the current one and kept on the
 * retiring thread's record. Every TXC_RETIRE_BATCH of them, or in
 * txc_reclaim, the thread moves its retired headers to the domain's limbo,
 * increments the epoch (a section that announces the new value or a later
 * one began after the increment, so after those entries left the cache),
 * and frees every header in the limbo whose tag no running section's
 * announced epoch is below. So the domain's lock, the increment and the scan
 * of the records, which makes each announcing thread fetch its record's line
 * back at its next section, come once per batch, not at every eviction; the
 * payloads, which are what a miss reuses (txcache.c's pools), are freed at
 * once (entry_last_ref). (Freeing whole entries a batch of 32 evictions late
 * cost 10% at s = 1, 2 threads: the pools then handed out buffers long gone
 * from the CPU's cache.) */
#define TXC_RETIRE_BATCH 8
struct txc_rec {
    uint64_t epoch;         /* 0: quiescent; else the global epoch at entry. Owner writes */
    unsigned depth;         /* owner only */
    struct txc_claim claim; /* on g_recs */
    txc_entry *retired;     /* owner only: headers retired, not yet in the limbo */
    unsigned nretired;      /* owner only: how many */
} __attribute__((aligned(TXC_LINE)));

static uint64_t g_epoch = 1;     /* atomic */
static struct txc_claim *g_recs; /* the records (record_claim) */
static pthread_mutex_t g_limbo_mu = PTHREAD_MUTEX_INITIALIZER;
static txc_entry *g_limbo; /* under g_limbo_mu, headers linked by dead_next */
/* Under g_limbo_mu: no header in the limbo has a smaller tag (UINT64_MAX when
 * empty). While a reader that announces an older epoch is descheduled inside
 * its section the limbo only grows; a reclaim that finds the oldest reader
 * below this frees nothing and does not walk it (each header a cache miss:
 * walking a limbo of hundreds at every batch cost 10% of the cache
 * benchmark's time at s = 1, 2 threads, on a loaded machine). */
static uint64_t g_limbo_min = UINT64_MAX;
static uint64_t g_limbo_visits; /* under g_limbo_mu: txc_limbo_visits */

/* Under g_limbo_mu: e goes to the limbo. */
static void limbo_push_locked(txc_entry *e) {
    e->dead_next = g_limbo;
    g_limbo = e;
    if (e->retired < g_limbo_min)
        g_limbo_min = e->retired;
}
static pthread_key_t g_rec_key;
static pthread_once_t g_rec_once = PTHREAD_ONCE_INIT;
static __thread struct txc_rec *my_rec;

/* Under g_limbo_mu: r's retired headers go to the limbo. */
static void limbo_add_locked(struct txc_rec *r) {
    while (r->retired) {
        txc_entry *e = r->retired;
        r->retired = e->dead_next;
        limbo_push_locked(e);
    }
    r->nretired = 0;
}

static void rec_release(void *arg) {
    struct txc_rec *r = arg;
    __atomic_store_n(&r->epoch, 0, __ATOMIC_RELEASE);
    if (r->retired) { /* freed by the next thread that reclaims */
        pthread_mutex_lock(&g_limbo_mu);
        limbo_add_locked(r);
        pthread_mutex_unlock(&g_limbo_mu);
    }
    record_release(&r->claim);
}

static void rec_key_init(void) { (void)pthread_key_create(&g_rec_key, rec_release); }

static struct txc_rec *rec_get(void) {
    struct txc_rec *r = my_rec;
    if (__builtin_expect(r != NULL, 1))
        return r;
    pthread_once(&g_rec_once, rec_key_init);
    if (!(r = record_claim(&g_recs, sizeof *r, offsetof(struct txc_rec, claim))))
        return NULL; /* txc_rd_enter falls back to the domain lock */
    r->depth = 0;
    r->epoch = 0;
    r->retired = NULL; /* a record is released only with its list moved to the limbo */
    r->nretired = 0;
    (void)pthread_setspecific(g_rec_key, r);
    my_rec = r;
    return r;
}

/* Without a record (out of memory) a thread cannot announce itself: it takes
 * the domain lock instead, which excludes reclamation for its section. */
static __thread int rd_locked;

void txc_rd_enter(void) {
    struct txc_rec *r = rec_get();
    if (__builtin_expect(!r, 0)) {
        if (rd_locked++ == 0)
            pthread_mutex_lock(&g_limbo_mu);
        return;
    }
    if (r->depth++ == 0) {
        /* store, then a full fence before the section's loads (Dekker with
         * the reclaimer's increment of g_epoch then load of the records) */
        (void)__atomic_exchange_n(&r->epoch, __atomic_load_n(&g_epoch, __ATOMIC_RELAXED),
                                  __ATOMIC_SEQ_CST); /* xchg: a full fence */
    }
}

void txc_rd_exit(void) {
    struct txc_rec *r = my_rec;
    if (__builtin_expect(!r, 0)) {
        if (--rd_locked == 0)
            pthread_mutex_unlock(&g_limbo_mu);
        return;
    }
    if (--r->depth == 0)
        __atomic_store_n(&r->epoch, 0, __ATOMIC_RELEASE);
}

/* The oldest epoch a thread announces now, or UINT64_MAX. */
static uint64_t oldest_reader(void) {
    uint64_t m = UINT64_MAX;
    for (struct txc_claim *c = __atomic_load_n(&g_recs, __ATOMIC_ACQUIRE); c; c = c->next) {
        const struct txc_rec *r =
            (const struct txc_rec *)((const char *)c - offsetof(struct txc_rec, claim));
        uint64_t e = __atomic_load_n(&r->epoch, __ATOMIC_ACQUIRE);
        if (e && e < m)
            m = e;
    }
    return m;
}

/* Under g_limbo_mu: a new epoch, then unlink from the limbo what no reader
 * can still see; *left: whether headers tagged upto or before stay. */
static txc_entry *limbo_take_locked(uint64_t upto, int *left) {
    (void)__atomic_add_fetch(&g_epoch, 1, __ATOMIC_SEQ_CST); /* then the records */
    uint64_t m = oldest_reader(), min = UINT64_MAX;
    txc_entry *out = NULL, **pp = &g_limbo;
    if (m < g_limbo_min) { /* nothing is due: no walk */
        *left = g_limbo_min <= upto;
        return NULL;
    }
    *left = 0;
    while (*pp) {
        txc_entry *e = *pp;
        g_limbo_visits++;
        if (e->retired <= m) {
            *pp = e->dead_next;
            e->dead_next = out;
            out = e;
        } else {
            *left |= e->retired <= upto;
            if (e->retired < min)
                min = e->retired;
            pp = &e->dead_next;
        }
    }
    g_limbo_min = min;
    return out;
}

static void headers_free(txc_entry *e) {
    while (e) {
        txc_entry *n = e->dead_next;
        free(e->block);
        e = n;
    }
}

/* Move this thread's retired headers to the limbo and free what is due;
 * wait: until those tagged upto or before are freed. Outside read-side
 * sections (inside one, its own announcement keeps what it may see). */
static void limbo_reclaim(uint64_t upto, int wait) {
    struct txc_rec *r = my_rec;
    for (;;) {
        int left;
        pthread_mutex_lock(&g_limbo_mu);
        if (r)
            limbo_add_locked(r);
        txc_entry *done = limbo_take_locked(upto, &left);
        pthread_mutex_unlock(&g_limbo_mu);
        headers_free(done);
        if (!wait || !left)
            return;
        sched_yield(); /* sections are short: a grace period is a few yields */
    }
}

/* e's header, of an entry that left the cache and lost its last reference:
 * freed after a grace period. Any thread, outside read-side sections. */
static void header_retire(txc_entry *e) {
    /* a section that announces this tag or a later one loaded g_epoch after
     * an increment that followed this load, so after e left the cache */
    e->retired = __atomic_load_n(&g_epoch, __ATOMIC_SEQ_CST) + 1;
    struct txc_rec *r = rec_get();
    if (__builtin_expect(!r, 0)) { /* no record (out of memory): straight to the limbo */
        if (!rd_locked)
            pthread_mutex_lock(&g_limbo_mu);
        limbo_push_locked(e);
        if (!rd_locked)
            pthread_mutex_unlock(&g_limbo_mu);
        return;
    }
    e->dead_next = r->retired;
    r->retired = e;
    if (++r->nretired >= TXC_RETIRE_BATCH && r->depth == 0)
        limbo_reclaim(0, 0);
}

/* ------------------------------------------------------------- references */

/* While an entry is cached in tx or cx mode it counts references per CPU:
 * a lookup adds 1 to acq in its CPU's slot, a release adds 1 to rel (the
 * slot of the releasing CPU), each a CAS on a line no other CPU writes, so
 * hits never bounce a shared line; refs holds TXC_BIAS for the cache's own
 * reference. Sums are exact only when nobody counts, so zero is never looked
 * for while cached. When the cache lets the entry go (txc_let_go, after the
 * section that unlinked it), fold() takes every slot with an exchange that
 * leaves TXC_FOLDED in it and adds acq - rel, minus the bias, to refs. A
 * count adds to its slot with a CAS unless it finds TXC_FOLDED there, so each
 * one lands before the exchange (folded) or after it: a release then counts
 * in refs instead; a lookup, whose section found the entry before it left,
 * takes no reference and looks again. From the fold on refs is the exact
 * count, and the release that takes it to 0 frees the payload and retires
 * the header (entry_last_ref: lookups that found the entry may still read
 * it, never the payload). An entry that never counted per CPU (a builder's,
 * never published) has TXC_FOLDED in its slots from the start. */
#define TXC_FOLDED UINT64_MAX

/* The references the slots hold (from publication to the fold). */
static int64_t slot_sum(const txc_entry *e) {
    uint64_t acq = 0, rel = 0;
    for (uint32_t s = 0; s < e->nslots; s++) {
        acq += __atomic_load_n(&e->slot[s].acq, __ATOMIC_RELAXED);
        rel += __atomic_load_n(&e->slot[s].rel, __ATOMIC_RELAXED);
    }
    return (int64_t)(acq - rel);
}

static int is_lock(const txc_entry *e) { return txc_legacy(e->cache); }

/* refs += delta in atomic mode; whoever takes it to 0 frees e (no lookup can
 * take a reference any more: see above). */
static void refs_add(txc_entry *e, uint64_t delta) {
    if (__atomic_add_fetch(&e->refs, delta, __ATOMIC_ACQ_REL) == 0)
        entry_last_ref(e);
}

/* *slot += 1 unless it is folded: false then. */
static inline int slot_add(uint64_t *slot) {
    uint64_t v = __atomic_load_n(slot, __ATOMIC_RELAXED);
    do {
        if (v == TXC_FOLDED)
            return 0;
    } while (!__atomic_compare_exchange_n(slot, &v, v + 1, 1, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED));
    return 1;
}

/* A new entry's slots: not counting per CPU yet (still private). */
static void ref_unpublished(txc_entry *e) {
    if (!is_lock(e))
        for (uint32_t s = 0; s < e->nslots; s++)
            e->slot[s].acq = e->slot[s].rel = TXC_FOLDED;
}

void txc_ref_publish(txc_entry *e) {
    if (!is_lock(e)) {
        /* the builder's reference becomes the cache's (in the bias); extra
         * ones the builder took stay counted in refs */
        e->refs += TXC_BIAS - 1;
        for (uint32_t s = 0; s < e->nslots; s++)
            e->slot[s].acq = e->slot[s].rel = 0;
        e->percpu = 1;
        e->shared = 1;
    }
}

int txc_ref_found(txc_entry *e, unsigned s) { return slot_add(&e->slot[s].acq); }

void txc_ref_get(txc_entry *e, unsigned s) {
    if (is_lock(e)) { /* atomic mode always; acq counts uses only (GDSF) */
        __atomic_fetch_add(&e->refs, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&e->slot[s].acq, 1, __ATOMIC_RELAXED);
        return;
    }
    /* the caller's reference keeps e: no epoch section */
    if (!slot_add(&e->slot[s].acq)) /* folded: the count is refs now */
        __atomic_fetch_add(&e->refs, 1, __ATOMIC_RELAXED);
}

void txc_ref_put(txc_entry *e, unsigned s) {
    /* (release: the holder's reads of the payload before the count that may
     * let the entry be freed) */
    if (is_lock(e) || !slot_add(&e->slot[s].rel))
        refs_add(e, (uint64_t)-1);
}

/* The cache let e go (its section unlinked it): every slot taken for good. */
static void fold(txc_entry *e) {
    uint64_t acq = 0, rel = 0;
    for (uint32_t s = 0; s < e->nslots; s++) {
        acq += __atomic_exchange_n(&e->slot[s].acq, TXC_FOLDED, __ATOMIC_ACQ_REL);
        rel += __atomic_exchange_n(&e->slot[s].rel, TXC_FOLDED, __ATOMIC_ACQ_REL);
    }
    refs_add(e, acq - rel - TXC_BIAS);
}

void txc_let_go(txc_entry *e) {
    if (!e->percpu) { /* lock mode, or a builder's entry never published */
        refs_add(e, (uint64_t)-1);
        return;
    }
    __atomic_store_n(&e->percpu, 0, __ATOMIC_RELAXED); /* (txc_ref_count) */
    fold(e);
}

int64_t txc_ref_count(const txc_entry *e) {
    int64_t r = (int64_t)__atomic_load_n(&e->refs, __ATOMIC_RELAXED);
    return e->percpu ? r - (int64_t)TXC_BIAS + 1 + slot_sum(e) : r;
}

uint64_t txc_limbo_visits(void) {
    pthread_mutex_lock(&g_limbo_mu);
    uint64_t n = g_limbo_visits;
    pthread_mutex_unlock(&g_limbo_mu);
    return n;
}

void txc_reclaim(int wait) {
    if (rd_locked || (my_rec && my_rec->depth))
        return;
    /* waiting: for what is retired now, not for what other threads retire
     * while this one waits */
    limbo_reclaim(__atomic_load_n(&g_epoch, __ATOMIC_SEQ_CST) + 1, wait);
}

/* ------------------------------------------------------- rwlock mode's lock */

/* glibc's pthread_rwlock sleeps in the kernel at every hand-over between
 * readers and a writer: with 13% stores (cache benchmark, s = 1, 2 threads)
 * it ran at 0.05-0.2x the plain mutex, no fair baseline. This one spins. */
#define TXC_RW_WRITER (1ull << 63)

static void rw_pause(unsigned *spins) {
    if (++*spins < 1000)
        __builtin_ia32_pause();
    else
        sched_yield(); /* the holder may be waiting for a CPU */
}

void txc_rw_rdlock(uint64_t *rw) {
    unsigned spins = 0;
    for (;;) {
        uint64_t v = __atomic_load_n(rw, __ATOMIC_RELAXED);
        if (!(v & TXC_RW_WRITER) &&
            __atomic_compare_exchange_n(rw, &v, v + 1, 1, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            return;
        rw_pause(&spins);
    }
}

void txc_rw_rdunlock(uint64_t *rw) { __atomic_fetch_sub(rw, 1, __ATOMIC_RELEASE); }

void txc_rw_wrlock(uint64_t *rw) {
    unsigned spins = 0;
    for (;;) { /* the writer bit first: no new reader from then on */
        uint64_t v = __atomic_load_n(rw, __ATOMIC_RELAXED);
        if (!(v & TXC_RW_WRITER) && __atomic_compare_exchange_n(rw, &v, v | TXC_RW_WRITER, 1,
                                                                __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            break;
        rw_pause(&spins);
    }
    while (__atomic_load_n(rw, __ATOMIC_ACQUIRE) != TXC_RW_WRITER) /* the readers leave */
        rw_pause(&spins);
}

void txc_rw_wrunlock(uint64_t *rw) { __atomic_store_n(rw, 0, __ATOMIC_RELEASE); }

/* ---------------------------------------------------------------- builders */

/* The last len % 8 bytes of a key of len bytes that ends at end, as the low
 * bytes of a word (x86-64: little-endian), the rest 0. Wide loads that stay
 * inside the key: a byte-wise copy into a stack word, then one 8-byte load of
 * it, stalls on every call (the load cannot be forwarded from 1-byte stores). */
static inline uint64_t key_tail(const unsigned char *end, size_t len) {
    size_t r = len & 7;
    const unsigned char *p = end - r;
    if (r == 0)
        return 0;
    if (len >= 8) { /* the word that ends at end, its first 8 - r bytes dropped */
        uint64_t w;
        memcpy(&w, end - 8, 8);
        return w >> (8 * (8 - r));
    }
    if (r >= 4) { /* two 4-byte loads that overlap (or meet) */
        uint32_t a, b;
        memcpy(&a, p, 4);
        memcpy(&b, end - 4, 4);
        return a | (uint64_t)b << (8 * (r - 4));
    }
    if (r >= 2) {
        uint16_t a, b;
        memcpy(&a, p, 2);
        memcpy(&b, end - 2, 2);
        return a | (uint64_t)b << (8 * (r - 2));
    }
    return p[0];
}

static uint64_t hash_key(const void *key, size_t len) {
    /* 8 bytes a step (URLs are 30-100 bytes), multiply-xorshift mixing */
    const unsigned char *p = key, *end = p + len;
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (len * 0xff51afd7ed558ccdull);
    for (size_t n = len; n >= 8; n -= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
        h ^= h >> 29;
        p += 8;
    }
    uint64_t w = key_tail(end, len);
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 29;
    return h;
}

uint64_t txc_hash(const void *key, size_t len) { return hash_key(key, len); }

txc_entry *txc_entry_new(txc_cache *c, const void *key, size_t klen, int64_t body_len, int *err) {
    int dummy;
    if (!err)
        err = &dummy;
    *err = 0;
    if (!c || !key || klen == 0 || body_len < -1) {
        *err = -EINVAL;
        return NULL;
    }
    if (body_len >= 0) {
        if ((uint64_t)body_len > c->cfg.max_object_size) {
            *err = -EFBIG;
            return NULL;
        }
        if ((uint64_t)body_len < c->cfg.min_object_size) {
            *err = -ERANGE;
            return NULL;
        }
    }
    size_t cap = body_len >= 0 ? (size_t)body_len : 4096;
    if (body_len < 0 && cap > c->cfg.max_object_size)
        cap = (size_t)c->cfg.max_object_size;
    txc_entry *e = NULL;
    /* the slots are cache lines: the header must be line-aligned */
    size_t koff = sizeof *e + (size_t)c->nslots * sizeof(struct txc_slot);
    size_t hsize = (koff + klen + TXC_LINE - 1) & ~(size_t)(TXC_LINE - 1);
    if (!(e = header_alloc(hsize, koff))) {
        *err = -ENOMEM;
        return NULL;
    }
    struct txc_payload *pl = payload_alloc(&cap);
    if (!pl) {
        free(e->block);
        *err = -ENOMEM;
        return NULL;
    }
    e->nslots = c->nslots;
    e->key = (unsigned char *)e + koff;
    memcpy(e->key, key, klen);
    e->klen = klen;
    e->hash = hash_key(key, klen);
    e->cache = c;
    e->pl = pl;
    e->declared = body_len;
    e->state = TXC_BUILDING;
    e->refs = 1; /* the builder's, passed on to the cache by txc_insert */
    ref_unpublished(e);
    pl->cache = c;
    pl->meta = NULL;
    pl->meta_len = 0;
    pl->body_len = 0;
    pl->cap = cap;
    __atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&live_all, 1, __ATOMIC_RELAXED);
    return e;
}

int txc_entry_set_meta(txc_entry *e, const void *meta, size_t len) {
    unsigned char *m = NULL;
    if (len) {
        m = malloc(len);
        if (!m)
            return -ENOMEM;
        memcpy(m, meta, len);
    }
    free(e->pl->meta);
    e->pl->meta = m;
    e->pl->meta_len = len;
    return 0;
}

int txc_entry_append(txc_entry *e, const void *data, size_t n) {
    struct txc_payload *pl = e->pl;
    uint64_t max = e->cache->cfg.max_object_size;
    if (n > max || pl->body_len > max - n)
        return -EFBIG;
    size_t need = pl->body_len + n;
    if (need > pl->cap) {
        size_t cap = pl->cap ? pl->cap : 4096;
        while (cap < need)
            cap = cap > SIZE_MAX / 2 ? need : cap * 2;
        if (cap > max)
            cap = (size_t)max;
        struct txc_payload *np = realloc(pl, sizeof *pl + cap);
        if (!np)
            return -ENOMEM;
        np->cap = cap;
        np->home = NULL; /* no pool's size any more: free()d */
        e->pl = pl = np;
    }
    if (n)
        memcpy(pl->body + pl->body_len, data, n);
    pl->body_len = need;
    return 0;
}

const void *txc_entry_key(const txc_entry *e, size_t *len) {
    if (len)
        *len = e->klen;
    return e->key;
}

const void *txc_entry_meta(const txc_entry *e, size_t *len) {
    if (len)
        *len = e->pl->meta_len;
    return e->pl->meta;
}

const void *txc_entry_body(const txc_entry *e, size_t *len) {
    if (len)
        *len = e->pl->body_len;
    return e->pl->body;
}

/* ------------------------------------------------------------------ create */

txc_cache *txc_create(const struct txc_config *cfg, char *err, size_t errlen) {
    if (txc_config_check(cfg, err, errlen) != 0)
        return NULL;
    txc_cache *c = NULL;
    if (posix_memalign((void **)&c, TXC_LINE, sizeof *c) != 0) {
        bad(err, errlen, "out of memory");
        return NULL;
    }
    memset(c, 0, sizeof *c);
    c->cfg = *cfg;
    uint64_t nb = cfg->buckets;
    if (nb == 0) {
        /* twice the objects: most lookups read one chain link (each link is
         * a transactional read in tx mode) */
        nb = cfg->max_objects ? 2 * cfg->max_objects : 4096;
        if (nb < 64)
            nb = 64;
        if (nb > (1u << 20))
            nb = 1u << 20;
    }
    uint64_t p = 1;
    while (p < nb)
        p <<= 1;
    c->mask = p - 1;
    long ncpu = sysconf(_SC_NPROCESSORS_CONF);
    uint32_t want = cfg->slots ? cfg->slots : ncpu > 0 ? (uint32_t)ncpu : 1;
    if (want > TXC_SLOTS_MAX)
        want = TXC_SLOTS_MAX;
    c->nslots = 1;
    while (c->nslots < want)
        c->nslots <<= 1;
    c->table = calloc(p, sizeof *c->table);
    /* with a modest object limit the heap never grows: no allocation inside
     * critical sections (a system call there sends cx sections exclusive) */
    c->heap_cap = cfg->max_objects && cfg->max_objects <= 65536 ? cfg->max_objects : 1024;
    c->heap = malloc(c->heap_cap * sizeof *c->heap);
    if (!c->table || !c->heap) {
        free(c->table);
        free(c->heap);
        free(c);
        bad(err, errlen, "out of memory");
        return NULL;
    }
    /* lock mode: the legacy design's plain mutex; tx and cx modes: the lock
     * of the stores' plans (txcache_core.c), short and never taken by hits,
     * which spins a little before it sleeps */
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    if (txc_plans_apart(cfg->sync))
        pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP);
    pthread_mutex_init(&c->mu, &ma);
    pthread_mutexattr_destroy(&ma);
    cx_init(&c->cx, NULL);
    c->refs = 1;
    return c;
}

void txc_cache_unref_internal(txc_cache *c) { cache_unref(c); }
