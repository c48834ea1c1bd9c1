/* SPDX-License-Identifier: MIT */
/* cli.h - the commands of the txkit command line tool (main.c dispatches). */
#ifndef TXKIT_CLI_H
#define TXKIT_CLI_H

#include <stdio.h>

/* Exit statuses of every command: 0 success, 1 error, 2 usage error. */

/* argv[0] is the command's own name ("stat", "report"). They return the
 * exit status: 0, 1 (could not read, nothing matched), 2 (bad arguments).
 * Single-threaded (getopt state). */
int cmd_stat(int argc, char **argv);
int cmd_report(int argc, char **argv);
void stat_usage(FILE *f);
void report_usage(FILE *f);

/* "txkit CMD: MESSAGE" then "try 'txkit CMD --help'" on stderr (cmd NULL:
 * the global command line); returns 2. Single-threaded, like all of the CLI. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The usage error for getopt_long's '?' or ':' (c) at argv[optind - 1]. */
int cli_option_error(const char *cmd, char **argv, int c);

#endif /* TXKIT_CLI_H */
