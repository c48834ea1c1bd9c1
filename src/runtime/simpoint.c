/* SPDX-License-Identifier: MIT */
/* simpoint.c - the stall points of simpoint.h, and their test API:
 *   int txkit_sim_stall(const char *point, unsigned usec)
 *       arms `point`: the next thread to pass it sleeps usec microseconds
 *       (once); 0, or -ENOTSUP in builds without the simulator;
 *   unsigned long txkit_sim_stalls(void)
 *       how many stalls have begun so far (a test waits for its one).
 * One point armed at a time. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "runtime/core.h"
#include "runtime/simpoint.h"

TK_EXPORT int txkit_sim_stall(const char *point, unsigned usec);
TK_EXPORT unsigned long txkit_sim_stalls(void);

#ifndef TXKIT_SIM_RTM

int txkit_sim_stall(const char *point, unsigned usec) {
    (void)point;
    (void)usec;
    return -ENOTSUP;
}

unsigned long txkit_sim_stalls(void) { return 0; }

#else

static char armed_name[64];
static unsigned armed_usec;
static int armed; /* 1: armed_name/armed_usec are set and nobody took them */
static unsigned long stalls;

int txkit_sim_stall(const char *point, unsigned usec) {
    if (!point || strlen(point) >= sizeof armed_name)
        return -EINVAL;
    strcpy(armed_name, point);
    armed_usec = usec;
    __atomic_store_n(&armed, 1, __ATOMIC_RELEASE);
    return 0;
}

unsigned long txkit_sim_stalls(void) { return __atomic_load_n(&stalls, __ATOMIC_ACQUIRE); }

void tk_sim_point(const char *name) {
    if (!__atomic_load_n(&armed, __ATOMIC_ACQUIRE) || strcmp(name, armed_name) != 0)
        return;
    int one = 1;
    if (!__atomic_compare_exchange_n(&armed, &one, 0, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        return; /* another thread took it */
    __atomic_add_fetch(&stalls, 1, __ATOMIC_RELEASE);
    struct timespec ts = {(time_t)(armed_usec / 1000000), (long)(armed_usec % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

#endif
