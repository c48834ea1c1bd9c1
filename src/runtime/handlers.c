/* SPDX-License-Identifier: MIT */
/* handlers.c - what waits for the end of an attempt: commit and abort handlers,
 * tx_malloc'ed blocks (freed on abort) and tx_free'd ones (freed at commit). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "methods/method.h"
#include "runtime/internal.h"

#define ARENA_UNIT 16 /* copies are aligned for any type */


/* n contiguous new elements. */
static void *vec_push_n(tk_vec *v, size_t elem_size, size_t n) {
    if (v->len + n > v->cap) {
        size_t cap = v->cap ? v->cap : 64;
        while (cap < v->len + n)
            cap *= 2;
        char *d = realloc(v->data, cap * elem_size);
        if (!d)
            return NULL;
        v->data = d;
        v->cap = cap;
    }
    void *p = v->data + elem_size * v->len;
    v->len += n;
    return p;
}


/* Move a log out of the descriptor: handlers may start transactions, which
 * reuse the descriptor's logs. */
static tk_vec take(tk_vec *v) {
    tk_vec out = *v;
    memset(v, 0, sizeof *v);
    return out;
}

static void give_back(tk_vec *v, tk_vec *mine) {
    if (v->data == NULL) {
        mine->len = 0;
        *v = *mine;
    } else {
        tk_vec_free(mine);
    }
}

void tk_discard_effects(tk_thread *t, int committed) {
    if (committed) {
        for (size_t i = 0; i < t->frees.len; i++)
            tk_free_later(t, &TK_VEC_AT(&t->frees, tk_free, i));
    } else {
        for (size_t i = 0; i < t->allocs.len; i++) /* never published: free now */
            free(TK_VEC_AT(&t->allocs, void *, i));
    }
    t->frees.len = 0;
    t->allocs.len = 0;
    if (t->handlers.len == 0)
        return;
    tk_vec hs = take(&t->handlers);
    tk_vec arena = take(&t->arena);
    if (committed) {
        for (size_t i = 0; i < hs.len; i++) {
            tk_handler *h = &TK_VEC_AT(&hs, tk_handler, i);
            if (h->on_commit)
                h->fn(h->copy_off == SIZE_MAX ? h->arg : arena.data + h->copy_off);
        }
    } else {
        for (size_t i = hs.len; i-- > 0;) {
            tk_handler *h = &TK_VEC_AT(&hs, tk_handler, i);
            if (!h->on_commit)
                h->fn(h->arg);
        }
    }
    give_back(&t->handlers, &hs);
    give_back(&t->arena, &arena);
}

/* The thread when inside a live (not doomed) transaction, else NULL. */
static tk_thread *live_tx(void) {
    if (_txkit_tls.depth == 0)
        return NULL;
    tk_thread *t = tk_cur;
    return t && !t->doomed ? t : NULL;
}

static int add_handler(tk_thread *t, tx_handler_fn fn, void *arg, size_t off, int on_commit) {
    tk_handler *h = tk_vec_push(&t->handlers, sizeof *h);
    if (!h)
        return -ENOMEM;
    h->fn = fn;
    h->arg = arg;
    h->copy_off = off;
    h->on_commit = on_commit;
    return 0;
}

int tx_on_commit(tx_handler_fn fn, void *arg) {
    if (_txkit_tls.depth == 0) {
        fn(arg);
        return 0;
    }
    tk_thread *t = live_tx();
    return t ? add_handler(t, fn, arg, SIZE_MAX, 1) : 0;
}

int tx_on_abort(tx_handler_fn fn, void *arg) {
    tk_thread *t = live_tx();
    return t ? add_handler(t, fn, arg, SIZE_MAX, 0) : 0;
}

int tx_on_commit_copy(tx_handler_fn fn, const void *data, size_t size) {
    size_t units = (size + ARENA_UNIT - 1) / ARENA_UNIT;
    if (_txkit_tls.depth == 0) {
        void *copy = aligned_alloc(ARENA_UNIT, (units ? units : 1) * ARENA_UNIT);
        if (!copy)
            return -ENOMEM;
        memcpy(copy, data, size);
        fn(copy);
        free(copy);
        return 0;
    }
    tk_thread *t = live_tx();
    if (!t)
        return 0;
    size_t off = t->arena.len * ARENA_UNIT;
    char *dst = vec_push_n(&t->arena, ARENA_UNIT, units);
    if (!dst && units)
        return -ENOMEM;
    if (size)
        memcpy(dst, data, size);
    int r = add_handler(t, fn, NULL, off, 1);
    if (r)
        t->arena.len -= units;
    return r;
}

bool tk_capture(tk_thread *t, const void *p, size_t size) {
    tk_range *r = tk_vec_push(&t->captured, sizeof *r);
    if (!r)
        return false;
    r->lo = (uintptr_t)p;
    r->hi = (uintptr_t)p + size;
    /* The methods write it in place: no inline buffered store from now on in
     * this attempt (txkit/tx.h _txkit_store_buf; the method re-arms it). */
    _txkit_tls.wend = NULL;
    return true;
}

void tk_capture_or_serial(tk_thread *t, const void *p, size_t size) {
    if (!tk_capture(t, p, size) && (t->ctl.m->caps & TK_CAP_SOFTWARE))
        tk_abort_serially(t, "record of its allocations"); /* (serial writes in place anyway) */
}

void *tx_malloc(size_t size) {
    void *p = malloc(size);
    tk_thread *t = live_tx();
    if (!p || !t)
        return p;
    void **slot = tk_vec_push(&t->allocs, sizeof *slot);
    if (!slot) {
        free(p);
        return NULL;
    }
    *slot = p;
    /* A software attempt must know the block is its own (it writes it in
     * place); without memory to say so, no block (a serial attempt writes in
     * place anyway: it can do without) */
    if (!tk_capture(t, p, size) && (t->ctl.m->caps & TK_CAP_SOFTWARE)) {
        t->allocs.len--;
        free(p);
        return NULL;
    }
    return p;
}

void tk_tx_free_with(void *ptr, tk_free_fn fn, size_t size, size_t align) {
    if (!ptr)
        return;
    if (_txkit_tls.depth == 0) {
        fn(ptr, size, align);
        return;
    }
    tk_thread *t = live_tx();
    if (!t)
        return; /* a doomed attempt's free never happened */
    tk_free *slot = tk_vec_push(&t->frees, sizeof *slot);
    if (slot) {
        *slot = (tk_free){ptr, fn, size, align};
        return;
    }
    /* No memory to remember the free: the block stays allocated (a leak).
     * Freeing it now would be a use after free for any reader that can still
     * reach it (our unlink is not even published before the commit), and
     * waiting here for those readers could wait for ever (a serial attempt
     * holds the clock they need to finish). */
}

void tx_free(void *ptr) { tk_tx_free_with(ptr, tk_free_plain, 0, 0); }
