/* SPDX-License-Identifier: MIT */
// txkit.hpp - C++17 interface: atomic blocks as lambdas, handlers as closures.
//
//     int v = txkit::atomic([&] {
//         int x = txkit::load(&shared);
//         txkit::store(&shared, x + 1);
//         txkit::on_commit([=] { std::printf("now %d\n", x + 1); });
//         return x;
//     });
//
// Exceptions: an exception that leaves the lambda *commits* the transaction
// (if the attempt is still valid) and then propagates out of txkit::atomic, as
// with gcc's __transaction_atomic. If the attempt turns out to be invalid at
// that commit, the exception was the product of a stale view: it is discarded
// and the transaction runs again.
//
// Software aborts unwind the lambda with an internal exception
// (txkit::detail::restart_signal), so destructors of locals run. Do not
// swallow it with catch (...) without rethrowing; if you do, the attempt stays
// doomed (stores are dropped) and is retried when the lambda returns.
#ifndef TXKIT_HPP
#define TXKIT_HPP

#if !defined(__cplusplus) || __cplusplus < 201703L
#error \
    "txkit.hpp needs C++17 or later (compile with -std=c++17); from C or older C++, include <txkit.h>"
#else

#include <txkit.h>

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace txkit {

namespace detail {

struct restart_signal {};

[[noreturn]] inline void throw_restart() { throw restart_signal{}; }

template <class F> void call_and_delete(void *p) {
    F *f = static_cast<F *>(p);
    (*f)();
    delete f;
}

template <class F> void delete_only(void *p) { delete static_cast<F *>(p); }

template <class F> void call_copy(void *p) { (*static_cast<F *>(p))(); }

struct nested_guard {
    ~nested_guard() { _txkit_leave_nested_cxx(); }
};

} // namespace detail

/// Run f() as a transaction and return its value (see the top of this file).
template <class F>
auto atomic(F &&f, const char *file = __builtin_FILE(), int line = __builtin_LINE())
    -> std::invoke_result_t<F &> {
    using R = std::invoke_result_t<F &>;
    // One site per lambda type, i.e. per call site in practice; the runtime
    // fills in file and line the first time the site is seen.
    static txkit_site_t site;
    for (;;) {
        if (_txkit_begin_cxx(&site, file, line, &detail::throw_restart) == 2) {
            detail::nested_guard g; // flat nesting: the outermost commits
            return f();
        }
        try {
            if constexpr (std::is_void_v<R>) {
                f();
                if (_txkit_commit_cxx())
                    return;
            } else if constexpr (std::is_reference_v<R>) {
                R v = f();
                if (_txkit_commit_cxx())
                    return static_cast<R>(v);
            } else {
                R v = f();
                if (_txkit_commit_cxx())
                    return v; /* moved: move-only results work */
            }
        } catch (const detail::restart_signal &) {
            // already rolled back by the runtime: run again
        } catch (...) {
            if (_txkit_commit_cxx())
                throw;
        }
    }
}

/// Transactional read (a plain read outside transactions).
template <class T> inline T load(const T *p) { return TX_LOAD(p); }

/// Transactional write (a plain write outside transactions).
template <class T, class U> inline void store(T *p, U &&v) {
    TX_STORE(p, static_cast<T>(std::forward<U>(v)));
}

/// Run f once after the transaction commits (at once outside a transaction).
template <class F> void on_commit(F &&f) {
    using Fn = std::decay_t<F>;
    if constexpr (std::is_trivially_copyable_v<Fn> && alignof(Fn) <= alignof(std::max_align_t)) {
        Fn copy(std::forward<F>(f));
        if (tx_on_commit_copy(&detail::call_copy<Fn>, &copy, sizeof copy) != 0)
            throw std::bad_alloc();
    } else {
        if (!tx_in_transaction()) {
            Fn g(std::forward<F>(f));
            g();
            return;
        }
        Fn *p = new Fn(std::forward<F>(f));
        // A software abort discards the commit registration: free the closure then.
        if (tx_on_abort(&detail::delete_only<Fn>, p) != 0 ||
            tx_on_commit(&detail::call_and_delete<Fn>, p) != 0) {
            throw std::bad_alloc();
        }
    }
}

/// Run f each time the current attempt aborts (see tx_on_abort()).
template <class F> void on_abort(F &&f) {
    using Fn = std::decay_t<F>;
    if (!tx_in_transaction())
        return;
    Fn *p = new Fn(std::forward<F>(f));
    if (tx_on_abort(&detail::call_and_delete<Fn>, p) != 0 ||
        tx_on_commit(&detail::delete_only<Fn>, p) != 0) {
        throw std::bad_alloc();
    }
}

/// Abort the current attempt and retry.
[[noreturn]] inline void restart() { tx_restart(); }

/// Make the rest of the transaction irrevocable (before I/O).
inline void irrevocable() { tx_irrevocable(); }

/// Nesting depth, 0 outside transactions.
inline int in_transaction() { return tx_in_transaction(); }

} // namespace txkit

#endif // C++17
#endif // TXKIT_HPP
