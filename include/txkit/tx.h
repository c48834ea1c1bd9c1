/* SPDX-License-Identifier: MIT */
/* txkit/tx.h - atomic blocks, barriers, handlers and method selection.
 *
 * A transaction is written as
 *
 *     TX_ATOMIC {
 *         long b = TX_LOAD(&acct->balance);
 *         TX_STORE(&acct->balance, b - amount);
 *     }
 *
 * The block runs as a hardware transaction (Intel RTM) when it can, as a
 * software transaction when it cannot, and as a serial, irrevocable section as a
 * last resort; it restarts transparently on abort. Shared data must be accessed
 * through TX_LOAD / TX_STORE / tx_memcpy / tx_memset inside the block.
 *
 * Rules of the block (the price of doing this without a compiler pass):
 *  - Local variables declared outside the block and modified inside it are not
 *    rolled back by a software abort; declare them inside, or treat them as
 *    scratch that the block recomputes from the start.
 *  - Leaving the block with break, continue, return or goto commits the
 *    transaction. TX_ATOMIC is itself a one-pass loop, so break and continue
 *    end the block, not a loop around it (unlike gcc's __transaction_atomic):
 *    to leave an enclosing loop, use goto or a flag.
 *  - Never leave a block by longjmp, or (C++) by an exception: the
 *    transaction stays open. C++ code throws through txkit::atomic.
 *  - A signal handler must not run a block: transactions are not
 *    async-signal-safe.
 *  - Nesting is flat: an inner block is part of the outer transaction.
 *  - In C, a software abort jumps back to the start of the outermost block
 *    (longjmp-like). C++ code should use txkit::atomic from <txkit.hpp>, which
 *    unwinds with an exception instead so destructors run.
 */
#ifndef TXKIT_TX_H
#define TXKIT_TX_H

#include <stddef.h>
#include <stdint.h>
#include <txkit/config.h>
#if defined(__cplusplus) && __cplusplus >= 201103L
#define _TXKIT_CXX11 1
extern "C++" { /* for _TXKIT_UNQUAL; C++ even where the includer wraps us in extern "C" */
#include <type_traits>
}
#endif

TXKIT_BEGIN_DECLS

/* ------------------------------------------------------------------ methods */

/**
 * enum txkit_method - how transactions execute.
 * @TXKIT_AUTO:   hybrid: hardware first, then software, then serial (default).
 *                With a single transactional thread it runs serially with an
 *                undo log, which costs almost nothing.
 * @TXKIT_HTM:    Intel RTM with the serial path as its fallback.
 * @TXKIT_STM:    software TM (NOrec: value-based validation, opaque), serial
 *                as the fallback of last resort.
 * @TXKIT_SERIAL: one transaction at a time, with an undo log (so tx_restart()
 *                still works) until it becomes irrevocable.
 *
 * In statistics, arrays indexed by method count what *executed* an attempt, so
 * their TXKIT_AUTO slot is always 0.
 */
typedef enum txkit_method {
    TXKIT_AUTO = 0,
    TXKIT_HTM = 1,
    TXKIT_STM = 2,
    TXKIT_SERIAL = 3,
    TXKIT_NMETHODS = 4
} txkit_method_t;

/**
 * txkit_set_method() - choose the method for the whole process.
 * @m: the method.
 *
 * Overrides TXKIT_METHOD. Takes effect at the next outermost transaction of
 * each thread. Any thread may call it at any time.
 * Return: 0, -EINVAL for an unknown method, or -ENOTSUP for TXKIT_HTM when RTM
 * is not usable on this machine (the method is then left unchanged).
 */
TXKIT_API int txkit_set_method(txkit_method_t m);

/**
 * txkit_set_thread_method() - choose the method for the calling thread only.
 * @m: the method, or -1 to follow the process-wide method again.
 *
 * Threads with different methods run concurrently and correctly together.
 * Return: 0, -EINVAL, -ENOTSUP as txkit_set_method(), or -EBUSY inside a
 * transaction.
 */
TXKIT_API int txkit_set_thread_method(int m);

