/* SPDX-License-Identifier: MIT */
/* json.h - a small streaming JSON writer (commas and escaping handled). */
#ifndef TXKIT_CLI_JSON_H
#define TXKIT_CLI_JSON_H

#include <stdint.h>
#include <stdio.h>

#define JW_DEPTH 16

struct jw {
    FILE *f;
    int depth;
    int count[JW_DEPTH]; /* members written at each level */
};

void jw_init(struct jw *w, FILE *f);
/* key is NULL inside an array. */
void jw_object(struct jw *w, const char *key);
void jw_array(struct jw *w, const char *key);
void jw_end_object(struct jw *w);
void jw_end_array(struct jw *w);
void jw_u64(struct jw *w, const char *key, uint64_t v);
void jw_i64(struct jw *w, const char *key, int64_t v);
void jw_double(struct jw *w, const char *key, double v); /* null when not finite */
void jw_null(struct jw *w, const char *key);
void jw_bool(struct jw *w, const char *key, int v);
void jw_string(struct jw *w, const char *key, const char *s); /* invalid UTF-8 becomes U+FFFD */

#endif /* TXKIT_CLI_JSON_H */
