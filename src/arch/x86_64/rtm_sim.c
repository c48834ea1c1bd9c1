/* SPDX-License-Identifier: MIT */
/* rtm_sim.c - the RTM simulator of -DTXKIT_SIM_RTM=ON builds (see rtm.h).
 *
 * Script: TXKIT_SIM_RTM (or txkit_sim_rtm_script()) is a comma-separated list
 * of XBEGIN outcomes, taken in order by every thread together; the last one
 * repeats. Each is "start", a status number (0x6, 0xf1000001, ...) or a name:
 * conflict (0x6: conflict, may retry), capacity (0x8), zero (0x0: a system
 * call, a fault, an interrupt), retry (0x2: zero with the retry bit),
 * nested (0x20), debug (0x10), explicit:CODE (CODE << 24 | 1). Unset: conflict.
 *
 * In other builds the two entry points exist and say -ENOTSUP / 0.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/x86_64/rtm.h"
#include "runtime/core.h"


TK_EXPORT int txkit_sim_rtm_script(const char *script);
TK_EXPORT unsigned long txkit_sim_rtm_violations(void);

#ifndef TXKIT_SIM_RTM

int txkit_sim_rtm_script(const char *script) {
    (void)script;
    return -ENOTSUP;
}

unsigned long txkit_sim_rtm_violations(void) { return 0; }

#else

#define SCRIPT_MAX 64
#define WINDOW_MAX (64 * 1024) /* stack above the XBEGIN put back at an abort */
#define ALT_STACK (64 * 1024)
#define START_MARK 0xfffffffeu /* "start" in the script (not a status the CPU gives) */

static pthread_mutex_t script_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned script[SCRIPT_MAX] = {TK_XA_CONFLICT | TK_XA_RETRY};
static unsigned script_len = 1, script_pos;
static int script_loaded;
static unsigned long violations;

struct sim_thread {
    unsigned depth;
    void *jb[5], *scratch[5];
    unsigned pending;
    uintptr_t win_lo;
    size_t win_len;
    unsigned char *saved;
    unsigned char *alt;
    uintptr_t stack_hi;
};
static __thread struct sim_thread sim;

static int parse_one(const char *s, size_t n, unsigned *out) {
    char tok[48];
    if (n == 0 || n >= sizeof tok)
        return -EINVAL;
    memcpy(tok, s, n);
    tok[n] = '\0';
    static const struct {
        const char *name;
        unsigned status;
    } names[] = {{"start", START_MARK},        {"conflict", TK_XA_CONFLICT | TK_XA_RETRY},
                 {"capacity", TK_XA_CAPACITY}, {"zero", 0},
                 {"retry", TK_XA_RETRY},       {"nested", TK_XA_NESTED},
                 {"debug", TK_XA_DEBUG}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(tok, names[i].name)) {
            *out = names[i].status;
            return 0;
        }
    char *end;
    if (!strncmp(tok, "explicit:", 9)) {
        unsigned long code = strtoul(tok + 9, &end, 0);
        if (*end || end == tok + 9 || code > 0xff)
            return -EINVAL;
        *out = (unsigned)code << 24 | TK_XA_EXPLICIT;
        return 0;
    }
    unsigned long v = strtoul(tok, &end, 0);
    if (*end || end == tok || v > 0xffffffffu || v == TK_XSTARTED)
        return -EINVAL;
    *out = (unsigned)v;
    return 0;
}

static int load(const char *text) {
    unsigned next[SCRIPT_MAX], n = 0;
    for (const char *p = text;;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (n == SCRIPT_MAX || parse_one(p, len, &next[n]) != 0)
            return -EINVAL;
        n++;
        if (!c)
            break;
        p = c + 1;
    }
    memcpy(script, next, n * sizeof next[0]);
    script_len = n;
    script_pos = 0;
    return 0;
}

int txkit_sim_rtm_script(const char *text) {
    if (!text)
        return -EINVAL;
    pthread_mutex_lock(&script_lock);
    script_loaded = 1;
    int r = load(text);
    pthread_mutex_unlock(&script_lock);
    return r;
}

unsigned long txkit_sim_rtm_violations(void) {
    return __atomic_load_n(&violations, __ATOMIC_RELAXED);
}

static unsigned next_outcome(void) {
    pthread_mutex_lock(&script_lock);
    if (!script_loaded) {
        script_loaded = 1;
        const char *env = getenv("TXKIT_SIM_RTM");
        if (env && *env && load(env) != 0)
            fprintf(stderr,
                    "txkit: TXKIT_SIM_RTM=%s: not a list of XBEGIN outcomes; "
                    "using conflict\n",
                    env);
    }
    unsigned s = script[script_pos];
    if (script_pos + 1 < script_len)
        script_pos++;
    pthread_mutex_unlock(&script_lock);
    return s;
}

static void violation(const char *what, const char *where) {
    __atomic_add_fetch(&violations, 1, __ATOMIC_RELAXED);
    fprintf(stderr, "txkit: simulated RTM: %s at %s\n", what, where);
}

void **tk_sim_xbegin_slot(void) { return sim.depth ? sim.scratch : sim.jb; }

static void find_stack(void) {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        void *lo;
        size_t size;
        if (pthread_attr_getstack(&attr, &lo, &size) == 0)
            sim.stack_hi = (uintptr_t)lo + size;
        pthread_attr_destroy(&attr);
    }
    sim.saved = malloc(WINDOW_MAX);
    sim.alt = malloc(ALT_STACK);
    if (!sim.stack_hi || !sim.saved || !sim.alt) {
        fprintf(stderr, "txkit: simulated RTM: no stack bounds or memory\n");
        abort();
    }
}

__attribute__((noinline)) unsigned tk_sim_xbegin(void) {
    if (sim.depth) { /* flat nesting, as on the CPU */
        sim.depth++;
        return TK_XSTARTED;
    }
    unsigned s = next_outcome();
    if (s != START_MARK)
        return s;
    if (!sim.saved)
        find_stack();
    /* Our caller's frame and those above it, as they are now. */
    uintptr_t lo = (uintptr_t)__builtin_frame_address(0);
    size_t len = sim.stack_hi - lo < WINDOW_MAX ? sim.stack_hi - lo : WINDOW_MAX;
    memcpy(sim.saved, (const void *)lo, len);
    sim.win_lo = lo;
    sim.win_len = len;
    sim.depth = 1;
    return TK_XSTARTED;
}

unsigned tk_sim_resumed(void) { return sim.pending; }

void tk_sim_xend(const char *where) {
    if (!sim.depth) {
        violation("XEND outside a transaction (#GP on the CPU)", where);
        abort();
    }
    sim.depth--;
}

int tk_sim_xtest(void) { return sim.depth != 0; }

/* On the alternate stack: put the window back and return to the XBEGIN. */
static __attribute__((noreturn, noinline)) void rewind_to_xbegin(void) {
    memcpy((void *)sim.win_lo, sim.saved, sim.win_len);
    __builtin_longjmp(sim.jb, 1);
}

void tk_sim_xabort(unsigned code, const char *where) {
    if (!sim.depth) {
        violation("XABORT outside a transaction (a no-op on the CPU)", where);
        return;
    }
    sim.depth = 0;
    sim.pending = (code & 0xffu) << 24 | TK_XA_EXPLICIT;
    /* The window holds our own frames: leave it before writing it. */
    uintptr_t top = ((uintptr_t)sim.alt + ALT_STACK) & ~(uintptr_t)15;
    __asm__ volatile("mov %0, %%rsp\n\tcall *%1" : : "r"(top), "r"(rewind_to_xbegin) : "memory");
    __builtin_unreachable();
}

#endif
