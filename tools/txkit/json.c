/* SPDX-License-Identifier: MIT */
/* json.c - a small streaming JSON writer. */
#include "json.h"

#include <inttypes.h>
#include <math.h>

void jw_init(struct jw *w, FILE *f) {
    w->f = f;
    w->depth = 0;
    w->count[0] = 0;
}

/* Length of the valid UTF-8 sequence at s, 0 if invalid. */
static int utf8_len(const unsigned char *s) {
    unsigned c = s[0];
    int n;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    return n;
}

static void put_string(FILE *f, const char *str) {
    const unsigned char *s = (const unsigned char *)str;
    fputc('"', f);
    while (*s) {
        unsigned c = *s;
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc((int)c, f);
            s++;
        } else if (c < 0x20 || c == 0x7f) {
            fprintf(f, "\\u%04x", c);
            s++;
        } else {
            int n = utf8_len(s);
            if (n == 0) {
                fputs("\\ufffd", f);
                s++;
            } else {
                fwrite(s, 1, (size_t)n, f);
                s += n;
            }
        }
    }
    fputc('"', f);
}

static void member(struct jw *w, const char *key) {
    if (w->count[w->depth]++)
        fputc(',', w->f);
    if (key) {
        put_string(w->f, key);
        fputc(':', w->f);
    }
}

static void open_level(struct jw *w, const char *key, int c) {
    member(w, key);
    fputc(c, w->f);
    if (w->depth + 1 < JW_DEPTH)
        w->depth++;
    w->count[w->depth] = 0;
}

void jw_object(struct jw *w, const char *key) { open_level(w, key, '{'); }
void jw_array(struct jw *w, const char *key) { open_level(w, key, '['); }

void jw_end_object(struct jw *w) {
    fputc('}', w->f);
    if (w->depth > 0)
        w->depth--;
}

void jw_end_array(struct jw *w) {
    fputc(']', w->f);
    if (w->depth > 0)
        w->depth--;
}

void jw_u64(struct jw *w, const char *key, uint64_t v) {
    member(w, key);
    fprintf(w->f, "%" PRIu64, v);
}

void jw_i64(struct jw *w, const char *key, int64_t v) {
    member(w, key);
    fprintf(w->f, "%" PRId64, v);
}

void jw_double(struct jw *w, const char *key, double v) {
    member(w, key);
    if (isfinite(v))
        fprintf(w->f, "%.15g", v);
    else
        fputs("null", w->f);
}

void jw_null(struct jw *w, const char *key) {
    member(w, key);
    fputs("null", w->f);
}

void jw_bool(struct jw *w, const char *key, int v) {
    member(w, key);
    fputs(v ? "true" : "false", w->f);
}

void jw_string(struct jw *w, const char *key, const char *s) {
    member(w, key);
    put_string(w->f, s);
}
