/* SPDX-License-Identifier: MIT */
/* itm_cxx.c - the C++ parts of the libitm ABI: exceptions thrown inside
 * transactions and transactional operator new/delete.
 *
 * libtxkit does not link libstdc++: the C++ runtime functions are weak
 * references, present whenever a C++ program (the only caller) is loaded.
 *
 * Allocation follows tx_malloc/tx_free: new is undone if the attempt aborts,
 * delete waits for the commit and then for the readers (tk_tx_free_with). An exception allocated by an attempt that
 * aborts is freed; a catch begun by an attempt that aborts is ended.
 */
#include <stddef.h>
#include <string.h>

#include "abi/itm.h"
#include "methods/method.h"

#define WEAK __attribute__((weak))

/* Itanium C++ ABI and operator new/delete (mangled names). */
extern void *__cxa_allocate_exception(size_t) WEAK;
extern void __cxa_free_exception(void *) WEAK;
extern void __cxa_throw(void *, void *, void (*)(void *)) WEAK __attribute__((noreturn));
extern void *__cxa_begin_catch(void *) WEAK;
extern void __cxa_end_catch(void) WEAK;
extern void *_Znwm(size_t) WEAK;
extern void *_Znam(size_t) WEAK;
extern void *_ZnwmRKSt9nothrow_t(size_t, const void *) WEAK;
extern void *_ZnamRKSt9nothrow_t(size_t, const void *) WEAK;
extern void _ZdlPv(void *) WEAK;
extern void _ZdaPv(void *) WEAK;
extern void _ZdlPvm(void *, size_t) WEAK;
extern void _ZdlPvRKSt9nothrow_t(void *, const void *) WEAK;
extern void _ZdaPvRKSt9nothrow_t(void *, const void *) WEAK;
extern void _ZdlPvmRKSt9nothrow_t(void *, size_t, const void *) WEAK;
extern void _ZdaPvm(void *, size_t) WEAK;
extern void _ZdlPvSt11align_val_t(void *, size_t) WEAK;
extern void _ZdaPvSt11align_val_t(void *, size_t) WEAK;
extern void _ZdlPvmSt11align_val_t(void *, size_t, size_t) WEAK;
extern void _ZdaPvmSt11align_val_t(void *, size_t, size_t) WEAK;

static void need(const void *fn, const char *name) {
    if (!fn)
        TK_FATAL("%s called but the C++ runtime is not loaded", name);
}

static int speculative(void) {
    tk_thread *t = tk_cur;
    return _txkit_tls.depth && t && !t->doomed && !t->ctl.irrevocable;
}

/* No memory to track what an abort must undo: a software attempt starts again
 * serially (it aborts on conflicts, its own doing); a serial one goes on
 * untracked (it aborts only by the program's hand: tx_restart, a cancel, and
 * then leaks the object). Owner thread, inside the attempt. */
static void untracked(tk_thread *t) {
    if (t->ctl.m->caps & TK_CAP_SOFTWARE)
        tk_abort_serially(t, "record of what an abort undoes");
}

static void register_undo(tx_handler_fn fn, void *arg) {
    if (tx_on_abort(fn, arg) != 0)
        untracked(tk_cur);
}

/* ------------------------------------------------------------ exceptions */

/* Exceptions allocated by an attempt that aborts are freed, unless they were
 * thrown (the C++ runtime owns them then, and frees them when caught) or
 * freed already. One undo action per attempt frees those still live. */
static void undo_exceptions(void *arg) {
    (void)arg;
    tk_thread *t = tk_cur;
    for (size_t i = 0; i < t->excs.len; i++) {
        tk_exc *e = &TK_VEC_AT(&t->excs, tk_exc, i);
        if (e->live)
            __cxa_free_exception(e->p);
    }
    t->excs.len = 0;
}

static void exc_forget(void *p) {
    tk_thread *t = tk_cur;
    if (!t)
        return;
    for (size_t i = 0; i < t->excs.len; i++)
        if (TK_VEC_AT(&t->excs, tk_exc, i).p == p)
            TK_VEC_AT(&t->excs, tk_exc, i).live = 0;
}
/* An attempt that aborts inside catch handlers it began ends them; handlers
 * it began and ended itself are settled (ending them again would end an
 * outer one, and free its exception). */
