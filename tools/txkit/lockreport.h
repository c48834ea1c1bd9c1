/* SPDX-License-Identifier: MIT */
/* lockreport.h - `txkit run --report`: the lock report of a program's run,
 * from the raw files its processes wrote (TXKIT_LOCK_REPORT=PREFIX gives
 * PREFIX.PID; format: src/cx/lockprof.c). */
#ifndef TXKIT_CLI_LOCKREPORT_H
#define TXKIT_CLI_LOCKREPORT_H

#include <stdio.h>

/* Read every PREFIX.PID file, print one report per process to out (locks
 * sorted by time lost waiting, then acquisitions; call sites symbolized),
 * remove the files. cmd names the program in the title. Returns the number
 * of processes reported, -1 when a file could not be read (said on stderr).
 * Single-threaded. */
int lockreport_print(const char *prefix, const char *cmd, FILE *out);

#endif /* TXKIT_CLI_LOCKREPORT_H */
