/* SPDX-License-Identifier: MIT */
/* txcache_int.h - private layout of the cache core (txcache.c, txcache_core.c).
 *
 * Who touches what, and how:
 *  - immutable after txc_insert publishes an entry (hash, key, size, payload
 *    pointer, cache): read inside critical sections without instrumentation
 *    (transaction_pure helpers), which is safe because an entry is freed only
 *    once no section can reach it: in lock mode after the lock is released
 *    and the last reference went; in tx and cx modes, whose sections run
 *    inside read-side epoch sections (txc_rd_enter/exit), the header after
 *    a grace period as well (the payload, which sections never read, at the
 *    last reference);
 *  - shared mutable fields (chains, heap, counts, states, dead_next): only
 *    inside a critical section of the cache's sync mode, never with atomics;
 *    in tx and cx modes the chains only inside sections (transactions, cx
 *    sections) and the others only under c->mu (stores' and removals' plans,
 *    statistics: txcache_core.c, txc_plans_apart); except qclock, written by
 *    plans (lock mode: in sections) and read by tx and cx hits after their
 *    sections (a relaxed load of a hint that only grows: txc_lookup);
 *  - the payload (meta + body): written only while the entry is private to
 *    its builder, read in place by reference holders outside any critical
 *    section, freed at the last reference;
 *  - e->refs, e->percpu, the slots' acq and rel, c->refs and the live count:
 *    atomics, never written inside a critical section; a slot's last and acq
 *    are read inside sections as hints that only grow (txcache.c,
 *    "references", says how the per-CPU counts settle).
 */
#ifndef TXCACHE_INT_H
#define TXCACHE_INT_H

#include <pthread.h>
#include <stdint.h>
#include <txkit/cx.h>
#include <txkit/tx.h>

#include "txcache.h"

#ifdef TXC_HAVE_GNU_TM
#define TXC_SAFE __attribute__((transaction_safe))
#define TXC_PURE __attribute__((transaction_pure))
#else
#define TXC_SAFE
#define TXC_PURE
#endif

#define TXC_LINE 64
/* Slots: a hit counts itself in the slot of the CPU it runs on (its own cache
 * line in the entry), so threads running at the same time write disjoint
 * lines and never conflict, and an entry carries one line per CPU (not per
 * thread), which keeps what eviction reads small. A thread that migrates
 * uses another slot next time; any slot is correct, sharing only costs
 * conflicts. nslots is a power of 2 <= TXC_SLOTS_MAX. */
#define TXC_SLOTS_MAX 64
/* GDSF: priority = L + (1 + hits) * TXC_GDSF_K / size, L the queue clock. */
#define TXC_GDSF_K (1ull << 20)

enum txc_state { TXC_BUILDING = 0, TXC_CACHED = 1, TXC_DROPPED = 2 };

/* One CPU slot's share of an entry (tx and cx modes): references taken
 * (lookups and txc_entry_ref) and released through this slot while the entry
 * is cached, and the last access seen through it. Written outside sections
 * with atomics on the slot's own line, so hits on one entry from different
 * CPUs never share a line; a reference may be released through another slot
 * than the one that took it, so only the sums mean something. Eviction reads
 * acq (GDSF's use count) and last inside sections as hints that only grow. */
struct txc_slot {
    uint64_t acq;
    uint64_t rel;
    uint64_t last; /* LRU: stamp of the last hit; GDSF: queue clock then */
} __attribute__((aligned(TXC_LINE)));

/* Counting references while cached: a per-CPU mode, where refs holds
 * TXC_BIAS (the cache's reference) and holders count in the slots, and an
 * atomic mode, where refs counts them all. See txcache.c, "references". */
#define TXC_BIAS (1ull << 48)

/* A thread slot's operation counters in the cache. Stores and evictions are
 * counted inside their sections (transactional words); hits and misses, the
 * hot ones, after the section with relaxed atomics on a line of their own:
 * plain statistics need not commit with the lookup, and no word is accessed
 * both ways. */
struct txc_cstats {
    uint64_t inserts, replaced, rejected, evictions, removals;
    uint64_t hits __attribute__((aligned(TXC_LINE))); /* atomic, outside sections */
    uint64_t misses;                                  /* atomic, outside sections */
} __attribute__((aligned(TXC_LINE)));

/* Meta and body: one allocation for the body (grows while streaming), the
 * meta on its own. Freed as a unit by txc_payload_free(). */
struct pool; /* txcache.c: a thread's buffers */
struct txc_payload {
    struct txc_cache *cache;
    struct pool *home;             /* txcache.c: the pool it goes back to, or NULL */
    struct txc_payload *back_next; /* txcache.c: on a pool's return stack */
    unsigned char *meta;
    size_t meta_len;
    size_t body_len;
    size_t cap; /* of body */
    unsigned char body[];
};

