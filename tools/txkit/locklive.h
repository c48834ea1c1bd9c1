/* SPDX-License-Identifier: MIT */
/* locklive.h - the live lock reports of `txkit stat --sites`: the tables of
 * running processes under `txkit run --report` (DIR/<pid>.locks, format:
 * src/stats/lockfmt.h), printed like the report at exit. */
#ifndef TXKIT_CLI_LOCKLIVE_H
#define TXKIT_CLI_LOCKLIVE_H

#include <stdint.h>
#include <stdio.h>

/* What the previous report saw of each process (txkit stat INTERVAL prints
 * each interval's counts); NULL: totals since each process started. */
struct locklive;
struct locklive *locklive_new(void);
void locklive_free(struct locklive *l);

struct jw;
/* Print the lock report of every live table in dir whose process want(pid,
 * comm, arg) selects (NULL: all), at most top locks each (0: all), to out,
 * or with json as one JSON object each (lockreport.h); with l, the counts
 * since the previous call for that process (since its start the first time).
 * Removes the files of dead processes. Returns the number of processes
 * reported, -1 when dir cannot be read (said on stderr, unless it does not
 * exist: 0). Single-threaded. */
int locklive_print(struct locklive *l, const char *dir,
                   int (*want)(uint64_t pid, const char *comm, void *arg), void *arg, size_t top,
                   FILE *out, struct jw *json);

#endif /* TXKIT_CLI_LOCKLIVE_H */