static void undo_catches(void *arg) {
    (void)arg;
    tk_thread *t = tk_cur;
    while (t->cxa_catches) {
        t->cxa_catches--;
        __cxa_end_catch();
    }
}

TK_EXPORT void *_ITM_cxa_allocate_exception(size_t size) {
    need((const void *)__cxa_allocate_exception, "_ITM_cxa_allocate_exception");
    void *p = __cxa_allocate_exception(size);
    if (speculative()) {
        tk_thread *t = tk_cur;
        if (t->excs.len == 0)
            register_undo(undo_exceptions, NULL);
        tk_exc *e = tk_vec_push(&t->excs, sizeof *e);
        if (e) {
            e->p = p;
            e->live = 1;
        } else if (t->ctl.m->caps & TK_CAP_SOFTWARE) {
            __cxa_free_exception(p);
            untracked(t);
        }
        tk_capture_or_serial(t, p, size); /* its constructor writes it in place */
    }
    return p;
}

TK_EXPORT void _ITM_cxa_free_exception(void *exc) {
    need((const void *)__cxa_free_exception, "_ITM_cxa_free_exception");
    exc_forget(exc);
    __cxa_free_exception(exc);
}

TK_EXPORT void _ITM_cxa_throw(void *obj, void *tinfo, void *dest) {
    need((const void *)__cxa_throw, "_ITM_cxa_throw");
    exc_forget(obj); /* thrown: the C++ runtime frees it when caught */
    __cxa_throw(obj, tinfo, (void (*)(void *))dest);
}

TK_EXPORT void *_ITM_cxa_begin_catch(void *exc) {
    need((const void *)__cxa_begin_catch, "_ITM_cxa_begin_catch");
    void *r = __cxa_begin_catch(exc);
    if (speculative()) {
        tk_thread *t = tk_cur;
        if (!t->cxa_undo) {
            register_undo(undo_catches, NULL);
            t->cxa_undo = 1;
        }
        t->cxa_catches++;
    }
    return r;
}

TK_EXPORT void _ITM_cxa_end_catch(void) {
    need((const void *)__cxa_end_catch, "_ITM_cxa_end_catch");
    tk_thread *t = tk_cur;
    if (speculative() && t->cxa_catches)
        t->cxa_catches--;
    __cxa_end_catch();
}

/* ------------------------------------------------------ operator new/delete */

static void undo_new(void *p) { _ZdlPv(p); }
static void undo_new_array(void *p) { _ZdaPv(p); }

/* How a deferred delete ends (tk_free_fn): the operator the program named,
 * with the size and alignment it passed. */
static void del_plain(void *p, size_t n, size_t al) {
    (void)n, (void)al;
    _ZdlPv(p);
}
static void del_array(void *p, size_t n, size_t al) {
    (void)n, (void)al;
    _ZdaPv(p);
}
static void del_sized(void *p, size_t n, size_t al) {
    (void)al;
    _ZdlPvm(p, n);
}
static void del_array_sized(void *p, size_t n, size_t al) {
    (void)al;
    _ZdaPvm(p, n);
}
static void del_aligned(void *p, size_t n, size_t al) {
    (void)n;
    _ZdlPvSt11align_val_t(p, al);
}
static void del_array_aligned(void *p, size_t n, size_t al) {
    (void)n;
    _ZdaPvSt11align_val_t(p, al);
}
static void del_sized_aligned(void *p, size_t n, size_t al) { _ZdlPvmSt11align_val_t(p, n, al); }
static void del_array_sized_aligned(void *p, size_t n, size_t al) {
    _ZdaPvmSt11align_val_t(p, n, al);
}

/* New: undone (deleted) if the attempt aborts; written in place meanwhile. */
static void *track_new(void *p, size_t n, tx_handler_fn undo) {
    if (p && speculative()) {
        register_undo(undo, p);
        tk_capture_or_serial(tk_cur, p, n);
    }
    return p;
}

