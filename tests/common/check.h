/* SPDX-License-Identifier: MIT */
/* check.h - the one family of checks every txkit test uses: CHECK, CHECK_EQ,
 * CHECK_MSG. Usable from C and C++, needs libc only (the preload test links
 * no txkit; the gcc -fgnu-tm programs also run on GCC's libitm).
 *
 * The checks are plain code (not assert()), so no build type compiles them
 * away: a failure prints file:line, the function and the expression (with
 * CHECK_EQ both values, with CHECK_MSG an explanation), then calls abort().
 * They may be used inside transactions, gcc -fgnu-tm ones included: the
 * failure functions are transaction_pure (what they print is not undone;
 * they end the process).
 */
#ifndef TXKIT_TESTS_CHECK_H
#define TXKIT_TESTS_CHECK_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#if defined(__GNUC__) && !defined(__clang__)
#define TK_CHECK_PURE __attribute__((transaction_pure))
#else
#define TK_CHECK_PURE
#endif

/* A program may define tk_check_context() to say where it was (its round,
 * its threads) before a failure report. It runs on the failing thread, inside
 * the failed transaction if there is one. Weak: no program has to. */
#ifdef __cplusplus
extern "C"
#endif
    TK_CHECK_PURE void
    tk_check_context(void) __attribute__((weak));

/* The start of every failure report: what stdout holds, then the context. */
TK_CHECK_PURE __attribute__((cold, unused)) static void tk_fail_begin(void) {
    fflush(stdout);
    if (tk_check_context)
        tk_check_context();
}

/* The end of every failure report: file:line, the function, what failed. */
TK_CHECK_PURE __attribute__((noreturn, cold, unused)) static void
tk_fail_end(const char *file, int line, const char *func, const char *what) {
    fprintf(stderr, "%s:%d: in %s(): CHECK FAILED: %s\n", file, line, func, what);
    fflush(stderr);
    abort();
}

/* Report a failed check and abort(). Any thread, any time, inside a
 * transaction or not. */
TK_CHECK_PURE __attribute__((noreturn, cold, unused)) static void
tk_fail(const char *file, int line, const char *func, const char *what) {
    tk_fail_begin();
    tk_fail_end(file, line, func, what);
}

/* Report a failed CHECK_EQ with both values and abort(). Any thread, any time. */
TK_CHECK_PURE __attribute__((noreturn, cold, unused)) static void
tk_fail_eq(const char *file, int line, const char *func, const char *a, const char *b, long long va,
           long long vb) {
    tk_fail_begin();
    fprintf(stderr,
            "%s:%d: in %s(): CHECK FAILED: %s == %s\n    left:  %lld (0x%llx)\n"
            "    right: %lld (0x%llx)\n",
            file, line, func, a, b, va, (unsigned long long)va, vb, (unsigned long long)vb);
    fflush(stderr);
    abort();
}

/* Report a failed CHECK_MSG (printf-style explanation first) and abort().
 * Any thread, any time. */
TK_CHECK_PURE __attribute__((noreturn, cold, unused, format(printf, 5, 6))) static void
tk_fail_msg(const char *file, int line, const char *func, const char *what, const char *fmt, ...) {
    va_list ap;
    tk_fail_begin();
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    tk_fail_end(file, line, func, what);
}

/* CHECK(expr): expr must be true. */
#define CHECK(expr)                                       \
    do {                                                  \
        if (!(expr))                                      \
            tk_fail(__FILE__, __LINE__, __func__, #expr); \
    } while (0)

/* CHECK_EQ(a, b): integers (or pointers) compared as 64-bit values; both
 * values are printed on failure. */
#define CHECK_EQ(a, b)                                                        \
    do {                                                                      \
        long long tk_va_ = (long long)(a);                                    \
        long long tk_vb_ = (long long)(b);                                    \
        if (tk_va_ != tk_vb_)                                                 \
            tk_fail_eq(__FILE__, __LINE__, __func__, #a, #b, tk_va_, tk_vb_); \
    } while (0)

/* CHECK_MSG(expr, fmt, ...): like CHECK with a formatted explanation. */
#define CHECK_MSG(expr, ...)                                               \
    do {                                                                   \
        if (!(expr))                                                       \
            tk_fail_msg(__FILE__, __LINE__, __func__, #expr, __VA_ARGS__); \
    } while (0)

#endif /* TXKIT_TESTS_CHECK_H */
