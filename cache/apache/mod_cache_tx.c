/* SPDX-License-Identifier: MIT */
/* mod_cache_tx.c - an Apache 2.4 mod_cache provider ("CacheEnable tx /")
 * over the txcache core (cache/core/txcache.h): the in-memory cache of
 * "Transactifying Apache" (Apache 2.2's mod_mem_cache), whose one hot lock
 * can be a mutex, gcc transactions or a txkit cx lock (TxCacheSync).
 *
 * One cache per child process, created in child_init: the parent never serves
 * requests, and a cache made after fork owns its lock and memory outright.
 * Entries hold mod_cache's headers (meta) and the body; hits are zero-copy:
 * recall_body hands out a bucket pointing into the entry that holds its own
 * reference, so an entry evicted while it is being sent stays valid.
 *
 * Vary: mod_cache leaves variants to the provider. A response with Vary is
 * stored under its URL key as a small "vary marker" entry listing the header
 * names, and under a second key made from the URL and the request's values of
 * those headers; open_entity follows the marker. */

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "apr_buckets.h"
#include "apr_lib.h"
#include "apr_strings.h"
#include "ap_provider.h"
#include "httpd.h"
#include "http_config.h"
#include "http_core.h"
#include "http_log.h"
#include "http_protocol.h"
#include "mod_cache.h"
#include "mod_status.h"

#include <txkit/stats.h>

#include "txcache.h"

module AP_MODULE_DECLARE_DATA cache_tx_module;

/* ------------------------------------------------------------ configuration */

typedef struct {
    struct txc_config cfg;
} txm_conf;

static void *txm_create_server_config(apr_pool_t *p, server_rec *s) {
    (void)s;
    txm_conf *c = apr_pcalloc(p, sizeof *c);
    txc_config_default(&c->cfg);
    return c;
}

/* Unsigned decimal, with an optional K/M/G suffix (powers of 1024) when
 * sizes is set. NULL, or an error message naming the directive. */
static const char *parse_u64(cmd_parms *cmd, const char *arg, int sizes, uint64_t *out) {
    const char *name = cmd->cmd->name;
    const char *s = arg;
    uint64_t v = 0;
    if (!apr_isdigit(*s))
        return apr_psprintf(cmd->pool, "%s: '%s' is not a non-negative integer", name, arg);
    for (; apr_isdigit(*s); s++) {
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return apr_psprintf(cmd->pool, "%s: '%s' is too large", name, arg);
        v = v * 10 + d;
    }
    uint64_t mult = 1;
    if (*s && sizes) {
        switch (apr_toupper(*s)) {
        case 'K':
            mult = 1ull << 10;
            break;
        case 'M':
            mult = 1ull << 20;
            break;
        case 'G':
            mult = 1ull << 30;
            break;
        default:
            return apr_psprintf(cmd->pool, "%s: '%s' has an unknown suffix (use K, M or G)", name,
                                arg);
        }
        s++;
    }
    if (*s)
        return apr_psprintf(cmd->pool, "%s: '%s' is not a%s", name, arg,
                            sizes ? " size (N, NK, NM or NG)" : "n integer");
    if (v > UINT64_MAX / mult)
        return apr_psprintf(cmd->pool, "%s: '%s' is too large", name, arg);
    *out = v * mult;
    return NULL;
}

static txm_conf *cmd_conf(cmd_parms *cmd, const char **err) {
    /* One cache per process: its settings are global, not per virtual host. */
    *err = ap_check_cmd_context(cmd, GLOBAL_ONLY);
    return ap_get_module_config(cmd->server->module_config, &cache_tx_module);
}

static const char *set_sync(cmd_parms *cmd, void *d, const char *arg) {
    (void)d;
    const char *err;
    txm_conf *c = cmd_conf(cmd, &err);
    if (err)
        return err;
    if (txc_sync_parse(arg, &c->cfg.sync) != 0)
        return apr_psprintf(cmd->pool, "TxCacheSync: '%s' is not one of lock, tx, cx, rwlock", arg);
    return NULL;
}

static const char *set_policy(cmd_parms *cmd, void *d, const char *arg) {
    (void)d;
    const char *err;
    txm_conf *c = cmd_conf(cmd, &err);
    if (err)
        return err;
    if (txc_policy_parse(arg, &c->cfg.policy) != 0)
        return apr_psprintf(cmd->pool, "TxCacheRemovalAlgorithm: '%s' is not one of LRU, GDSF",
                            arg);
    return NULL;
}

