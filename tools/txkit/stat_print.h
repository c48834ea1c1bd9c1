/* stat_print.h - the tables and JSON documents of `txkit stat` and `txkit report`. */
#ifndef TXKIT_CLI_STAT_PRINT_H
#define TXKIT_CLI_STAT_PRINT_H

#include <stddef.h>
#include <stdio.h>

#include "stat_data.h"

struct st_print_opts {
    const char *command; /* "stat" or "report" */
    int sites;           /* print the sites table (text) */
    size_t top;          /* at most this many sites, 0 = all */
};

void st_print_text(FILE *f, const struct st_report *r, const struct st_print_opts *o);
/* One document on one line. */
void st_print_json(FILE *f, const struct st_report *r, const struct st_print_opts *o);

#endif /* TXKIT_CLI_STAT_PRINT_H */
