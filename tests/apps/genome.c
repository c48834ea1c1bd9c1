/* SPDX-License-Identifier: MIT */
/* genome.c - gene sequencing (in the style of STAMP's genome): rebuild a
 * random gene of GLEN nucleotides from overlapping segments of SEGLEN.
 *
 * Phase 1 (dedup): threads add the shuffled segments (every start position,
 * many twice) to a shared hash set; each add is a nested transaction that
 * allocates the entry and its string copy (malloc + memcpy inside the
 * transaction) and cancels itself (__transaction_cancel, the inner
 * transaction only) when the segment is already there; the outer transaction
 * appends new entries to a shared array that is reallocated inside
 * transactions as it grows. Hashing and comparing are transaction_safe
 * functions reached through function pointers kept in the set.
 * Phase 2 (link): for each unique segment a transaction copies its prefix and
 * suffix into key buffers on the callee's stack, looks for the segment whose
 * suffix is its prefix (and the other way round) in two shared overlap maps,
 * links them, and inserts itself into both maps.
 * Oracle: as many unique segments as start positions; exactly one chain
 * start; walking the links rebuilds the gene exactly; the threads' counts of
 * added and duplicate segments add up.
 *
 * SIZE: the gene length (default 16384).
 */
#include "app_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEGLEN 24
#define KEYLEN (SEGLEN - 1)
#define TS __attribute__((transaction_safe))
#define TS_NOINLINE __attribute__((transaction_safe, noinline))

typedef uint64_t (*hash_fn)(const char *s, long n) TS;
typedef int (*eq_fn)(const char *a, const char *b, long n) TS;

typedef struct entry {
    char *str; /* SEGLEN chars, no terminator */
    struct entry *next_in_bucket;
    struct entry *prev, *next; /* the chain being rebuilt */
} entry;

typedef struct hset {
    entry **buckets;
    long nbuckets, count;
    hash_fn hash;
    eq_fn eq;
} hset;

/* An overlap map: key (KEYLEN chars of an entry) -> entry. */
typedef struct ocell {
    const char *key;
    entry *e;
    struct ocell *next;
} ocell;
typedef struct omap {
    ocell **buckets;
    long nbuckets;
    hash_fn hash;
    eq_fn eq;
} omap;

static app_cfg cfg;
static long glen, nsegs;
static char *gene;
static char **segs; /* the shuffled input, SEGLEN chars each */
static hset uniq;
static omap by_prefix, by_suffix;
static struct {
    entry **a;
    long n, cap;
} list;

struct tally {
    long added, dups, links;
    char pad[64];
};
static struct tally *tallies;

