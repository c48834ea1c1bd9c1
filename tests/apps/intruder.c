/* SPDX-License-Identifier: MIT */
/* intruder.c - network intrusion detection (in the style of STAMP's
 * intruder): flows are split into fragments, shuffled, and fed through a
 * shared packet queue; threads reassemble them in a shared map and scan each
 * complete flow for an attack signature.
 *
 * Per packet, one transaction pops it from the queue (freeing the queue
 * cell) and a second one adds it to its flow's reassembly state in a
 * red-black-tree map (created on the first fragment), keeping the fragments
 * sorted by a transaction_safe order reached through a function pointer.
 * The transaction that adds the last fragment copies the flow into a new
 * buffer (malloc + memcpy inside the transaction), frees the fragments, the
 * list cells and the flow, removes it from the map, and returns the buffer
 * through out-parameters on the caller's stack. Detection runs outside the
 * transactions.
 * Oracle: every flow is reassembled exactly once, byte for byte; the attacks
 * found are exactly the flows that carry the signature; queue and map are
 * empty.
 *
 * SIZE: the number of flows (default 6000).
 */
#include "app_common.h"
#include "app_rbtree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXFRAGS 8
static const char signature[] = "ATTACK";

typedef struct packet {
    long flow;
    int frag, nfrags, len;
    char data[];
} packet;

typedef int (*frag_cmp_fn)(const packet *a, const packet *b) APP_TS;

typedef struct fcell {
    packet *p;
    struct fcell *next;
} fcell;

typedef struct flow {
    long id;
    int nfrags, nrecv;
    long bytes;
    fcell *frags; /* sorted */
} flow;

typedef struct qcell {
    packet *p;
    struct qcell *next;
} qcell;

static struct {
    qcell *head, *tail;
    long popped;
} queue;
static rb_tree flows;
static frag_cmp_fn frag_order;
static app_cfg cfg;
static long nflows;
static char **originals;
static long *orig_len;
static unsigned char *is_attack;
static int *seen; /* reassembled count per flow (atomic adds) */

struct tally {
    long packets, flows, attacks;
    char pad[64];
};
static struct tally *tallies;

APP_TS static int by_frag(const packet *a, const packet *b) {
    return a->frag < b->frag ? -1 : a->frag > b->frag;
}

APP_TS_NOINLINE static packet *queue_pop(void) {
    qcell *c = queue.head;
    if (!c)
        return NULL;
    queue.head = c->next;
    if (!queue.head)
        queue.tail = NULL;
    packet *p = c->p;
    free(c);
    queue.popped++;
    return p;
}

APP_TS_NOINLINE static void frag_insert(flow *f, packet *p) {
    frag_cmp_fn cmp = frag_order;
    fcell **pp = &f->frags;
    while (*pp && cmp((*pp)->p, p) < 0)
        pp = &(*pp)->next;
    CHECK_MSG(!*pp || cmp((*pp)->p, p) != 0, "flow %ld: fragment %d twice", f->id, p->frag);
    fcell *c = malloc(sizeof *c);
    c->p = p;
    c->next = *pp;
    *pp = c;
}

/* Adds p to its flow. When the flow is complete, returns 1 with *msg (a new
 * buffer, the caller frees it) and *len; else 0. */
APP_TS_NOINLINE static int reassemble(packet *p, char **msg, long *len) {
    flow *f = rb_get(&flows, p->flow, NULL);
    if (!f) {
        f = malloc(sizeof *f);
        f->id = p->flow;
        f->nfrags = p->nfrags;
        f->nrecv = 0;
        f->bytes = 0;
        f->frags = NULL;
        rb_insert(&flows, p->flow, f);
    }
    CHECK_MSG(f->nfrags == p->nfrags, "flow %ld: fragment counts differ", f->id);
    frag_insert(f, p);
    f->nrecv++;
    f->bytes += p->len;
    if (f->nrecv < f->nfrags)
        return 0;
    char *buf = malloc((size_t)f->bytes + 1);
    long at = 0;
    int expect = 0;
    while (f->frags) {
        fcell *c = f->frags;
        CHECK_MSG(c->p->frag == expect, "flow %ld: fragment %d where %d belongs", f->id, c->p->frag,
                  expect);
        memcpy(buf + at, c->p->data, (size_t)c->p->len);
        at += c->p->len;
        expect++;
        f->frags = c->next;
        free(c->p);
        free(c);
    }
    buf[at] = '\0';
    *msg = buf;
    *len = at;
    rb_remove(&flows, f->id, NULL);
    free(f);
    return 1;
}

