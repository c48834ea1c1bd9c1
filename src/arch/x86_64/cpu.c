/* SPDX-License-Identifier: MIT */
/* cpu.c - RTM detection: CPUID bits first, then a probe of real transactions.
 *
 * XBEGIN raises #UD on a CPU without RTM, so nothing here executes it unless
 * CPUID says RTM exists and microcode has not forced every transaction to
 * abort (RTM_ALWAYS_ABORT, TSX_FORCE_ABORT).
 */
#include <cpuid.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <txkit/stats.h>

#include "arch/x86_64/cpu.h"

#define PROBE_TRIES 64

static struct txkit_rtm_info detected;
static pthread_once_t detect_once = PTHREAD_ONCE_INIT;

__attribute__((target("rtm"), noinline)) static int probe_rtm(int tries) {
    int commits = 0;
    for (int i = 0; i < tries; i++) {
        unsigned status;
        __asm__ __volatile__("mov $-1, %%eax\n\t"
                             "xbegin 1f\n\t"
                             "xend\n"
                             "1:"
                             : "=a"(status)
                             :
                             : "memory");
        if (status == TK_XSTARTED)
            commits++;
    }
    return commits;
}

/* TXKIT_RTM=off: use no hardware transaction even where RTM works (every
 * path then runs as on a CPU without it: software TM, cx locks as locks, no
 * elision). 1 if set so, 0 if unset or "on"; a value not understood is said
 * once on stderr and ignored. */
static int rtm_disabled_by_env(void) {
    const char *v = getenv("TXKIT_RTM");
    if (!v || !*v || strcmp(v, "on") == 0 || strcmp(v, "1") == 0)
        return 0;
    if (strcmp(v, "off") == 0 || strcmp(v, "0") == 0)
        return 1;
    fprintf(stderr, "txkit: TXKIT_RTM=%s: expected on or off; using on\n", v);
    return 0;
}

static void detect(void) {
    struct txkit_rtm_info *r = &detected;
    unsigned a = 0, b = 0, c = 0, d = 0;
    memset(r, 0, sizeof *r);
    int off = rtm_disabled_by_env();
#ifdef TXKIT_SIM_RTM
    memcpy(r->vendor, "simulated", 10);
    r->cpuid_rtm = 1;
    r->usable = !off;
    snprintf(r->reason, sizeof r->reason, "simulated RTM (a -DTXKIT_SIM_RTM=ON test build)%s",
             off ? ", not used: TXKIT_RTM=off" : "");
    (void)probe_rtm; /* never XBEGIN for real here */
    return;
#endif
    if (__get_cpuid(0, &a, &b, &c, &d)) {
        memcpy(r->vendor, &b, 4);
        memcpy(r->vendor + 4, &d, 4);
        memcpy(r->vendor + 8, &c, 4);
        r->vendor[12] = '\0';
    }
    if (a < 7 || !__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
        snprintf(r->reason, sizeof r->reason, "CPUID leaf 7 not available");
        return;
    }
    r->cpuid_hle = (b >> 4) & 1;
    r->cpuid_rtm = (b >> 11) & 1;
    r->rtm_always_abort = (d >> 11) & 1;
    r->tsx_force_abort = (d >> 13) & 1;
    if (!r->cpuid_rtm) {
        snprintf(r->reason, sizeof r->reason, "CPUID: no RTM (leaf 7 EBX bit 11 clear, %.12s CPU)",
                 r->vendor);
        return;
    }
    if (r->rtm_always_abort) {
        snprintf(r->reason, sizeof r->reason,
                 "CPUID: RTM_ALWAYS_ABORT (TSX disabled by microcode)");
        return;
    }
    if (off) {
        snprintf(r->reason, sizeof r->reason, "TXKIT_RTM=off: RTM present but not used");
        return;
    }
    r->probe_tries = PROBE_TRIES;
    r->probe_commits = probe_rtm(PROBE_TRIES);
    if (r->probe_commits == 0) {
        snprintf(r->reason, sizeof r->reason, "probe: 0 of %d empty transactions committed%s",
                 PROBE_TRIES, r->tsx_force_abort ? " (TSX_FORCE_ABORT set)" : "");
        return;
    }
    r->usable = 1;
    snprintf(r->reason, sizeof r->reason, "CPUID RTM, probe: %d of %d empty transactions committed",
             r->probe_commits, PROBE_TRIES);
}

void tk_cpu_detect(struct txkit_rtm_info *out) {
    pthread_once(&detect_once, detect);
    if (out)
        *out = detected;
}