/** txkit_get_method() - the method the calling thread's next transaction uses. */
TXKIT_API txkit_method_t txkit_get_method(void);

/** txkit_method_name() - "auto", "htm", "stm", "serial" or "?". */
TXKIT_API const char *txkit_method_name(int m);

/**
 * txkit_method_parse() - parse a method name (as in TXKIT_METHOD).
 * Return: 0 and *out set, or -EINVAL.
 */
TXKIT_API int txkit_method_parse(const char *name, txkit_method_t *out);

/**
 * txkit_htm_usable() - whether RTM was detected and passed its probe.
 * Return: 1 or 0. The reason is in struct txkit_rtm_info (<txkit/stats.h>).
 */
TXKIT_API int txkit_htm_usable(void);

/**
 * txkit_set_fault() - inject aborts (for testing fallback paths).
 * @m:    TXKIT_HTM or TXKIT_STM (or TXKIT_SERIAL: only while not irrevocable).
 * @prob: probability in [0, 1] that an attempt of that method aborts just
 *        before it would commit, with cause TXKIT_CAUSE_INJECTED. Injected
 *        aborts are retried at once (no conflict backoff). Serial is the
 *        last resort: a transaction gets at most 8 injected serial aborts,
 *        so it finishes even at 1.
 *
 * Same as TXKIT_FAULT="htm=P,stm=P,serial=P". Process-wide.
 * Return: 0 or -EINVAL.
 */
TXKIT_API int txkit_set_fault(txkit_method_t m, double prob);

/* ------------------------------------------------------------- transactions */

/**
 * tx_in_transaction() - whether the calling thread is inside a transaction.
 * Return: the nesting depth (0 outside).
 */
TXKIT_API int tx_in_transaction(void);

/**
 * tx_irrevocable() - make the rest of the transaction non-speculative.
 *
 * Call it before I/O or anything else that cannot be undone. A hardware
 * attempt restarts in serial mode; a software one is upgraded in place when
 * its reads are still valid. While irrevocable, other transactions wait at
 * their next shared access. tx_restart() is forbidden afterwards.
 * Outside a transaction it does nothing.
 */
TXKIT_API void tx_irrevocable(void);

/**
 * tx_restart() - abort the current attempt and run the transaction again.
 *
 * Undoes every transactional store and tx_malloc, runs the abort handlers and
 * retries (with backoff). Calling it outside a transaction or after
 * tx_irrevocable() is a program error: the process aborts with a message.
 */
TXKIT_API void tx_restart(void) __attribute__((noreturn));

/**
 * tx_no_privatization() - this transaction's commit need not wait for older
 * readers.
 *
 * By default a commit that wrote returns only once no other thread's
 * attempt that began before it still runs on its old snapshot, so that its
 * thread may free or reuse with plain code what the transaction unlinked
 * (privatization safety; docs/api.md). Call this inside a transaction that
 * privatizes nothing: what it unlinks is freed only by tx_free() or after a
 * grace period of the program's own (epochs, reference counts taken outside
 * the transaction), never with plain code right after the commit. Its commit
 * then skips the wait. It holds for the current transaction (the outermost
 * block, the attempt that calls it; an attempt that runs again must call it
 * again) and is forgotten when it ends. Outside a transaction it does
 * nothing. TXKIT_PRIVATIZATION=off does the same for every transaction.
 * Owner thread; gcc transactional code may call it as transaction_pure.
 */
TXKIT_API void tx_no_privatization(void);

/* ------------------------------------------------------------------ memory */

/**
 * tx_malloc() - allocate memory that is freed again if the transaction aborts.
 * Outside a transaction it is malloc(). Return: the block, or NULL.
 */
TXKIT_API void *tx_malloc(size_t size);

/**
 * tx_free() - free memory when (and only if) the transaction commits.
 * Outside a transaction it is free(). A block tx_malloc'ed by the same
 * transaction is freed at commit as well.
 */
TXKIT_API void tx_free(void *ptr);

/** tx_memcpy() - transactional memcpy (both sides are shared data). */
TXKIT_API void tx_memcpy(void *dst, const void *src, size_t n);