static const char *set_number(cmd_parms *cmd, void *d, const char *arg) {
    (void)d;
    const char *err;
    txm_conf *c = cmd_conf(cmd, &err);
    if (err)
        return err;
    size_t off = (size_t)cmd->info;
    uint64_t *field = (uint64_t *)((char *)&c->cfg + off);
    return parse_u64(cmd, arg, off != offsetof(struct txc_config, max_objects), field);
}

#define FIELD(f) ((void *)offsetof(struct txc_config, f))
static const command_rec txm_cmds[] = {
    AP_INIT_TAKE1(
        "TxCacheSync", set_sync, NULL, RSRC_CONF,
        "How the cache is synchronized: lock, tx (gcc transactions), cx (txkit cx lock) or "
        "rwlock (reader-writer lock)"),
    AP_INIT_TAKE1("TxCacheRemovalAlgorithm", set_policy, NULL, RSRC_CONF,
                  "Eviction priority: LRU or GDSF"),
    AP_INIT_TAKE1("TxCacheMaxObjects", set_number, FIELD(max_objects), RSRC_CONF,
                  "Most objects cached at once per process (0: no limit)"),
    AP_INIT_TAKE1("TxCacheMaxBytes", set_number, FIELD(max_bytes), RSRC_CONF,
                  "Most bytes cached per process, K/M/G suffixes (0: no limit)"),
    AP_INIT_TAKE1("TxCacheMinObjectSize", set_number, FIELD(min_object_size), RSRC_CONF,
                  "Smallest body cached, in bytes (K/M/G suffixes)"),
    AP_INIT_TAKE1("TxCacheMaxObjectSize", set_number, FIELD(max_object_size), RSRC_CONF,
                  "Largest body cached, in bytes (K/M/G suffixes)"),
    {NULL},
};

/* ------------------------------------------------------- per-process state */

static txc_cache *g_cache; /* this child's cache; NULL in the parent */
static const struct txc_config *g_cfg;

/* txkit application counters, summed over the children by `txkit stat`. */
enum {
    C_HITS,
    C_MISSES,
    C_REVALIDATIONS,
    C_STORES,
    C_NOT_STORED,
    C_TOO_LARGE,
    C_EVICTIONS,
    C_REMOVALS,
    C_OBJECTS,
    C_BYTES,
    C_COUNT
};
static const struct {
    const char *name;
    int kind;
} counter_defs[C_COUNT] = {
    [C_HITS] = {"cache_tx.hits", TXKIT_COUNTER_EVENTS},
    [C_MISSES] = {"cache_tx.misses", TXKIT_COUNTER_EVENTS},
    [C_REVALIDATIONS] = {"cache_tx.revalidations", TXKIT_COUNTER_EVENTS},
    [C_STORES] = {"cache_tx.stores", TXKIT_COUNTER_EVENTS},
    [C_NOT_STORED] = {"cache_tx.not_stored", TXKIT_COUNTER_EVENTS},
    [C_TOO_LARGE] = {"cache_tx.too_large", TXKIT_COUNTER_EVENTS},
    [C_EVICTIONS] = {"cache_tx.evictions", TXKIT_COUNTER_EVENTS},
    [C_REMOVALS] = {"cache_tx.removals", TXKIT_COUNTER_EVENTS},
    [C_OBJECTS] = {"cache_tx.objects", TXKIT_COUNTER_LEVEL},
    [C_BYTES] = {"cache_tx.bytes", TXKIT_COUNTER_LEVEL},
};
static txkit_counter_t *g_ctr[C_COUNT];
/* The same numbers kept here too, for /server-status. */
static uint64_t g_local[C_COUNT];

static void count(int which, int64_t delta) {
    __atomic_fetch_add(&g_local[which], (uint64_t)delta, __ATOMIC_RELAXED);
    txkit_counter_add(g_ctr[which], delta); /* a no-op on NULL (stats off) */
}

/* Levels and evictions change only on inserts and removals: refreshed there. */
static void sync_levels(void) {
    struct txc_stats st;
    txc_stats_get(g_cache, &st);
    __atomic_store_n(&g_local[C_OBJECTS], st.objects, __ATOMIC_RELAXED);
    __atomic_store_n(&g_local[C_BYTES], st.bytes, __ATOMIC_RELAXED);
    __atomic_store_n(&g_local[C_EVICTIONS], st.evictions, __ATOMIC_RELAXED);
    txkit_counter_set(g_ctr[C_OBJECTS], (int64_t)st.objects);
    txkit_counter_set(g_ctr[C_BYTES], (int64_t)st.bytes);
    txkit_counter_set(g_ctr[C_EVICTIONS], (int64_t)st.evictions);
}

/* ------------------------------------------------------------ entry format */