struct txc_entry {
    /* The first line: what a lookup reads of each entry on its chain (hash,
     * klen, key, next) and of the one it finds (pl, cache), written only
     * when the chain changes (and state when it leaves), never by the heap's
     * sifts (heap_pos, on the second line). */
    /* immutable once published */
    uint64_t hash;
    size_t klen;
    unsigned char *key; /* after the slots */
    struct txc_cache *cache;
    struct txc_payload *pl;
    uint64_t size;   /* charged: key + meta + body */
    uint32_t nslots; /* the cache's */
    /* shared, inside critical sections only */
    int state;                   /* enum txc_state */
    struct txc_entry *next;      /* hash chain */
    struct txc_entry *dead_next; /* let go by a section; then txcache.c's retired headers */
    uint64_t heap_pos;
    uint64_t born;    /* LRU: stamp at insert; GDSF: L at insert */
    uint64_t retired; /* txcache.c: the header's epoch tag once its last reference went */
    void *block;      /* immutable: what malloc returned, the header aligned inside it */
    int64_t declared; /* immutable: body length given to txc_entry_new, or -1 */
    /* txcache.c, atomic, never inside a section (read in sections only by
     * txc_check): the reference count in atomic mode (lock mode always; tx
     * and cx before publication and after the cache lets go), and whether
     * the slots count instead (per-CPU mode). On a line of their own, away
     * from the fields every lookup reads. */
    uint64_t refs __attribute__((aligned(TXC_LINE)));
    int percpu;
    /* txcache.c: published in a tx or cx cache, where lookups may hold the
     * header without a reference: it is freed after a grace period. Set
     * while private, then immutable */
    int shared;
    struct txc_slot slot[]; /* nslots lines */
};

struct txc_hnode {
    uint64_t key; /* priority when last computed: a lower bound */
    struct txc_entry *e;
};

struct txc_cache {
    /* immutable */
    struct txc_config cfg;
    struct txc_entry **table;
    uint64_t mask;
    uint32_t nslots;
    /* atomic, outside critical sections: live entries + 1 while not destroyed */
    uint64_t refs __attribute__((aligned(TXC_LINE)));
    /* the locks, each on its own line. mu: lock mode's one lock; in tx mode
     * the lock of stores, removals and statistics (everything below but the
     * hash chains, which only transactions write: txcache_core.c) */
    pthread_mutex_t mu __attribute__((aligned(TXC_LINE)));
    uint64_t rw __attribute__((aligned(TXC_LINE))); /* rwlock mode's one lock (txc_rw_*) */
    cx_lock_t cx __attribute__((aligned(TXC_LINE)));
    /* shared mutable state: written by stores and evictions only */
    struct txc_hnode *heap __attribute__((aligned(TXC_LINE)));
    uint64_t heap_len, heap_cap;
    uint64_t objects, bytes;
    uint64_t qclock; /* GDSF aging: priority of the last eviction (hits: see the top) */
    struct txc_cstats st[TXC_SLOTS_MAX];
};

/* txcache.c */
void txc_payload_free(void *pl);       /* frees a payload, drops its cache ref */
void txc_entry_free_now(txc_entry *e); /* header and payload, outside any section */
unsigned txc_my_slot(const txc_cache *c);
uint64_t txc_stamp(void); /* per thread strictly increasing, ns */
uint64_t txc_hash(const void *key, size_t len);
void txc_cache_unref_internal(txc_cache *c); /* drops the handle's or an entry's ref */
/* Read-side epoch sections (nest; any thread): the header of an entry the
 * cache let go meanwhile stays allocated until every section that began
 * before ends. */
void txc_rd_enter(void);
void txc_rd_exit(void);
/* References (txcache.c; any thread, outside sections). */
void txc_ref_publish(txc_entry *e);          /* still private: per-CPU mode (tx, cx) */
int txc_ref_found(txc_entry *e, unsigned s); /* inside the epoch section whose
                                              * section found e: 1, or 0 if
                                              * the cache let it go (look again) */
void txc_ref_get(txc_entry *e, unsigned s);  /* the caller holds one */
void txc_ref_put(txc_entry *e, unsigned s);  /* frees e after the last */
void txc_let_go(txc_entry *e);               /* the cache's (or builder's) reference */
int64_t txc_ref_count(const txc_entry *e);   /* quiescent entries only (txc_check) */
void txc_reclaim(int wait);      /* frees the headers due (this thread's retired ones too);
                             * wait: also those retired now */
uint64_t txc_limbo_visits(void); /* headers reclaims looked at so far (tests); any thread */
/* Lock and rwlock modes, the legacy design: one lock around every section,
 * a hit's reference taken under it and counted in e->refs. */
static inline int txc_legacy(const txc_cache *c) {
    return c->cfg.sync == TXC_SYNC_LOCK || c->cfg.sync == TXC_SYNC_RWLOCK;
}
/* Tx and cx modes: stores and removals run their plan under c->mu and only
 * the relink as a section (txcache_core.c, core_insert_plan says why). */
static inline int txc_plans_apart(txc_sync_t sync) {
    return sync == TXC_SYNC_TX || sync == TXC_SYNC_CX;
}
/* rwlock mode's lock (txcache.c): a word of reader count and writer bit;
 * writers first (a waiting writer stops new readers), spinning, then
 * yielding the CPU (more threads than CPUs). Any thread. */
void txc_rw_rdlock(uint64_t *rw);
void txc_rw_rdunlock(uint64_t *rw);
void txc_rw_wrlock(uint64_t *rw);
void txc_rw_wrunlock(uint64_t *rw);

#endif /* TXCACHE_INT_H */
