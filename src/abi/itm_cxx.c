/* itm_cxx.c - the C++ parts of the libitm ABI: exceptions thrown inside
 * transactions and transactional operator new/delete.
 *
 * libtxkit does not link libstdc++: the C++ runtime functions are weak
 * references, present whenever a C++ program (the only caller) is loaded.
 *
 * Allocation follows tx_malloc/tx_free: new is undone if the attempt aborts,
 * delete waits for the commit. An exception allocated by an attempt that
 * aborts is freed; a catch begun by an attempt that aborts is ended.
 */
#include <stddef.h>
#include <string.h>

#include "abi/itm.h"

#define ITM_API __attribute__((visibility("default")))
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

static void need(const void *fn, const char *name) {
    if (!fn)
        TK_FATAL("%s called but the C++ runtime is not loaded", name);
}

static int speculative(void) {
    tk_thread *t = tk_cur;
    return _txkit_tls.depth && t && !t->doomed && !t->ctl.irrevocable;
}

static void register_undo(tx_handler_fn fn, void *arg) {
    if (tx_on_abort(fn, arg) != 0)
        TK_FATAL("out of memory registering an undo action");
}

static void register_commit(tx_handler_fn fn, void *arg) {
    if (tx_on_commit(fn, arg) != 0)
        TK_FATAL("out of memory registering a commit action");
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

ITM_API void *_ITM_cxa_allocate_exception(size_t size) {
    need((const void *)__cxa_allocate_exception, "_ITM_cxa_allocate_exception");
    void *p = __cxa_allocate_exception(size);
    if (speculative()) {
        tk_thread *t = tk_cur;
        if (t->excs.len == 0)
            register_undo(undo_exceptions, NULL);
        tk_exc *e = tk_vec_push(&t->excs, sizeof *e);
        if (!e)
            TK_FATAL("out of memory tracking a transactional exception");
        e->p = p;
        e->live = 1;
        tk_capture(t, p, size); /* its constructor writes it in place */
    }
    return p;
}

ITM_API void _ITM_cxa_free_exception(void *exc) {
    need((const void *)__cxa_free_exception, "_ITM_cxa_free_exception");
    exc_forget(exc);
    __cxa_free_exception(exc);
}

ITM_API void _ITM_cxa_throw(void *obj, void *tinfo, void *dest) {
    need((const void *)__cxa_throw, "_ITM_cxa_throw");
    exc_forget(obj); /* thrown: the C++ runtime frees it when caught */
    __cxa_throw(obj, tinfo, (void (*)(void *))dest);
}

ITM_API void *_ITM_cxa_begin_catch(void *exc) {
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

ITM_API void _ITM_cxa_end_catch(void) {
    need((const void *)__cxa_end_catch, "_ITM_cxa_end_catch");
    tk_thread *t = tk_cur;
    if (speculative() && t->cxa_catches)
        t->cxa_catches--;
    __cxa_end_catch();
}

/* ------------------------------------------------------ operator new/delete */

static void call_delete(void *p) { _ZdlPv(p); }
static void call_delete_array(void *p) { _ZdaPv(p); }

/* New: undone (deleted) if the attempt aborts; written in place meanwhile. */
static void *track_new(void *p, size_t n, tx_handler_fn undo) {
    if (p && speculative()) {
        register_undo(undo, p);
        tk_capture(tk_cur, p, n);
    }
    return p;
}

/* Delete: at commit (at once outside a speculative transaction). */
static void defer_delete(void *p, tx_handler_fn del) {
    if (!p)
        return;
    if (speculative())
        register_commit(del, p);
    else
        del(p);
}

ITM_API void *_ZGTtnwm(size_t n) {
    need((const void *)_Znwm, "operator new");
    return track_new(_Znwm(n), n, call_delete);
}

ITM_API void *_ZGTtnam(size_t n) {
    need((const void *)_Znam, "operator new[]");
    return track_new(_Znam(n), n, call_delete_array);
}

ITM_API void *_ZGTtnwmRKSt9nothrow_t(size_t n, const void *nt) {
    need((const void *)_ZnwmRKSt9nothrow_t, "operator new(nothrow)");
    return track_new(_ZnwmRKSt9nothrow_t(n, nt), n, call_delete);
}

ITM_API void *_ZGTtnamRKSt9nothrow_t(size_t n, const void *nt) {
    need((const void *)_ZnamRKSt9nothrow_t, "operator new[](nothrow)");
    return track_new(_ZnamRKSt9nothrow_t(n, nt), n, call_delete_array);
}

ITM_API void _ZGTtdlPv(void *p) {
    need((const void *)_ZdlPv, "operator delete");
    defer_delete(p, call_delete);
}

ITM_API void _ZGTtdaPv(void *p) {
    need((const void *)_ZdaPv, "operator delete[]");
    defer_delete(p, call_delete_array);
}

/* The nothrow and sized deletes free the same way as the plain ones: the
 * size is only a hint and glibc's operator delete ignores it. */
ITM_API void _ZGTtdlPvRKSt9nothrow_t(void *p, const void *nt) {
    (void)nt;
    _ZGTtdlPv(p);
}

ITM_API void _ZGTtdaPvRKSt9nothrow_t(void *p, const void *nt) {
    (void)nt;
    _ZGTtdaPv(p);
}

ITM_API void _ZGTtdlPvm(void *p, size_t n) {
    (void)n;
    _ZGTtdlPv(p);
}

ITM_API void _ZGTtdlPvmRKSt9nothrow_t(void *p, size_t n, const void *nt) {
    (void)n;
    (void)nt;
    _ZGTtdlPv(p);
}