/**
 * tx_memcpy_from() - copy shared data (src, read transactionally) into
 * memory private to the thread (dst: a local, a buffer nobody else reads),
 * which is written in place, so the code that follows reads it directly.
 * Like a local changed in the block, dst is not put back by an abort.
 * (tx_memcpy would buffer the bytes for dst until the commit: a read of dst
 * in the block saw its old bytes, and a local of the block is gone by then.)
 */
TXKIT_API void tx_memcpy_from(void *dst, const void *src, size_t n);

/**
 * tx_memcpy_to() - copy private memory (src, read directly) into shared data
 * (dst, written transactionally): tx_memcpy without the read barriers.
 */
TXKIT_API void tx_memcpy_to(void *dst, const void *src, size_t n);

/** tx_memset() - transactional memset. */
TXKIT_API void tx_memset(void *dst, int c, size_t n);

/* ---------------------------------------------------------------- handlers */

typedef void (*tx_handler_fn)(void *arg);

/**
 * tx_on_commit() - run fn(arg) once after the transaction commits.
 *
 * Commit handlers run after the commit, outside any transaction, in the order
 * they were registered; an attempt that aborts discards its registrations.
 * Outside a transaction, fn(arg) runs at once.
 * Return: 0, or -ENOMEM (nothing registered).
 */
TXKIT_API int tx_on_commit(tx_handler_fn fn, void *arg);

/**
 * tx_on_commit_copy() - like tx_on_commit(), with a private copy of the data.
 * @fn:   called after commit with a pointer to the copy (valid during the call,
 *        aligned for any type).
 * @data: state to capture now (like a closure's captured variables).
 * @size: bytes to copy.
 * Return: 0, or -ENOMEM.
 */
TXKIT_API int tx_on_commit_copy(tx_handler_fn fn, const void *data, size_t size);

/**
 * tx_on_abort() - run fn(arg) whenever the current attempt aborts.
 *
 * Abort handlers of an attempt run after its rollback, newest first, outside
 * any transaction; then the transaction is retried and registers them again.
 * A hardware attempt rolls back its own registrations together with
 * everything else it did, so its abort handlers do not run: there was no
 * non-transactional effect to undo. Outside a transaction this does nothing.
 * Return: 0, or -ENOMEM.
 */
TXKIT_API int tx_on_abort(tx_handler_fn fn, void *arg);

/* ------------------------------------------------- the atomic block (inline) */

/**
 * struct txkit_site - one atomic block in the source (a static per TX_ATOMIC).
 * The runtime keeps adaptive state and statistics in the private part.
 */
typedef struct txkit_site {
    const char *file;
    const char *func;
    int line;
    unsigned int flags; /* runtime-private from here on */
    unsigned int id;
    unsigned int htm_fail;
    void *priv;
} txkit_site_t;

/* A software transaction's read-log entry (runtime-private layout). */
struct _txkit_rentry {
    const void *addr;
    uint64_t val;
    unsigned int size;
};

/* Per-thread barrier state, read by the inline fast paths. Everything after
 * wrote is runtime-private and may change between versions. */
struct txkit_tls {
    unsigned int access; /* TXKIT_ACC_* bits: which accesses need the runtime */
    unsigned int depth;  /* nesting depth, 0 outside transactions */
    unsigned int wrote;  /* set by every TX_STORE, tx_memcpy, tx_memset; cleared by
                                  * the runtime when a hardware attempt begins: a hardware
                                  * commit that wrote nothing need not make software
                                  * transactions revalidate */
    /* software TM read fast path (TXKIT_ACC_FASTREAD) */
    const volatile uint64_t *clock;    /* the global sequence clock */
    uint64_t snap;                     /* the snapshot the reads so far are valid at */
    uint64_t wbloom;                   /* written words (bit (addr >> 3) & 63): no fast path */
    struct _txkit_rentry *rcur, *rend; /* read log: next free entry, end; under
                                        * TXKIT_ACC_UNDO the undo log instead */
    /* hardware commits seen by the snapshot (TXKIT_ACC_FASTREAD_HW; appended,
     * so code built against the fields above keeps working) */
    const volatile uint64_t *hw; /* the hardware-commit counter */
    uint64_t hsnap;              /* its value the reads so far are valid at */
    /* the written words again, finer (appended; read by the runtime's own
     * barriers, _txkit_load_sw_try): NULL, or 1024 bits, bit
     * _TXKIT_WFINE_BIT(addr) set for every word written, once the write set
     * outgrew what wbloom can tell apart */
    const uint64_t *wfine;
    /* software TM's buffered stores (TXKIT_ACC_BUFSTORE; appended): the write
     * set's next free entry and the end of what the inline store may append
     * (NULL: none), and the attempt's own stack frames, [stk_lo, stk_lo +
     * stk_span), which are written in place, never buffered */
    struct _txkit_wentry *wcur, *wend;
    uintptr_t stk_lo, stk_span;
};
/* A software TM write-set entry (runtime-private layout): the aligned word,
 * its new bytes, which of them were written (bit i: byte i). */