#define TXM_MAGIC 0x31435854u /* "TXC1" */
enum { KIND_RESPONSE = 0, KIND_VARY = 1 };

/* The meta bytes of an entry: this header, then the URL key (name_len
 * bytes), then nresp response and nreq request headers as "name\0value\0".
 * A vary marker has no headers; its body lists header names, each followed
 * by \0, ended by an empty name (and padded with \0 to the minimum size). */
struct txm_meta {
    uint32_t magic;
    uint32_t kind;
    uint32_t header_only; /* a HEAD response: never serves a GET */
    uint32_t name_len;
    uint32_t nresp, nreq;
    cache_info info;
};

typedef struct {
    const char *name;   /* mod_cache's key */
    const char *key;    /* the cache key: name, or name plus Vary values */
    txc_entry *entry;   /* an opened entry (a reference): recall_body's source */
    txc_entry *builder; /* an entry being stored */
    apr_off_t expected; /* the body length announced to create_entity, or -1 */
    apr_off_t body_len; /* bytes appended so far */
    int done;           /* the body is complete (EOS seen, or copied) */
    int failed;         /* give up storing this response */
} txm_obj;

static apr_status_t obj_cleanup(void *data) {
    txm_obj *o = data;
    if (o->builder) {
        txc_entry_abandon(o->builder);
        o->builder = NULL;
    }
    if (o->entry) {
        txc_entry_release(o->entry);
        o->entry = NULL;
    }
    return APR_SUCCESS;
}

static txm_obj *obj_new(cache_handle_t *h, request_rec *r, const char *name) {
    cache_object_t *obj = apr_pcalloc(r->pool, sizeof *obj);
    txm_obj *o = apr_pcalloc(r->pool, sizeof *o);
    obj->key = o->name = o->key = apr_pstrdup(r->pool, name);
    obj->vobj = o;
    o->expected = -1;
    h->cache_obj = obj;
    /* Entries are not pool memory: the request's references go with it. */
    apr_pool_cleanup_register(r->pool, o, obj_cleanup, apr_pool_cleanup_null);
    return o;
}

/* A growable byte buffer in a pool, for meta and marker bodies. */
typedef struct {
    apr_pool_t *pool;
    char *p;
    size_t len, cap;
} txm_buf;

static void *buf_claim(txm_buf *b, size_t n) {
    if (b->cap - b->len < n) {
        size_t cap = b->cap ? b->cap : 512;
        while (cap - b->len < n)
            cap *= 2;
        char *p = apr_palloc(b->pool, cap);
        if (b->len)
            memcpy(p, b->p, b->len);
        b->p = p;
        b->cap = cap;
    }
    void *at = b->p + b->len;
    b->len += n;
    return at;
}

static void buf_put(txm_buf *b, const void *data, size_t n) { memcpy(buf_claim(b, n), data, n); }

/* Serialize headers as [name\0value\0]*, counted in *n. */
static void put_table(txm_buf *b, apr_table_t *t, uint32_t *n) {
    const apr_array_header_t *arr = apr_table_elts(t);
    const apr_table_entry_t *e = (const apr_table_entry_t *)arr->elts;
    *n = 0;
    for (int i = 0; i < arr->nelts; i++) {
        if (!e[i].key || !e[i].val)
            continue;
        buf_put(b, e[i].key, strlen(e[i].key) + 1);
        buf_put(b, e[i].val, strlen(e[i].val) + 1);
        (*n)++;
    }
}

/* Parse n "name\0value\0" pairs from [*p, end) into t. 0, or -1 if malformed. */
static int get_table(const char **p, const char *end, uint32_t n, apr_table_t *t) {
    for (uint32_t i = 0; i < n; i++) {
        const char *k = *p;
        const char *kz = k < end ? memchr(k, '\0', (size_t)(end - k)) : NULL;
        if (!kz)
            return -1;
        const char *v = kz + 1;
        const char *vz = v < end ? memchr(v, '\0', (size_t)(end - v)) : NULL;
        if (!vz)
            return -1;
        apr_table_add(t, k, v);
        *p = vz + 1;
    }
    return 0;
}

static int read_meta(const txc_entry *e, struct txm_meta *m, const char **rest, const char **end) {
    size_t len;
    const char *p = txc_entry_meta(e, &len);
    if (!p || len < sizeof *m)
        return -1;
    memcpy(m, p, sizeof *m);
    if (m->magic != TXM_MAGIC || len - sizeof *m < m->name_len)
        return -1;
    *rest = p + sizeof *m;
    *end = p + len;
    return 0;
}