static void worker(int tid, void *arg) {
    (void)arg;
    struct tally *ty = &tallies[tid];
    memset(ty, 0, sizeof *ty);
    for (;;) {
        packet *p;
        __transaction_atomic { p = queue_pop(); }
        if (!p)
            break;
        ty->packets++;
        char *msg = NULL;
        long len = -1;
        long id = p->flow; /* p is freed by the transaction that completes it */
        int done;
        __transaction_atomic { done = reassemble(p, &msg, &len); }
        if (!done)
            continue;
        CHECK_MSG(msg && len >= 0, "complete flow %ld without a buffer", id);
        ty->flows++;
        CHECK_MSG(len == orig_len[id] && memcmp(msg, originals[id], (size_t)len) == 0,
                  "flow %ld reassembled wrong (%ld bytes, expected %ld)", id, len, orig_len[id]);
        int attack = strstr(msg, signature) != NULL;
        ty->attacks += attack;
        CHECK_MSG(attack == is_attack[id], "flow %ld: detection %d, expected %d", id, attack,
                  is_attack[id]);
        __atomic_fetch_add(&seen[id], 1, __ATOMIC_RELAXED);
        free(msg);
    }
}

static void setup(void) {
    uint64_t rng = app_seed(&cfg, 999, 5);
    nflows = cfg.size;
    originals = app_xmalloc(sizeof *originals * (size_t)nflows);
    orig_len = app_xmalloc(sizeof *orig_len * (size_t)nflows);
    is_attack = app_xmalloc((size_t)nflows);
    seen = app_xmalloc(sizeof *seen * (size_t)nflows);
    packet **pk = app_xmalloc(sizeof *pk * (size_t)nflows * MAXFRAGS);
    long npk = 0;
    for (long f = 0; f < nflows; f++) {
        long len = 16 + (long)(app_rand(&rng) % 113);
        char *s = app_xmalloc((size_t)len + 1);
        for (long i = 0; i < len; i++)
            s[i] = (char)('a' + app_rand(&rng) % 26);
        s[len] = '\0';
        is_attack[f] = app_rand(&rng) % 10 == 0;
        if (is_attack[f])
            memcpy(s + app_rand(&rng) % (uint64_t)(len - 6), signature, 6);
        originals[f] = s;
        orig_len[f] = len;
        seen[f] = 0;
        int nfr = 1 + (int)(app_rand(&rng) % MAXFRAGS);
        if (nfr > len)
            nfr = (int)len;
        long at = 0;
        for (int k = 0; k < nfr; k++) {
            long end = k == nfr - 1
                           ? len
                           : at + 1 + (long)(app_rand(&rng) % (uint64_t)(len - at - (nfr - k - 1)));
            if (end > len - (nfr - k - 1))
                end = len - (nfr - k - 1);
            packet *p = app_xmalloc(sizeof *p + (size_t)(end - at));
            p->flow = f;
            p->frag = k;
            p->nfrags = nfr;
            p->len = (int)(end - at);
            memcpy(p->data, s + at, (size_t)(end - at));
            pk[npk++] = p;
            at = end;
        }
    }
    for (long i = npk - 1; i > 0; i--) {
        long j = (long)(app_rand(&rng) % (uint64_t)(i + 1));
        packet *x = pk[i];
        pk[i] = pk[j];
        pk[j] = x;
    }
    queue.head = queue.tail = NULL;
    queue.popped = 0;
    for (long i = 0; i < npk; i++) {
        qcell *c = app_xmalloc(sizeof *c);
        c->p = pk[i];
        c->next = NULL;
        if (queue.tail)
            queue.tail->next = c;
        else
            queue.head = c;
        queue.tail = c;
    }
    free(pk);
    rb_init(&flows, rb_cmp_long);
    frag_order = by_frag;
}

static void check_and_free(void) {
    long packets = 0, done = 0, attacks = 0, expect_attacks = 0;
    for (int t = 0; t < cfg.threads; t++) {
        packets += tallies[t].packets;
        done += tallies[t].flows;
        attacks += tallies[t].attacks;
    }
    CHECK_MSG(queue.head == NULL && queue.tail == NULL, "queue not empty");
    CHECK_MSG(packets == queue.popped, "threads took %ld packets, queue gave %ld", packets,
              queue.popped);
    const char *e = rb_verify(&flows);
    CHECK_MSG(!e, "flow map: %s", e);
    CHECK_MSG(flows.count == 0, "%ld flows left in the map", flows.count);
    for (long f = 0; f < nflows; f++) {
        CHECK_MSG(seen[f] == 1, "flow %ld reassembled %d times", f, seen[f]);
        expect_attacks += is_attack[f];
    }
    CHECK_MSG(done == nflows, "%ld flows done of %ld", done, nflows);
    CHECK_MSG(attacks == expect_attacks, "%ld attacks found, %ld sent", attacks, expect_attacks);
    if (cfg.round == 0)
        printf("INFO intruder: %ld flows in %ld packets, %ld attacks found\n", nflows, packets,
               attacks);
    for (long f = 0; f < nflows; f++)
        free(originals[f]);
    free(originals);
    free(orig_len);
    free(is_attack);
    free(seen);
}

int main(int argc, char **argv) {
    app_init(&cfg, "intruder", argc, argv, 6000);
    tallies = app_xmalloc(sizeof *tallies * (size_t)cfg.threads);
    app_rounds(&cfg, setup, worker, NULL, check_and_free);
    free(tallies);
    app_pass("oracle holds");
    return 0;
}