struct _txkit_wentry {
    uintptr_t word;
    uint64_t data;
    unsigned char mask;
};
#define TXKIT_ACC_LOAD 1u
#define TXKIT_ACC_STORE 2u
#define TXKIT_ACC_FASTREAD 4u    /* loads may take the inline software path */
#define TXKIT_ACC_FASTREAD_HW 8u /* ... checking hardware commits too (hybrid) */
#define TXKIT_ACC_UNDO 16u       /* stores may log the old bytes at rcur, then write in place */
/* loads need no log entry, only the check that the clock still equals snap:
 * set only with TXKIT_ACC_FASTREAD (never with TXKIT_ACC_FASTREAD_HW), so it
 * alone says the inline read may run */
#define TXKIT_ACC_NOLOG 32u
/* stores of aligned 4- and 8-byte values to words not yet written may append
 * their write-set entry at wcur (while wcur < wend) */
#define TXKIT_ACC_BUFSTORE 64u
/* TXKIT_ACC_NOLOG in hybrid mode: the check that hw_commits still equals
 * hsnap too. Set with neither FASTREAD bit, so code built before it existed
 * takes the runtime's load */
#define TXKIT_ACC_NOLOG_HW 128u

extern TXKIT_API __thread struct txkit_tls _txkit_tls;

struct _txkit_scope {
    int run;
};

/* Internal entry points used by the macros; not a stable API. gcc calls them
 * through the GOT (noplt), as -fno-plt would: one indirect call instead of a
 * call to a PLT stub and its indirect jump (bound at load time, not lazily). */
#if defined(__GNUC__) && !defined(__clang__)
#define _TXKIT_NOPLT __attribute__((noplt))
#else
#define _TXKIT_NOPLT
#endif
TXKIT_API int _txkit_begin(txkit_site_t *site, unsigned int flags)
    __attribute__((returns_twice)) _TXKIT_NOPLT;
TXKIT_API void _txkit_end(struct _txkit_scope *scope) _TXKIT_NOPLT;
TXKIT_API void _txkit_load_bytes(void *dst, const void *addr, size_t size) _TXKIT_NOPLT;
TXKIT_API void _txkit_store_bytes(void *addr, const void *src, size_t size) _TXKIT_NOPLT;
TXKIT_API int _txkit_begin_cxx(txkit_site_t *site, const char *file, int line,
                               void (*restart_thrower)(void)) _TXKIT_NOPLT;
TXKIT_API int _txkit_commit_cxx(void) _TXKIT_NOPLT;
TXKIT_API void _txkit_leave_nested_cxx(void) _TXKIT_NOPLT;

/* The macros below expand in the user's code, so from C++ they cast the C++
 * way (clean under -Wold-style-cast, -Wuseless-cast and
 * -Wzero-as-null-pointer-constant): a value to type T; an object pointer to
 * void * or const void * whatever its qualifiers; the null pointer. (C++
 * before C++11 gets the C casts.) */