/* Vary header names, lower-cased, sorted, without duplicates. */
static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static apr_array_header_t *vary_names(apr_pool_t *p, const char *vary) {
    apr_array_header_t *a = apr_array_make(p, 4, sizeof(char *));
    char *tok;
    while ((tok = ap_get_list_item(p, &vary)) != NULL) {
        ap_str_tolower(tok);
        if (*tok)
            *(char **)apr_array_push(a) = tok;
    }
    char **v = (char **)a->elts;
    qsort(v, (size_t)a->nelts, sizeof(char *), cmp_str);
    int n = 0;
    for (int i = 0; i < a->nelts; i++)
        if (n == 0 || strcmp(v[n - 1], v[i]) != 0)
            v[n++] = v[i];
    a->nelts = n;
    return a;
}

/* The variant's key: the URL key, then "\nname:value" per Vary header
 * ("\nname!" when absent). Request header values never hold a newline, and
 * neither does a URL key, so distinct variants get distinct keys. */
static const char *variant_key(apr_pool_t *p, const char *name, apr_array_header_t *names,
                               apr_table_t *in) {
    const char *k = name;
    for (int i = 0; i < names->nelts; i++) {
        const char *h = ((const char **)names->elts)[i];
        const char *v = apr_table_get(in, h);
        k = apr_pstrcat(p, k, "\n", h, v ? ":" : "!", v ? v : "", NULL);
    }
    return k;
}

/* ----------------------------------------------------------- zero-copy body */

/* A bucket over an entry's body that holds a reference to the entry: shared
 * (split and copy share one reference count), and set-aside is a no-op
 * because the bytes are not pool memory. */
typedef struct {
    apr_bucket_refcount refcount;
    txc_entry *entry;
    const char *base;
} txm_bucket;

static void txm_bucket_destroy(void *data) {
    txm_bucket *d = data;
    if (apr_bucket_shared_destroy(d)) {
        txc_entry_release(d->entry);
        apr_bucket_free(d);
    }
}

static apr_status_t txm_bucket_read(apr_bucket *b, const char **str, apr_size_t *len,
                                    apr_read_type_e block) {
    (void)block;
    txm_bucket *d = b->data;
    *str = d->base + b->start;
    *len = b->length;
    return APR_SUCCESS;
}

static const apr_bucket_type_t txm_bucket_type = {
    "TXCACHE",
    5,
    APR_BUCKET_DATA,
    txm_bucket_destroy,
    txm_bucket_read,
    apr_bucket_setaside_noop,
    apr_bucket_shared_split,
    apr_bucket_shared_copy,
};

static apr_bucket *txm_bucket_create(txc_entry *e, const char *body, apr_size_t len,
                                     apr_bucket_alloc_t *list) {
    apr_bucket *b = apr_bucket_alloc(sizeof *b, list);
    txm_bucket *d = apr_bucket_alloc(sizeof *d, list);
    APR_BUCKET_INIT(b);
    b->free = apr_bucket_free;
    b->list = list;
    d->entry = txc_entry_ref(e);
    d->base = body;
    b = apr_bucket_shared_make(b, d, 0, len);
    b->type = &txm_bucket_type;
    return b;
}

/* ------------------------------------------------------ the provider calls */

static int txm_create_entity(cache_handle_t *h, request_rec *r, const char *key, apr_off_t len,
                             apr_bucket_brigade *bb) {
    (void)bb;
    if (!g_cache)
        return DECLINED;
    /* Whole bodies only: a 206 from a backend is not the entity. */
    if (r->status == HTTP_PARTIAL_CONTENT)
        return DECLINED;
    if (len >= 0 &&
        ((uint64_t)len > g_cfg->max_object_size || (uint64_t)len < g_cfg->min_object_size)) {
        if ((uint64_t)len > g_cfg->max_object_size)
            count(C_TOO_LARGE, 1);
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r,
                      "cache_tx: %s: body of %" APR_OFF_T_FMT " bytes is outside "
                      "TxCacheMinObjectSize..TxCacheMaxObjectSize, not cached",
                      key, len);
        return DECLINED;
    }
    txm_obj *o = obj_new(h, r, key);
    o->expected = len;
    return OK;
}

