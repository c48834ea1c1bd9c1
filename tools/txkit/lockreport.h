/* SPDX-License-Identifier: MIT */
/* lockreport.h - `txkit run --report`: the lock report of a program's run,
 * from the raw files its processes wrote (TXKIT_LOCK_REPORT=PREFIX gives
 * PREFIX.PID; format: src/cx/lockprof.c). */
#ifndef TXKIT_CLI_LOCKREPORT_H
#define TXKIT_CLI_LOCKREPORT_H

#include <stdio.h>

/* Read every PREFIX.PID file, print one report per process to out (locks
 * sorted by time lost waiting, then acquisitions; call sites symbolized),
 * and when csv is not NULL one row per lock to it (LOCKREPORT_CSV_HEADER's
 * columns; the caller writes the header); remove the files. cmd names the
 * program in the title. Returns the number of processes that took a lock,
 * -1 when a file could not be read (said on stderr). Single-threaded. */
int lockreport_print(const char *prefix, const char *cmd, FILE *out, FILE *csv);
struct jw;
/* One process's report from its text (lockfmt.h's format) read from text
 * (name: where it came from, for messages), titled with how ("run as: CMD",
 * "live, ..."), at most top locks (0: all), to out; with json, one JSON
 * object there instead (also for a process that took no lock). Returns 1
 * when the process took a lock, 0 when not, -1 when text is not a lock
 * report (said on stderr). Single-threaded. */
int lockreport_print_text(FILE *text, const char *name, const char *how, size_t top, FILE *out,
                          struct jw *json);
#define LOCKREPORT_CSV_HEADER                                                            \
    "cmd,pid,exe,seconds,threads,rtm,rank,lock,kind,acquired,contended,wait_ns,hold_ns," \
    "lost_pct,wait_p99_ns,hold_p99_ns,max_waiting,elided,top_site,top_object,lock_name"

#endif /* TXKIT_CLI_LOCKREPORT_H */
