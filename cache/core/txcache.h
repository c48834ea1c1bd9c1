/* SPDX-License-Identifier: MIT */
/* txcache.h - the cache core of mod_cache_tx: a URL-keyed object cache with
 * no Apache types, so it can be unit-tested and benchmarked in-process.
 *
 * Design (after Apache 2.2's mod_mem_cache, the system "Transactifying
 * Apache" converted): a chained hash table keyed by the cache key plus a
 * heap (4-ary) ordered by eviction priority; limits on object count, total
 * bytes and object size; LRU or GDSF priorities with an aging queue clock.
 * Entries are immutable once inserted and reference-counted: a hit hands out
 * a reference (zero-copy: the caller reads the entry's bytes in place), and an
 * entry evicted or replaced while referenced stays valid until released.
 *
 * Synchronization is chosen per cache (txc_sync_t):
 *   TXC_SYNC_LOCK  one mutex around every operation (the legacy design);
 *   TXC_SYNC_TX    gcc -fgnu-tm atomic blocks over transaction_safe code, run
 *                  by whatever libitm-ABI runtime the process binds (txkit's by
 *                  default, GCC's libitm for comparison), for everything hits
 *                  read (the hash chains): hits are lock-free read-only
 *                  transactions; stores and removals plan their eviction work
 *                  (heap, counts, limits) in plain code under a lock that hits
 *                  never take, then relink the chains in a small transaction
 *                  (selective transactification); frees and other side
 *                  effects come after the sections, not transactified;
 *   TXC_SYNC_CX    a txkit cx lock (optimistic hardware section, lock fallback);
 *   TXC_SYNC_RWLOCK the legacy design with a reader-writer lock: lookups (and
 *                  txc_contains, statistics) share it, stores and removals
 *                  hold it alone (a spinning lock, writers first); the
 *                  reference a hit takes is an atomic increment under the
 *                  shared lock (a fairer lock baseline than one mutex).
 *
 * How the hot path stays cheap (txcache_core.c has the details): a hit's
 * critical section only reads (so with software TM it is a read-only
 * transaction, which never conflicts with another hit); the reference it
 * hands out and the use that raises the priority are counted after the
 * section in a per-CPU slot of the entry, protected by an epoch scheme, so
 * hits on one entry from different CPUs never write the same line; the heap
 * is not sifted on hits: its keys are lower bounds of the priorities (which
 * only grow), and eviction re-keys the top lazily until the top's key is
 * exact, which gives exactly the LRU / GDSF order. Lock mode keeps the
 * legacy design's one mutex and takes the reference under it.
 *
 * Thread safety: every function may be called from any thread, except
 * txc_destroy(), which must not race with other calls on the same cache.
 * Errors are negative errno values; nothing here ever exits.
 */
#ifndef TXCACHE_H
#define TXCACHE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum txc_sync {
    TXC_SYNC_LOCK = 0,
    TXC_SYNC_TX = 1,
    TXC_SYNC_CX = 2,
    TXC_SYNC_RWLOCK = 3
} txc_sync_t;
typedef enum txc_policy { TXC_POLICY_LRU = 0, TXC_POLICY_GDSF = 1 } txc_policy_t;

/* Limits; 0 means "no limit" for max_objects and max_bytes only. */
struct txc_config {
    uint64_t max_objects;     /* objects in the cache at once */
    uint64_t max_bytes;       /* sum of entry sizes (key + meta + body) */
    uint64_t min_object_size; /* bodies smaller than this are not cached */
    uint64_t max_object_size; /* bodies larger than this are not cached */
    txc_policy_t policy;
    txc_sync_t sync;
    uint32_t buckets; /* hash buckets (rounded up to a power of 2);
                               * 0: 2 * max_objects, at least 64, at most 2^20 */
    uint32_t slots;   /* per-entry counter slots, rounded up to a power
                               * of 2, at most 64; 0: one per CPU. A hit counts
                               * in its CPU's slot, so hits on one entry from
                               * different CPUs do not conflict. */
};