static int txm_open_entity(cache_handle_t *h, request_rec *r, const char *key) {
    h->cache_obj = NULL;
    if (!g_cache)
        return DECLINED;
    txc_entry *e = txc_lookup(g_cache, key, strlen(key));
    if (!e)
        return DECLINED;
    struct txm_meta m;
    const char *p, *end;
    const char *vkey = key;
    if (read_meta(e, &m, &p, &end) != 0)
        goto bad;
    if (m.kind == KIND_VARY) {
        /* Follow the marker to this request's variant. */
        size_t blen;
        const char *names = txc_entry_body(e, &blen);
        const char *nend = names + blen;
        apr_array_header_t *a = apr_array_make(r->pool, 4, sizeof(char *));
        while (names < nend && *names) {
            const char *z = memchr(names, '\0', (size_t)(nend - names));
            if (!z)
                goto bad;
            *(const char **)apr_array_push(a) = apr_pstrdup(r->pool, names);
            names = z + 1;
        }
        vkey = variant_key(r->pool, key, a, r->headers_in);
        txc_entry_release(e);
        e = txc_lookup(g_cache, vkey, strlen(vkey));
        if (!e)
            return DECLINED;
        if (read_meta(e, &m, &p, &end) != 0 || m.kind != KIND_RESPONSE)
            goto bad;
    }
    if (m.name_len != strlen(key) || memcmp(p, key, m.name_len) != 0)
        goto bad;
    p += m.name_len;
    if (m.header_only && !r->header_only) {
        txc_entry_release(e);
        return DECLINED;
    }
    h->req_hdrs = apr_table_make(r->pool, 8);
    h->resp_hdrs = apr_table_make(r->pool, 16);
    if (get_table(&p, end, m.nresp, h->resp_hdrs) != 0 ||
        get_table(&p, end, m.nreq, h->req_hdrs) != 0)
        goto bad;
    txm_obj *o = obj_new(h, r, key);
    o->key = vkey;
    o->entry = e;
    h->cache_obj->info = m.info;
    return OK;
bad:
    ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, "cache_tx: malformed entry for %s, ignored", key);
    txc_entry_release(e);
    h->cache_obj = NULL;
    return DECLINED;
}

static int txm_remove_entity(cache_handle_t *h) {
    /* mod_cache is done with this handle (a stale entry it will replace). */
    if (h->cache_obj && h->cache_obj->vobj) {
        txm_obj *o = h->cache_obj->vobj;
        if (o->entry) {
            txc_entry_release(o->entry);
            o->entry = NULL;
        }
    }
    h->cache_obj = NULL;
    return OK;
}

static int txm_remove_url(cache_handle_t *h, request_rec *r) {
    (void)r;
    if (!g_cache || !h->cache_obj || !h->cache_obj->vobj)
        return DECLINED;
    txm_obj *o = h->cache_obj->vobj;
    if (txc_remove(g_cache, o->key, strlen(o->key)) == 0) {
        count(C_REMOVALS, 1);
        sync_levels();
    }
    return OK;
}

static apr_status_t txm_recall_headers(cache_handle_t *h, request_rec *r) {
    (void)h;
    (void)r;
    return APR_SUCCESS; /* read by open_entity already */
}

static apr_status_t txm_recall_body(cache_handle_t *h, apr_pool_t *p, apr_bucket_brigade *bb) {
    (void)p;
    txm_obj *o = h->cache_obj->vobj;
    if (!o->entry)
        return APR_SUCCESS;
    size_t len;
    const char *body = txc_entry_body(o->entry, &len);
    if (len > 0)
        APR_BRIGADE_INSERT_TAIL(bb, txm_bucket_create(o->entry, body, len, bb->bucket_alloc));
    return APR_SUCCESS;
}

static apr_status_t store_vary_marker(request_rec *r, txm_obj *o, apr_array_header_t *names,
                                      const cache_info *info) {
    txm_buf body = {.pool = r->pool};
    for (int i = 0; i < names->nelts; i++) {
        const char *h = ((const char **)names->elts)[i];
        buf_put(&body, h, strlen(h) + 1);
    }
    /* An empty name ends the list; a marker is an entry like any other, so
     * it is padded up to the minimum object size. */
    size_t want = body.len + 1;
    if (want < g_cfg->min_object_size)
        want = (size_t)g_cfg->min_object_size;
    memset(buf_claim(&body, want - body.len), 0, want - body.len);

    struct txm_meta m = {.magic = TXM_MAGIC, .kind = KIND_VARY, .info = *info};
    int err = 0;
    txc_entry *e = txc_entry_new(g_cache, o->name, strlen(o->name), (int64_t)body.len, &err);
    if (!e)
        return APR_EGENERAL;
    if (txc_entry_set_meta(e, &m, sizeof m) != 0 || txc_entry_append(e, body.p, body.len) != 0) {
        txc_entry_abandon(e);
        return APR_EGENERAL;
    }
    return txc_insert(g_cache, e) == 0 ? APR_SUCCESS : APR_EGENERAL;
}