/* Delete: like tx_free, every variant. Inside a transaction (speculative,
 * irrevocable or serial alike) at its commit, and then only once no software
 * attempt that may still hold the pointer runs (the epoch reclamation of
 * reclaim.c); outside one at once. A concurrent reader may have loaded the
 * pointer before the commit, so even a serial transaction's delete waits. */
static void defer_delete(void *p, tk_free_fn del, size_t n, size_t al) {
    tk_tx_free_with(p, del, n, al);
}

TK_EXPORT void *_ZGTtnwm(size_t n) {
    need((const void *)_Znwm, "operator new");
    return track_new(_Znwm(n), n, undo_new);
}

TK_EXPORT void *_ZGTtnam(size_t n) {
    need((const void *)_Znam, "operator new[]");
    return track_new(_Znam(n), n, undo_new_array);
}

TK_EXPORT void *_ZGTtnwmRKSt9nothrow_t(size_t n, const void *nt) {
    need((const void *)_ZnwmRKSt9nothrow_t, "operator new(nothrow)");
    return track_new(_ZnwmRKSt9nothrow_t(n, nt), n, undo_new);
}

TK_EXPORT void *_ZGTtnamRKSt9nothrow_t(size_t n, const void *nt) {
    need((const void *)_ZnamRKSt9nothrow_t, "operator new[](nothrow)");
    return track_new(_ZnamRKSt9nothrow_t(n, nt), n, undo_new_array);
}

TK_EXPORT void _ZGTtdlPv(void *p) {
    need((const void *)_ZdlPv, "operator delete");
    defer_delete(p, del_plain, 0, 0);
}

TK_EXPORT void _ZGTtdaPv(void *p) {
    need((const void *)_ZdaPv, "operator delete[]");
    defer_delete(p, del_array, 0, 0);
}

/* The nothrow deletes free the same way as the plain ones (the C++ runtime
 * calls them only when a nothrow new's constructor throws). The sized and
 * aligned ones call the operator the program named, with its arguments; they
 * are not in libitm's ABI (gcc references them, e.g. delete[] of a class
 * with a destructor, or of an over-aligned type), so the drop-in cannot be
 * used for programs that need them, but a txkit-linked build can. */
TK_EXPORT void _ZGTtdlPvRKSt9nothrow_t(void *p, const void *nt) {
    (void)nt;
    _ZGTtdlPv(p);
}

TK_EXPORT void _ZGTtdaPvRKSt9nothrow_t(void *p, const void *nt) {
    (void)nt;
    _ZGTtdaPv(p);
}

TK_EXPORT void _ZGTtdlPvm(void *p, size_t n) {
    if (_ZdlPvm)
        defer_delete(p, del_sized, n, 0);
    else
        _ZGTtdlPv(p);
}

TK_EXPORT void _ZGTtdlPvmRKSt9nothrow_t(void *p, size_t n, const void *nt) {
    (void)nt;
    _ZGTtdlPvm(p, n);
}

TK_EXPORT void _ZGTtdaPvm(void *p, size_t n) {
    if (_ZdaPvm)
        defer_delete(p, del_array_sized, n, 0);
    else
        _ZGTtdaPv(p);
}

TK_EXPORT void _ZGTtdlPvSt11align_val_t(void *p, size_t al) {
    need((const void *)_ZdlPvSt11align_val_t, "operator delete(align_val_t)");
    defer_delete(p, del_aligned, 0, al);
}

TK_EXPORT void _ZGTtdaPvSt11align_val_t(void *p, size_t al) {
    need((const void *)_ZdaPvSt11align_val_t, "operator delete[](align_val_t)");
    defer_delete(p, del_array_aligned, 0, al);
}

TK_EXPORT void _ZGTtdlPvmSt11align_val_t(void *p, size_t n, size_t al) {
    need((const void *)_ZdlPvmSt11align_val_t, "operator delete(size_t, align_val_t)");
    defer_delete(p, del_sized_aligned, n, al);
}

TK_EXPORT void _ZGTtdaPvmSt11align_val_t(void *p, size_t n, size_t al) {
    need((const void *)_ZdaPvmSt11align_val_t, "operator delete[](size_t, align_val_t)");
    defer_delete(p, del_array_sized_aligned, n, al);
}
