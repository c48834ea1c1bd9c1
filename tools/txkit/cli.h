/* cli.h - the commands of the txkit command line tool (main.c dispatches). */
#ifndef TXKIT_CLI_H
#define TXKIT_CLI_H

#include <stdio.h>

/* argv[0] is the command's own name ("stat", "report"). They return the
 * exit status: 0, 1 (could not read), 2 (bad arguments). */
int cmd_stat(int argc, char **argv);
int cmd_report(int argc, char **argv);
void stat_usage(FILE *f);
void report_usage(FILE *f);

#endif /* TXKIT_CLI_H */