static apr_status_t txm_store_headers(cache_handle_t *h, request_rec *r, cache_info *info) {
    txm_obj *o = h->cache_obj->vobj;
    if (!g_cache)
        return APR_EGENERAL;
    h->cache_obj->info = *info;
    apr_table_t *out = ap_cache_cacheable_headers_out(r);
    apr_table_t *in = ap_cache_cacheable_headers_in(r);

    o->key = o->name;
    const char *vary = apr_table_get(out, "Vary");
    if (vary) {
        apr_array_header_t *names = vary_names(r->pool, vary);
        if (names->nelts > 0) {
            if (store_vary_marker(r, o, names, info) != APR_SUCCESS) {
                ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, "cache_tx: %s: vary marker not stored",
                              o->name);
                return APR_EGENERAL;
            }
            o->key = variant_key(r->pool, o->name, names, r->headers_in);
        }
    }

    txm_buf buf = {.pool = r->pool};
    struct txm_meta m = {.magic = TXM_MAGIC, .kind = KIND_RESPONSE, .info = *info};
    m.header_only = r->header_only && r->status != HTTP_NOT_MODIFIED;
    m.name_len = (uint32_t)strlen(o->name);
    buf_claim(&buf, sizeof m); /* filled in once the counts are known */
    buf_put(&buf, o->name, m.name_len);
    put_table(&buf, out, &m.nresp);
    put_table(&buf, in, &m.nreq);
    memcpy(buf.p, &m, sizeof m);

    if (o->builder) {
        txc_entry_abandon(o->builder);
        o->builder = NULL;
    }
    int err = 0;
    if (o->entry) {
        /* A revalidated (304) entry: new headers, the same body. Entries are
         * immutable, so a copy replaces it at commit. */
        size_t blen;
        const char *body = txc_entry_body(o->entry, &blen);
        o->builder = txc_entry_new(g_cache, o->key, strlen(o->key), (int64_t)blen, &err);
        if (o->builder && blen && txc_entry_append(o->builder, body, blen) != 0) {
            txc_entry_abandon(o->builder);
            o->builder = NULL;
        }
        o->body_len = (apr_off_t)blen;
        o->done = 1;
    } else {
        o->builder = txc_entry_new(g_cache, o->key, strlen(o->key), (int64_t)o->expected, &err);
    }
    if (!o->builder || txc_entry_set_meta(o->builder, buf.p, buf.len) != 0) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, "cache_tx: %s: not stored (error %d)", o->name,
                      err);
        return APR_EGENERAL;
    }
    return APR_SUCCESS;
}

static void give_up(txm_obj *o) {
    if (o->builder) {
        txc_entry_abandon(o->builder);
        o->builder = NULL;
    }
    o->failed = 1;
}

/* Pass big or uncacheable bodies on in pieces instead of holding them whole. */
#define TXM_PASS_BYTES (64 * 1024)

static apr_status_t txm_store_body(cache_handle_t *h, request_rec *r, apr_bucket_brigade *in,
                                   apr_bucket_brigade *out) {
    txm_obj *o = h->cache_obj->vobj;
    apr_size_t moved = 0;
    while (!APR_BRIGADE_EMPTY(in)) {
        apr_bucket *e = APR_BRIGADE_FIRST(in);
        if (APR_BUCKET_IS_EOS(e)) {
            APR_BUCKET_REMOVE(e);
            APR_BRIGADE_INSERT_TAIL(out, e);
            o->done = 1;
            if (o->builder && (r->connection->aborted || r->no_cache ||
                               (o->expected >= 0 && o->body_len != o->expected)))
                give_up(o);
            break;
        }
        if (APR_BUCKET_IS_METADATA(e) || !o->builder || o->failed || o->done) {
            APR_BUCKET_REMOVE(e);
            APR_BRIGADE_INSERT_TAIL(out, e);
            if (APR_BUCKET_IS_FLUSH(e))
                break; /* let it through now; mod_cache calls again */
            continue;
        }
        const char *data;
        apr_size_t len;
        apr_status_t rv = apr_bucket_read(e, &data, &len, APR_BLOCK_READ);
        if (rv != APR_SUCCESS) {
            give_up(o);
            return rv; /* mod_cache passes what is left through */
        }
        APR_BUCKET_REMOVE(e);
        APR_BRIGADE_INSERT_TAIL(out, e);
        if (len == 0)
            continue;
        int err = txc_entry_append(o->builder, data, len);
        if (err != 0) {
            if (err == -EFBIG) {
                count(C_TOO_LARGE, 1);
                ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r,
                              "cache_tx: %s: body above TxCacheMaxObjectSize, not cached", o->name);
            }
            give_up(o);
        }
        o->body_len += (apr_off_t)len;
        moved += len;
        if (moved >= TXM_PASS_BYTES || o->failed)
            break;
    }
    return APR_SUCCESS;
}