/* Defaults: 1000 objects, 100 MB, bodies 1 B .. 1 MB, GDSF, lock. */
void txc_config_default(struct txc_config *c);
/* 0, or -EINVAL with a message in err naming the offending field
 * ("max_object_size must be >= min_object_size", ...). */
int txc_config_check(const struct txc_config *c, char *err, size_t errlen);

const char *txc_sync_name(txc_sync_t s);                /* "lock", "tx", "cx", "rwlock" */
int txc_sync_parse(const char *s, txc_sync_t *out);     /* 0 or -EINVAL */
const char *txc_policy_name(txc_policy_t p);            /* "LRU", "GDSF" */
int txc_policy_parse(const char *s, txc_policy_t *out); /* case-insensitive */

typedef struct txc_cache txc_cache;
typedef struct txc_entry txc_entry;

/* NULL on a bad config (message in err) or out of memory. */
txc_cache *txc_create(const struct txc_config *c, char *err, size_t errlen);
/* Drops the cache's references; entries still referenced live on until released. */
void txc_destroy(txc_cache *c);

/* ---- hits: a new reference to the entry for key, or NULL (a miss). A hit
 * raises the entry's priority (LRU / GDSF), the hot spot of the design. */
txc_entry *txc_lookup(txc_cache *c, const void *key, size_t klen);
txc_entry *txc_entry_ref(txc_entry *e); /* another reference; returns e */
void txc_entry_release(txc_entry *e);   /* frees the entry at the last one */
const void *txc_entry_key(const txc_entry *e, size_t *len);
const void *txc_entry_meta(const txc_entry *e, size_t *len); /* caller's opaque bytes */
const void *txc_entry_body(const txc_entry *e, size_t *len);

/* ---- stores: build an entry privately, then publish it.
 * body_len is the expected length, or -1 when unknown (streamed bodies).
 * txc_entry_new: NULL with -EFBIG / -ERANGE in *err when a known length is
 * outside [min_object_size, max_object_size], -ENOMEM when out of memory. */
txc_entry *txc_entry_new(txc_cache *c, const void *key, size_t klen, int64_t body_len, int *err);
/* (-EINVAL in *err for an empty key or a body_len below -1.) */
int txc_entry_set_meta(txc_entry *e, const void *meta, size_t len); /* 0 or -ENOMEM */
/* Append body bytes: 0, -EFBIG past max_object_size (give the entry up), -ENOMEM. */
int txc_entry_append(txc_entry *e, const void *data, size_t n);
/* Publish: replaces an entry with the same key, evicts by priority to fit the
 * limits. Consumes the builder's reference. 0, -ERANGE (body below
 * min_object_size or above the limits even when empty, or a body whose length
 * differs from a known body_len given to txc_entry_new: a truncated response):
 * not cached; -ENOMEM (no memory to grow the eviction heap, only without a
 * max_objects limit); -EINVAL (not a builder entry of this cache). */
int txc_insert(txc_cache *c, txc_entry *e);
void txc_entry_abandon(txc_entry *e); /* give up a builder entry */
/* Remove key: 0, or -ENOENT. */
int txc_remove(txc_cache *c, const void *key, size_t klen);
/* 1 if key is cached now, else 0: no reference, no priority change, no
 * statistics (for tests and status pages). */
int txc_contains(txc_cache *c, const void *key, size_t klen);

struct txc_stats {
    uint64_t lookups, hits, misses;
    uint64_t inserts, replaced, rejected; /* rejected: txc_insert said -ERANGE */
    uint64_t evictions, removals;
    uint64_t objects, bytes; /* now */
    uint64_t live_entries;   /* entries not yet freed (cache + references) */
};
void txc_stats_get(txc_cache *c, struct txc_stats *out);
/* Entries not yet freed in all caches of the process, destroyed ones
 * included (an entry referenced when its cache was destroyed lives on). */
uint64_t txc_live_entries_all(void);

/* Check every invariant (heap order, index positions, counts, byte totals,
 * limits); for tests. 0, or -EFAULT with a message in err. Quiescent caches only. */
int txc_check(txc_cache *c, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif /* TXCACHE_H */
