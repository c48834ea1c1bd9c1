/* SPDX-License-Identifier: MIT */
/* symbolize.h - naming code by an object file's ELF symbol tables.
 *
 * The runtime names a site with dladdr(), which sees exported (dynamic)
 * symbols only: code in a static function, or in an executable built without
 * -rdynamic, is published as "0xOFFSET" from the object's load address. The
 * CLI reads the object's .symtab (else .dynsym) itself to turn that into
 * symbol+offset, and asks addr2line (binutils), when it is installed, for the
 * source file and line of an object built with debug information.
 */
#ifndef TXKIT_CLI_SYMBOLIZE_H
#define TXKIT_CLI_SYMBOLIZE_H

#include <stddef.h>

/* A site's code: object is the file dladdr named (a relative name is looked
 * up in /proc/PID/maps of pid, when pid is not 0), func its "symbol+0xN" or
 * "0xOFFSET" (from the load address). sym gets "symbol+0xN" (func itself
 * when it already names a symbol, "" when nothing covers the address); line
 * gets "file.c:LINE" when want_line and debug information says, else "".
 * Returns 0 when sym was filled. The object is untrusted: every table is
 * bounds-checked. Results are cached. Single-threaded (the CLI's threads are one). */
int sym_lookup(const char *object, const char *func, unsigned long long pid, int want_line,
               char *sym, size_t slen, char *line, size_t llen);

#endif /* TXKIT_CLI_SYMBOLIZE_H */