TS static uint64_t hash_chars(const char *s, long n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (long i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return h ^ (h >> 29);
}

TS static int eq_chars(const char *a, const char *b, long n) {
    for (long i = 0; i < n; i++)
        if (a[i] != b[i])
            return 0;
    return 1;
}

TS_NOINLINE static entry *hset_find(hset *s, const char *str) {
    uint64_t h = s->hash(str, SEGLEN);
    for (entry *e = s->buckets[h & (uint64_t)(s->nbuckets - 1)]; e; e = e->next_in_bucket)
        if (s->eq(e->str, str, SEGLEN))
            return e;
    return NULL;
}

TS_NOINLINE static entry *entry_new(const char *str) {
    entry *e = malloc(sizeof *e);
    e->str = malloc(SEGLEN);
    memcpy(e->str, str, SEGLEN);
    e->next_in_bucket = NULL;
    e->prev = e->next = NULL;
    return e;
}

TS_NOINLINE static void hset_link(hset *s, entry *e) {
    uint64_t h = s->hash(e->str, SEGLEN) & (uint64_t)(s->nbuckets - 1);
    e->next_in_bucket = s->buckets[h];
    s->buckets[h] = e;
    s->count++;
}

/* Appends e to the shared list, reallocating it inside the transaction. */
TS_NOINLINE static void list_push(entry *e) {
    if (list.n == list.cap) {
        long cap = list.cap * 2;
        entry **na = malloc(sizeof *na * (size_t)cap);
        memcpy(na, list.a, sizeof *na * (size_t)list.n);
        free(list.a);
        list.a = na;
        list.cap = cap;
    }
    list.a[list.n++] = e;
}

TS_NOINLINE static entry *omap_find(omap *m, const char *key) {
    uint64_t h = m->hash(key, KEYLEN) & (uint64_t)(m->nbuckets - 1);
    for (ocell *c = m->buckets[h]; c; c = c->next)
        if (m->eq(c->key, key, KEYLEN))
            return c->e;
    return NULL;
}

TS_NOINLINE static void omap_put(omap *m, const char *key, entry *e) {
    uint64_t h = m->hash(key, KEYLEN) & (uint64_t)(m->nbuckets - 1);
    ocell *c = malloc(sizeof *c);
    c->key = key;
    c->e = e;
    c->next = m->buckets[h];
    m->buckets[h] = c;
}

/* Copies KEYLEN chars of e's string from offset off into key (the caller's
 * stack buffer). */
TS_NOINLINE static void take_key(char *key, const entry *e, int off) {
    for (int i = 0; i < KEYLEN; i++)
        key[i] = e->str[off + i];
}

/* Links e with the segments that overlap it; returns the links made. */
TS_NOINLINE static int link_one(entry *e) {
    char key[KEYLEN + 1];
    int links = 0;
    take_key(key, e, 0); /* e's prefix: someone's suffix? */
    entry *p = omap_find(&by_suffix, key);
    if (p) {
        CHECK_MSG(p->next == NULL && e->prev == NULL, "a segment linked twice");
        p->next = e;
        e->prev = p;
        links++;
    }
    take_key(key, e, 1); /* e's suffix: someone's prefix? */
    entry *n = omap_find(&by_prefix, key);
    if (n) {
        CHECK_MSG(n->prev == NULL && e->next == NULL, "a segment linked twice");
        e->next = n;
        n->prev = e;
        links++;
    }
    omap_put(&by_prefix, e->str, e);
    omap_put(&by_suffix, e->str + 1, e);
    return links;
}

static void phase_dedup(int tid, void *arg) {
    (void)arg;
    struct tally *ty = &tallies[tid];
    long lo = nsegs * tid / cfg.threads, hi = nsegs * (tid + 1) / cfg.threads;
    for (long i = lo; i < hi; i++) {
        const char *str = segs[i];
        int added = 0;
        __transaction_atomic {
            entry *e = NULL;
            __transaction_atomic {
                e = entry_new(str);
                if (hset_find(&uniq, str))
                    __transaction_cancel; /* the inner one: e is given back */
                hset_link(&uniq, e);
                added = 1;
            }
            if (added)
                list_push(e);
        }
        ty->added += added;
        ty->dups += !added;
    }
}

static void phase_link(int tid, void *arg) {
    (void)arg;
    struct tally *ty = &tallies[tid];
    long n = list.n;
    long lo = n * tid / cfg.threads, hi = n * (tid + 1) / cfg.threads;
    for (long i = lo; i < hi; i++) {
        int l;
        __transaction_atomic { l = link_one(list.a[i]); }
        ty->links += l;
    }
}

static int kmers_unique(void) {
    long nb = 1;
    while (nb < 2 * glen)
        nb <<= 1;
    long *tab = app_xmalloc(sizeof *tab * (size_t)nb);
    int ok = 1;
    for (long i = 0; i < nb; i++)
        tab[i] = -1;
    for (long i = 0; ok && i + KEYLEN <= glen; i++) {
        uint64_t h = hash_chars(gene + i, KEYLEN) & (uint64_t)(nb - 1);
        while (tab[h] >= 0 && ok) {
            if (memcmp(gene + tab[h], gene + i, KEYLEN) == 0)
                ok = 0;
            h = (h + 1) & (uint64_t)(nb - 1);
        }
        tab[h] = i;
    }
    free(tab);
    return ok;
}

static void setup(void) {
    uint64_t rng = app_seed(&cfg, 999, 4);
    glen = cfg.size < 2 * SEGLEN ? 2 * SEGLEN : cfg.size;
    gene = app_xmalloc((size_t)glen + 1);
    do {
        for (long i = 0; i < glen; i++)
            gene[i] = "ACGT"[app_rand(&rng) % 4];
        gene[glen] = '\0';
    } while (!kmers_unique());
    long starts = glen - SEGLEN + 1;
    segs = app_xmalloc(sizeof *segs * (size_t)starts * 2);
    nsegs = 0;
    for (long i = 0; i < starts; i++) {
        int copies = 1 + (app_rand(&rng) % 3 == 0);
        for (int c = 0; c < copies; c++) {
            segs[nsegs] = app_xmalloc(SEGLEN);
            memcpy(segs[nsegs], gene + i, SEGLEN);
            nsegs++;
        }
    }
    for (long i = nsegs - 1; i > 0; i--) {
        long j = (long)(app_rand(&rng) % (uint64_t)(i + 1));
        char *x = segs[i];
        segs[i] = segs[j];
        segs[j] = x;
    }
    long nb = 1;
    while (nb < starts)
        nb <<= 1;
    uniq = (hset){app_xmalloc(sizeof(entry *) * (size_t)nb), nb, 0, hash_chars, eq_chars};
    memset(uniq.buckets, 0, sizeof(entry *) * (size_t)nb);
    by_prefix = (omap){app_xmalloc(sizeof(ocell *) * (size_t)nb), nb, hash_chars, eq_chars};
    by_suffix = (omap){app_xmalloc(sizeof(ocell *) * (size_t)nb), nb, hash_chars, eq_chars};
    memset(by_prefix.buckets, 0, sizeof(ocell *) * (size_t)nb);
    memset(by_suffix.buckets, 0, sizeof(ocell *) * (size_t)nb);
    list.cap = 8;
    list.n = 0;
    list.a = app_xmalloc(sizeof *list.a * (size_t)list.cap);
    memset(tallies, 0, sizeof *tallies * (size_t)cfg.threads);
}

static void free_omap(omap *m) {
    for (long i = 0; i < m->nbuckets; i++)
        while (m->buckets[i]) {
            ocell *c = m->buckets[i];
            m->buckets[i] = c->next;
            free(c);
        }
    free(m->buckets);
}

static void check_and_free(void) {
    long starts = glen - SEGLEN + 1, added = 0, dups = 0, links = 0;
    for (int t = 0; t < cfg.threads; t++) {
        added += tallies[t].added;
        dups += tallies[t].dups;
        links += tallies[t].links;
    }
    CHECK_MSG(uniq.count == starts, "%ld unique segments, expected %ld", uniq.count, starts);
    CHECK_MSG(list.n == starts, "list holds %ld, expected %ld", list.n, starts);
    CHECK_MSG(added == starts && added + dups == nsegs, "added %ld + dups %ld, segments %ld", added,
              dups, nsegs);
    CHECK_MSG(links == starts - 1, "%ld links, expected %ld", links, starts - 1);
    entry *first = NULL;
    long nfirst = 0;
    for (long i = 0; i < list.n; i++) {
        entry *e = list.a[i];
        CHECK_MSG(hset_find(&uniq, e->str) == e, "entry %ld not in the set", i);
        if (!e->prev) {
            first = e;
            nfirst++;
        }
        CHECK_MSG(!e->next || e->next->prev == e, "broken back link");
    }
    CHECK_MSG(nfirst == 1, "%ld chain starts", nfirst);
    char *out = app_xmalloc((size_t)glen + 1);
    long len = SEGLEN, steps = 1;
    memcpy(out, first->str, SEGLEN);
    for (entry *e = first->next; e && len < glen; e = e->next, steps++)
        out[len++] = e->str[SEGLEN - 1];
    out[len] = '\0';
    CHECK_MSG(len == glen && steps == starts && memcmp(out, gene, (size_t)glen) == 0,
              "rebuilt %ld chars in %ld steps; differs from the gene", len, steps);
    if (cfg.round == 0)
        printf("INFO genome: %ld nucleotides, %ld segments, %ld unique, %ld links\n", glen, nsegs,
               starts, links);
    free(out);
    for (long i = 0; i < list.n; i++) {
        free(list.a[i]->str);
        free(list.a[i]);
    }
    free(list.a);
    free(uniq.buckets);
    free_omap(&by_prefix);
    free_omap(&by_suffix);
    for (long i = 0; i < nsegs; i++)
        free(segs[i]);
    free(segs);
    free(gene);
}

int main(int argc, char **argv) {
    app_init(&cfg, "genome", argc, argv, 16384);
    tallies = app_xmalloc(sizeof *tallies * (size_t)cfg.threads);
    app_rounds(&cfg, setup, phase_dedup, phase_link, check_and_free);
    free(tallies);
    app_pass("oracle holds");
    return 0;
}
