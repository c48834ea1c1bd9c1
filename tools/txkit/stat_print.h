/* SPDX-License-Identifier: MIT */
/* stat_print.h - the tables and JSON documents of `txkit stat` and `txkit report`. */
#ifndef TXKIT_CLI_STAT_PRINT_H
#define TXKIT_CLI_STAT_PRINT_H

#include <stddef.h>
#include <stdio.h>

#include "stat_data.h"

struct jw;
struct st_print_opts {
    const char *command; /* "stat" or "report" */
    int sites;           /* print the sites table (text) */
    size_t top;          /* at most this many sites, 0 = all */
    /* JSON: more members of the report's object, written last (or NULL). */
    void (*json_extra)(struct jw *w, void *arg);
    void *json_arg;
};

/* The detailed report: a title, one row per process and the total, counters,
 * sites with o->sites. Single-threaded (the symbolizer's cache). */
void st_print_text(FILE *f, const struct st_report *r, const struct st_print_opts *o);
/* The vmstat-like view of `txkit stat INTERVAL`: the column header (once),
 * then one line per report: rates per second over the interval, or averaged
 * over each process's life for the first report. At most 100 columns. */
void st_print_line_header(FILE *f);
void st_print_line(FILE *f, const struct st_report *r);
/* One document on one line. */
void st_print_json(FILE *f, const struct st_report *r, const struct st_print_opts *o);

#endif /* TXKIT_CLI_STAT_PRINT_H */