#ifdef _TXKIT_CXX11
#define _TXKIT_CAST(T, e) static_cast<T>(e)
#define _TXKIT_VOIDP(p) const_cast<void *>(static_cast<const volatile void *>(p))
#define _TXKIT_CVOIDP(p) const_cast<const void *>(static_cast<const volatile void *>(p))
#define _TXKIT_NULL nullptr
#else
#define _TXKIT_CAST(T, e) ((T)(e))
#define _TXKIT_VOIDP(p) ((void *)(p))
#define _TXKIT_CVOIDP(p) ((const void *)(p))
#define _TXKIT_NULL ((void *)0)
#endif

/* No always_inline function of this header calls another: under gcc
 * -fgnu-tm (a program that also has __transaction_atomic blocks) gcc 12
 * fails to compile such a call ("inlining failed in call to always_inline"),
 * so the pieces they share are macros (the runtime uses them too), and the
 * barriers' entry points (_txkit_load_sw_try, _txkit_store_undo,
 * _txkit_store_buf) are called only from the macros below and from the
 * runtime. */

/* The bit of wfine for the word at a: 10 bits of a hash of the word's
 * number (not its low bits: wbloom has those). */
#define _TXKIT_WFINE_BIT(a) _TXKIT_CAST(unsigned, (((a) >> 3) * 0x9e3779b97f4a7c15ull) >> 54)
/* The number of the wbloom bit of the word at a: bits 3-8 of its address
 * (the users shift 1ull by it themselves: gcc then tests it with bt). */
#define _TXKIT_WBLOOM_BIT(a) (_TXKIT_CAST(unsigned, (a) >> 3) & 63u)
/* Whether this transaction may have written the word at a (a uintptr_t):
 * wbloom's bit, and with fine (the runtime's own barriers) wfine's as well.
 * (!LIKELY(!bit), not UNLIKELY(bit): with the latter gcc lays the read
 * barrier out worse, 4 loads under stm 451.6 -> 460.6 instructions.) */
#define _TXKIT_MAYBE_WRITTEN(tls, a, fine)                               \
    (!TXKIT_LIKELY(!((tls)->wbloom & (1ull << _TXKIT_WBLOOM_BIT(a)))) && \
     (!(fine) || !(tls)->wfine ||                                        \
      ((tls)->wfine[_TXKIT_WFINE_BIT(a) >> 6] >> (_TXKIT_WFINE_BIT(a) & 63) & 1)))

/* The software TM read barrier, inline for aligned 4- and 8-byte loads: one
 * load, a check that the global clock did not move, one log entry (none
 * under TXKIT_ACC_NOLOG or TXKIT_ACC_NOLOG_HW: such an attempt cannot move
 * its snapshot, so it never revalidates). Returns 1 with the bytes read in
 * the low end of *out; 0 when the runtime must take the load (a moved clock,
 * a word this transaction wrote, a full log). fine: also ask wfine about a
 * word wbloom may have seen written (the runtime's barriers; compiled into
 * user code it stays 0, the size of code that every TX_LOAD inlines). */
static inline __attribute__((always_inline)) int
_txkit_load_sw_try(const void *addr, unsigned int size, unsigned int acc, int fine, uint64_t *out) {
    struct txkit_tls *tls = &_txkit_tls;
    uintptr_t a = (uintptr_t)addr;
    if ((size == 8 || size == 4) && !(a & (size - 1))) {
        /* two copies of the load on purpose: one path with the log test and
         * the log's stores folded in ran the sorted list 15-20% slower */
        if (acc & (TXKIT_ACC_NOLOG | TXKIT_ACC_NOLOG_HW)) {
            /* nothing written yet (wbloom 0: the common read-only prefix)
             * needs no look at the word's bit */
            if (TXKIT_LIKELY(!tls->wbloom) || !_TXKIT_MAYBE_WRITTEN(tls, a, fine)) {
                uint64_t v =
                    size == 8 ? *(const volatile uint64_t *)addr : *(const volatile uint32_t *)addr;
                if (TXKIT_LIKELY(*tls->clock == tls->snap &&
                                 (!(acc & TXKIT_ACC_NOLOG_HW) || *tls->hw == tls->hsnap))) {
                    *out = v;
                    return 1;
                }
            }
        } else if ((acc & (TXKIT_ACC_FASTREAD | TXKIT_ACC_FASTREAD_HW)) &&
                   !_TXKIT_MAYBE_WRITTEN(tls, a, fine) && tls->rcur != tls->rend) {
            uint64_t v =
                size == 8 ? *(const volatile uint64_t *)addr : *(const volatile uint32_t *)addr;
            if (TXKIT_LIKELY(*tls->clock == tls->snap &&
                             (!(acc & TXKIT_ACC_FASTREAD_HW) || *tls->hw == tls->hsnap))) {
                struct _txkit_rentry *r = tls->rcur++;
                r->addr = addr;
                r->val = v;
                r->size = size;
                *out = v;
                return 1;
            }
        }
    }
    return 0;
}

