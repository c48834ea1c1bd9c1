/* SPDX-License-Identifier: MIT */
/* cpu.h - x86-64 specifics: timestamps, spin hints, RTM status bits. */
#ifndef TK_ARCH_CPU_H
#define TK_ARCH_CPU_H

#include <stdint.h>

static inline uint64_t tk_rdtsc(void) {
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

/* Never call inside a hardware transaction: pause aborts it (RTM-FACTS). */
static inline void tk_cpu_relax(void) { __asm__ __volatile__("pause" ::: "memory"); }

/* RTM abort status bits (Intel SDM, XBEGIN). */
#define TK_XSTARTED (~0u)
#define TK_XA_EXPLICIT (1u << 0)
#define TK_XA_RETRY (1u << 1)
#define TK_XA_CONFLICT (1u << 2)
#define TK_XA_CAPACITY (1u << 3)
#define TK_XA_DEBUG (1u << 4)
#define TK_XA_NESTED (1u << 5)
#define TK_XA_CODE(s) (((s) >> 24) & 0xffu)

/* Explicit abort codes txkit owns (ck-style: named, in one reserved range). */
#define TK_XCODE_LOCKED 0xf1        /* the global clock was odd: a serial tx runs */
#define TK_XCODE_RESTART 0xf2       /* tx_restart() */
#define TK_XCODE_IRREVOCABLE 0xf3   /* tx_irrevocable() */
#define TK_XCODE_INJECT 0xf4        /* fault injection */
#define TK_XCODE_CANCEL_OUTER 0xf5  /* __transaction_cancel of the whole transaction */
#define TK_XCODE_CANCEL_NESTED 0xf6 /* __transaction_cancel of a nested one: redo in software */
#define TK_XCODE_SERIAL 0xf7        /* needs an undo log in place (_ITM_dropReferences): serial */
#define TK_XCODE_IRR_OTHER 0xf8     /* another thread is irrevocable: go on in software */
#define TK_XCODE_SOFTWARE 0xf9      /* needs what only software keeps (an undo action) */
#define TK_XCODE_IRR_CX 0xfa        /* tx_irrevocable() after entering a cx lock: serial */

struct txkit_rtm_info;
/* Detect once (CPUID, then a probe when CPUID allows); thread-safe. */
void tk_cpu_detect(struct txkit_rtm_info *out) __attribute__((visibility("hidden")));

#endif /* TK_ARCH_CPU_H */