static apr_status_t txm_commit_entity(cache_handle_t *h, request_rec *r) {
    txm_obj *o = h->cache_obj->vobj;
    if (!g_cache || !o->builder || !o->done || o->failed) {
        give_up(o);
        count(C_NOT_STORED, 1);
        return APR_EGENERAL;
    }
    txc_entry *e = o->builder;
    o->builder = NULL; /* txc_insert consumes the reference either way */
    int rc = txc_insert(g_cache, e);
    sync_levels();
    if (rc != 0) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, "cache_tx: %s: not stored (error %d)", o->name,
                      rc);
        count(C_NOT_STORED, 1);
        return APR_EGENERAL;
    }
    count(C_STORES, 1);
    return APR_SUCCESS;
}

static apr_status_t txm_invalidate_entity(cache_handle_t *h, request_rec *r) {
    (void)r;
    if (!g_cache || !h->cache_obj || !h->cache_obj->vobj)
        return APR_SUCCESS;
    txm_obj *o = h->cache_obj->vobj;
    /* Drop the variant, and the marker so that no other variant is found. */
    int n = txc_remove(g_cache, o->key, strlen(o->key)) == 0;
    if (strcmp(o->key, o->name) != 0)
        n += txc_remove(g_cache, o->name, strlen(o->name)) == 0;
    if (n) {
        count(C_REMOVALS, n);
        sync_levels();
    }
    return APR_SUCCESS;
}

static const cache_provider txm_provider = {
    .remove_entity = txm_remove_entity,
    .store_headers = txm_store_headers,
    .store_body = txm_store_body,
    .recall_headers = txm_recall_headers,
    .recall_body = txm_recall_body,
    .create_entity = txm_create_entity,
    .open_entity = txm_open_entity,
    .remove_url = txm_remove_url,
    .commit_entity = txm_commit_entity,
    .invalidate_entity = txm_invalidate_entity,
};

/* ---------------------------------------------------------------- hooks */

/* HTTP-level outcomes, as mod_cache reports them in X-Cache. */
static int txm_cache_status(cache_handle_t *h, request_rec *r, apr_table_t *headers,
                            ap_cache_status_e status, const char *reason) {
    (void)h;
    (void)r;
    (void)headers;
    (void)reason;
    if (!g_cache)
        return OK;
    switch (status) {
    case AP_CACHE_HIT:
        count(C_HITS, 1);
        break;
    case AP_CACHE_MISS:
        count(C_MISSES, 1);
        break;
    case AP_CACHE_REVALIDATE:
        count(C_REVALIDATIONS, 1);
        break;
    default:
        break;
    }
    return OK;
}

static int txm_post_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp, server_rec *s) {
    (void)pconf;
    (void)plog;
    txm_conf *c = ap_get_module_config(s->module_config, &cache_tx_module);
    const struct txc_config *k = &c->cfg;
    const char *bad = NULL;
    if (k->min_object_size > k->max_object_size)
        bad = apr_psprintf(ptemp,
                           "TxCacheMinObjectSize (%" PRIu64 ") is larger than "
                           "TxCacheMaxObjectSize (%" PRIu64 ")",
                           k->min_object_size, k->max_object_size);
    else if (k->max_bytes && k->max_object_size > k->max_bytes)
        bad = apr_psprintf(ptemp,
                           "TxCacheMaxObjectSize (%" PRIu64 ") is larger than "
                           "TxCacheMaxBytes (%" PRIu64 "): no object that large could be cached",
                           k->max_object_size, k->max_bytes);
    char err[256] = "";
    if (!bad && txc_config_check(k, err, sizeof err) != 0)
        bad = apr_psprintf(ptemp, "invalid TxCache* settings: %s", err);
    if (!bad) {
        /* A trial cache, so that a sync mode this build cannot run stops the
         * server now rather than leaving every child without a cache. */
        txc_cache *t = txc_create(k, err, sizeof err);
        if (!t)
            bad = apr_psprintf(ptemp, "cannot create a cache (TxCacheSync %s): %s",
                               txc_sync_name(k->sync), err);
        else
            txc_destroy(t);
    }
    if (bad) {
        ap_log_error(APLOG_MARK, APLOG_EMERG, 0, s, "mod_cache_tx: %s", bad);
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    g_cfg = k;
    return OK;
}

static void txm_child_init(apr_pool_t *pchild, server_rec *s) {
    (void)pchild;
    txm_conf *c = ap_get_module_config(s->module_config, &cache_tx_module);
    char err[256] = "";
    g_cfg = &c->cfg;
    /* Not destroyed at child exit: threads may still hold entries then, and
     * the process exit frees everything anyway. */
    g_cache = txc_create(&c->cfg, err, sizeof err);
    if (!g_cache) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, "mod_cache_tx: no cache in this child: %s", err);
        return;
    }
    /* After fork: the counters go to this child's own statistics segment. */
    for (int i = 0; i < C_COUNT; i++)
        g_ctr[i] = txkit_counter(counter_defs[i].name, counter_defs[i].kind);
}