/* The in-place store's undo record, inline for aligned 4- and 8-byte stores
 * (TXKIT_ACC_UNDO: a transaction that runs alone, or serially, and may still
 * restart): the address, the bytes it held and their size, one entry of the
 * runtime's undo log. Returns 0 when the runtime must take the store (another
 * mode, size or alignment, a full log); 1 when the caller may now store. */
static inline __attribute__((always_inline)) int _txkit_store_undo(void *addr, unsigned int size,
                                                                   unsigned int acc) {
    struct txkit_tls *tls = &_txkit_tls;
    uintptr_t a = (uintptr_t)addr;
    if ((acc & TXKIT_ACC_UNDO) && (size == 8 || size == 4) && !(a & (size - 1)) &&
        tls->rcur != tls->rend) {
        struct _txkit_rentry *r = tls->rcur;
        uint64_t old = 0;
        __builtin_memcpy(&old, addr, size);
        tls->rcur = r + 1;
        r->addr = addr;
        r->val = old;
        r->size = size;
        return 1;
    }
    return 0;
}

/* The software TM store, inline for aligned 4- and 8-byte stores to a word
 * this transaction has not written yet (its wbloom bit clear) outside its own
 * stack frames: one write-set entry appended at wcur. Returns 0 when the
 * runtime must take the store (another mode, size or alignment, a word that
 * may be written already, the attempt's frames, no room). v: the value in the
 * low size bytes. */
static inline __attribute__((always_inline)) int
_txkit_store_buf(void *addr, uint64_t v, unsigned int size, unsigned int acc) {
    struct txkit_tls *tls = &_txkit_tls;
    uintptr_t a = (uintptr_t)addr;
    if ((acc & TXKIT_ACC_BUFSTORE) && (size == 8 || size == 4) && !(a & (size - 1)) &&
        tls->wcur < tls->wend) {
        uint64_t bit = 1ull << _TXKIT_WBLOOM_BIT(a);
        if (!(tls->wbloom & bit) && a - tls->stk_lo >= tls->stk_span) {
            struct _txkit_wentry *e = tls->wcur;
            tls->wcur = e + 1;
            tls->wbloom |= bit;
            if (size == 8) { /* a constant here: one of the two stays */
                e->word = a;
                e->data = v;
                e->mask = 0xff;
            } else {
                unsigned int sh = (unsigned int)(a & 4);
                e->word = a - sh;
                e->data = v << (8 * sh);
                e->mask = (unsigned char)(0x0f << sh);
            }
            return 1;
        }
    }
    return 0;
}

/* The bytes of the scalar lvalue x in the low end of a uint64_t. */
#define _TXKIT_BITS(x)                                \
    __extension__({                                   \
        uint64_t _txkit_b = 0;                        \
        __builtin_memcpy(&_txkit_b, &(x), sizeof(x)); \
        _txkit_b;                                     \
    })

#define _TXKIT_CAT2(a, b) a##b
#define _TXKIT_CAT(a, b) _TXKIT_CAT2(a, b)

#define _TXKIT_SITE()                                                                           \
    __extension__({                                                                             \
        static txkit_site_t _txkit_site = {__FILE__, __func__, __LINE__, 0, 0, 0, _TXKIT_NULL}; \
        &_txkit_site;                                                                           \
    })

/**
 * TX_ATOMIC - run the following statement or block as a transaction.
 */