static int txm_status_hook(request_rec *r, int flags) {
    if (!g_cache) {
        if (!(flags & AP_STATUS_SHORT))
            ap_rputs("<hr>\n<h2>mod_cache_tx</h2>\n<p>no cache in this process</p>\n", r);
        return OK;
    }
    struct txc_stats st;
    tx_stats_t tx;
    txc_stats_get(g_cache, &st);
    memset(&tx, 0, sizeof tx);
    tx_stats_get(&tx);
    const struct {
        const char *name;
        uint64_t v;
    } rows[] = {
        {"Hits", __atomic_load_n(&g_local[C_HITS], __ATOMIC_RELAXED)},
        {"Misses", __atomic_load_n(&g_local[C_MISSES], __ATOMIC_RELAXED)},
        {"Revalidations", __atomic_load_n(&g_local[C_REVALIDATIONS], __ATOMIC_RELAXED)},
        {"Stores", __atomic_load_n(&g_local[C_STORES], __ATOMIC_RELAXED)},
        {"NotStored", __atomic_load_n(&g_local[C_NOT_STORED], __ATOMIC_RELAXED)},
        {"TooLarge", __atomic_load_n(&g_local[C_TOO_LARGE], __ATOMIC_RELAXED)},
        {"Lookups", st.lookups},
        {"LookupHits", st.hits},
        {"LookupMisses", st.misses},
        {"Inserts", st.inserts},
        {"Replaced", st.replaced},
        {"Rejected", st.rejected},
        {"Evictions", st.evictions},
        {"Removals", st.removals},
        {"Objects", st.objects},
        {"Bytes", st.bytes},
        {"LiveEntries", st.live_entries},
        {"MaxObjects", g_cfg->max_objects},
        {"MaxBytes", g_cfg->max_bytes},
        {"MinObjectSize", g_cfg->min_object_size},
        {"MaxObjectSize", g_cfg->max_object_size},
        {"TxTransactions", tx.transactions},
        {"TxCommits", tx_stats_commits(&tx)},
        {"TxAborts", tx_stats_aborts(&tx)},
    };
    const size_t nrows = sizeof rows / sizeof rows[0];
    if (flags & AP_STATUS_SHORT) {
        ap_rprintf(r, "TxCacheSync: %s\nTxCachePolicy: %s\nTxCachePid: %ld\n",
                   txc_sync_name(g_cfg->sync), txc_policy_name(g_cfg->policy), (long)getpid());
        for (size_t i = 0; i < nrows; i++)
            ap_rprintf(r, "TxCache%s: %" PRIu64 "\n", rows[i].name, rows[i].v);
        return OK;
    }
    ap_rprintf(r,
               "<hr>\n<h2>mod_cache_tx (this child, pid %ld)</h2>\n"
               "<p>sync %s, removal algorithm %s</p>\n<table border=\"0\">\n",
               (long)getpid(), txc_sync_name(g_cfg->sync), txc_policy_name(g_cfg->policy));
    for (size_t i = 0; i < nrows; i++)
        ap_rprintf(r, "<tr><th align=\"left\">%s</th><td align=\"right\">%" PRIu64 "</td></tr>\n",
                   rows[i].name, rows[i].v);
    ap_rputs("</table>\n", r);
    return OK;
}

static void txm_register_hooks(apr_pool_t *p) {
    ap_register_provider(p, CACHE_PROVIDER_GROUP, "tx", "0", &txm_provider);
    ap_hook_post_config(txm_post_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_child_init(txm_child_init, NULL, NULL, APR_HOOK_MIDDLE);
    APR_OPTIONAL_HOOK(ap, status_hook, txm_status_hook, NULL, NULL, APR_HOOK_MIDDLE);
    cache_hook_cache_status(txm_cache_status, NULL, NULL, APR_HOOK_MIDDLE);
}

AP_DECLARE_MODULE(cache_tx) = {
    STANDARD20_MODULE_STUFF,
    NULL,                     /* per-directory config */
    NULL,                     /* merge per-directory */
    txm_create_server_config, /* per-server config */
    NULL,                     /* merge per-server: only the main server's is read */
    txm_cmds,
    txm_register_hooks,
    AP_MODULE_FLAG_NONE,
};