#define TX_ATOMIC _TXKIT_ATOMIC(_TXKIT_CAT(_txkit_scope_, __LINE__))
#define _TXKIT_ATOMIC(s)                                                          \
    for (struct _txkit_scope s                                                    \
         __attribute__((cleanup(_txkit_end))) = {_txkit_begin(_TXKIT_SITE(), 0)}; \
         s.run; s.run = 0)

/* The unqualified type of *p (a cast drops qualifiers), for a scalar *p. */
#ifdef _TXKIT_CXX11
#define _TXKIT_UNQUAL(p) \
    typename std::remove_cv<typename std::remove_reference<decltype(*(p))>::type>::type
#else
#define _TXKIT_UNQUAL(p) __typeof__((__typeof__(*(p)))0)
#endif
#define _TXKIT_SIZE_OK(n) ((n) == 1 || (n) == 2 || (n) == 4 || (n) == 8)

/**
 * TX_LOAD - transactional read of *p (1/2/4/8-byte integer, pointer, float,
 * double). Outside a transaction it is a plain read.
 */
#define TX_LOAD(p)                                                                              \
    __extension__({                                                                             \
        __typeof__(p) _txkit_lp = (p);                                                          \
        _TXKIT_UNQUAL(_txkit_lp) _txkit_lv;                                                     \
        _TXKIT_STATIC_ASSERT(_TXKIT_SIZE_OK(sizeof _txkit_lv), "TX_LOAD: 1, 2, 4 or 8 bytes");  \
        unsigned int _txkit_acc = _txkit_tls.access;                                            \
        if (TXKIT_LIKELY(!(_txkit_acc & TXKIT_ACC_LOAD)))                                       \
            _txkit_lv = *_txkit_lp;                                                             \
        else {                                                                                  \
            /* the software read inline, else the runtime; by value, so that                  \
             * _txkit_lv can live in a register */ \
            uint64_t _txkit_w;                                                                  \
            if (!_txkit_load_sw_try(_TXKIT_CVOIDP(_txkit_lp), sizeof _txkit_lv, _txkit_acc, 0,  \
                                    &_txkit_w)) {                                               \
                uint64_t _txkit_t = 0; /* in memory: _txkit_w stays in a register */            \
                _txkit_load_bytes(&_txkit_t, _TXKIT_CVOIDP(_txkit_lp), sizeof _txkit_lv);       \
                _txkit_w = _txkit_t;                                                            \
            }                                                                                   \
            __builtin_memcpy(&_txkit_lv, &_txkit_w, sizeof _txkit_lv);                          \
        }                                                                                       \
        _txkit_lv;                                                                              \
    })

/**
 * TX_STORE - transactional write of v to *p. Outside a transaction it is a
 * plain write.
 */
#define TX_STORE(p, v)                                                                          \
    __extension__({                                                                             \
        __typeof__(p) _txkit_sp = (p);                                                          \
        _TXKIT_UNQUAL(_txkit_sp) _txkit_sv = (v);                                               \
        _TXKIT_STATIC_ASSERT(_TXKIT_SIZE_OK(sizeof _txkit_sv), "TX_STORE: 1, 2, 4 or 8 bytes"); \
        unsigned int _txkit_sa = _txkit_tls.access;                                             \
        if (TXKIT_LIKELY(!(_txkit_sa & TXKIT_ACC_STORE))) {                                     \
            *_txkit_sp = _txkit_sv;                                                             \
            _txkit_tls.wrote = 1;                                                               \
        } else if (_txkit_store_undo(_TXKIT_VOIDP(_txkit_sp), sizeof _txkit_sv, _txkit_sa)) {   \
            *_txkit_sp = _txkit_sv;                                                             \
        } else if (!(sizeof _txkit_sv >= 4 &&                                                   \
                     _txkit_store_buf(_TXKIT_VOIDP(_txkit_sp), _TXKIT_BITS(_txkit_sv),          \
                                      sizeof _txkit_sv, _txkit_sa)))                            \
            _txkit_store_bytes(_TXKIT_VOIDP(_txkit_sp), &_txkit_sv, sizeof _txkit_sv);          \
        (void)0;                                                                                \
    })

TXKIT_END_DECLS

#endif /* TXKIT_TX_H */
