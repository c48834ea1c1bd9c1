/* SPDX-License-Identifier: MIT */
/* locklive.c - `txkit stat --sites`' lock reports (locklive.h): copies each
 * live table (src/stats/lockfmt.h), takes away what the previous interval saw,
 * names the owner's addresses through /proc/<pid>/maps and prints the text
 * the library would write at exit through lockreport.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "json.h"
#include "lockfmt.h"
#include "lockreport.h"
#include "locklive.h"

/* A process's table as last seen: its entries in use, sorted by key. */
struct snap {
    uint64_t pid, start_ns; /* start_ns tells a reused pid apart */
    uint64_t ns;            /* when it was read (CLOCK_MONOTONIC) */
    struct lp_lock *locks;
    size_t n;
};

struct locklive {
    struct snap *v;
    size_t n;
};

struct locklive *locklive_new(void) {
    return calloc(1, sizeof(struct locklive));
}

void locklive_free(struct locklive *l) {
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].locks);
    free(l->v);
    free(l);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int by_key(const void *a, const void *b) {
    uintptr_t x = ((const struct lp_lock *)a)->key, y = ((const struct lp_lock *)b)->key;
    return x < y ? -1 : x > y;
}

/* ------------------------------------------------------- the owner's map */

struct region {
    uintptr_t lo, hi, base; /* base: the object's load address (its offset-0 mapping) */
    char *path;             /* NULL: not a file's (an anonymous .bss gets the file before) */
};
struct maps {
    struct region *r;
    size_t n;
};

static void maps_free(struct maps *m) {
    for (size_t i = 0; i < m->n; i++)
        free(m->r[i].path);
    free(m->r);
}

/* /proc/<pid>/maps: file mappings, and the anonymous mapping right after one
 * (a .bss past the file's end) counted as that file's. */
static int maps_read(uint64_t pid, struct maps *m) {
    char path[64], line[4608];
    snprintf(path, sizeof path, "/proc/%llu/maps", (unsigned long long)pid);
    FILE *f = fopen(path, "r");
    memset(m, 0, sizeof *m);
    if (!f)
        return -1;
    size_t cap = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi, off;
        int pos = 0;
        if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %n", &lo, &hi, &off, &pos) < 3)
            continue;
        char *file = line + pos;
        file[strcspn(file, "\n")] = 0;
        struct region *prev = m->n ? &m->r[m->n - 1] : NULL;
        struct region r = {lo, hi, 0, NULL};
        if (file[0] == '/') {
            r.path = strdup(file);
            r.base = lo - off;
            for (size_t i = m->n; i-- > 0;) /* the same object's first mapping */
                if (m->r[i].path && !strcmp(m->r[i].path, file)) {
                    r.base = m->r[i].base;
                    break;
                }
        } else if (!file[0] && prev && prev->path && prev->hi == lo) {
            r.path = strdup(prev->path);
            r.base = prev->base;
        } else {
            continue;
        }
        if (m->n == cap) {
            cap = cap ? 2 * cap : 64;
            struct region *a = realloc(m->r, cap * sizeof *a);
            if (!a) {
                free(r.path);
                break;
            }
            m->r = a;
        }
        m->r[m->n++] = r;
    }
    fclose(f);
    return 0;
}

/* lockfmt.h's lp_where_fn for another process: its object and offset. */
static void where(FILE *f, uintptr_t a, void *arg) {
    const struct maps *m = arg;
    for (size_t i = 0; i < m->n; i++)
        if (a >= m->r[i].lo && a < m->r[i].hi && m->r[i].path) {
            fprintf(f, "%s\t%#lx", m->r[i].path, (unsigned long)(a - m->r[i].base));
            return;
        }
    fprintf(f, "?\t%#lx", (unsigned long)a);
}

/* ----------------------------------------------------------- the counts */

static uint64_t minus(uint64_t now, uint64_t then) { return now > then ? now - then : 0; }

/* e -= what p had (the same lock seen before). */
static void subtract(struct lp_lock *e, const struct lp_lock *p) {
    e->acq = minus(e->acq, p->acq);
    e->contended = minus(e->contended, p->contended);
    e->wait_ticks = minus(e->wait_ticks, p->wait_ticks);
    e->hold_ticks = minus(e->hold_ticks, p->hold_ticks);
    e->timed_holds = minus(e->timed_holds, p->timed_holds);
    e->elided = e->elided > p->elided ? e->elided - p->elided : 0;
    for (int b = 0; b < LP_HIST; b++) {
        e->wait_hist[b] = minus(e->wait_hist[b], p->wait_hist[b]);
        e->hold_hist[b] = minus(e->hold_hist[b], p->hold_hist[b]);
    }
    for (int s = 0; s < LP_SITES; s++)
        for (int k = 0; k < LP_SITES; k++)
            if (e->sites[s].caller && p->sites[k].caller == e->sites[s].caller) {
                e->sites[s].acq = minus(e->sites[s].acq, p->sites[k].acq);
                e->sites[s].contended = minus(e->sites[s].contended, p->sites[k].contended);
                e->sites[s].wait_ticks = minus(e->sites[s].wait_ticks, p->sites[k].wait_ticks);
                break;
            }
    for (int s = 0; s < LP_DEEP; s++)
        for (int k = 0; k < LP_DEEP; k++)
            if (e->deep[s].pc && p->deep[k].pc == e->deep[s].pc) {
                e->deep[s].contended = minus(e->deep[s].contended, p->deep[k].contended);
                e->deep[s].wait_ticks = minus(e->deep[s].wait_ticks, p->deep[k].wait_ticks);
                break;
            }
}

static struct snap *snap_of(struct locklive *l, uint64_t pid) {
    for (size_t i = 0; l && i < l->n; i++)
        if (l->v[i].pid == pid)
            return &l->v[i];
    return NULL;
}

/* Copy the table at path; NULL when it is not one, or its owner died (the
 * file is then removed). */
static struct lp_lock *copy_table(const char *path, struct lp_file *h, size_t *n) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return NULL;
    if (flock(fd, LOCK_SH | LOCK_NB) == 0) { /* nobody holds it: its owner is gone */
        unlink(path);
        close(fd);
        return NULL;
    }
    struct stat st;
    struct lp_lock *out = NULL;
    void *m = MAP_FAILED;
    if (fstat(fd, &st) != 0 || (size_t)st.st_size < LP_FILE_HEAD ||
        (m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0)) == MAP_FAILED)
        goto out;
    memcpy(h, m, sizeof *h);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (memcmp(h->magic, LP_MAGIC, 8) != 0 || h->version != LP_VERSION ||
        h->lock_size != sizeof(struct lp_lock) || h->header_size < sizeof *h ||
        h->tab_offset < sizeof *h || h->file_size != (uint64_t)st.st_size ||
        h->tab_offset + (uint64_t)h->tab_size * h->lock_size > h->file_size)
        goto out;
    const struct lp_lock *tab = (const struct lp_lock *)((const char *)m + h->tab_offset);
    size_t used = 0;
    for (uint32_t i = 0; i < h->tab_size; i++)
        used += __atomic_load_n(&tab[i].key, __ATOMIC_ACQUIRE) != 0;
    out = calloc(used ? used : 1, sizeof *out);
    if (!out)
        goto out;
    *n = 0;
    for (uint32_t i = 0; i < h->tab_size && *n < used; i++)
        if (__atomic_load_n(&tab[i].key, __ATOMIC_ACQUIRE))
            memcpy(&out[(*n)++], &tab[i], sizeof *out);
    qsort(out, *n, sizeof *out, by_key);
out:
    if (m != MAP_FAILED)
        munmap(m, (size_t)st.st_size);
    close(fd);
    return out;
}

/* Keep what was seen of pid for the next interval (takes locks). */
static void remember(struct locklive *l, const struct lp_file *h, uint64_t ns,
                     struct lp_lock *locks, size_t n) {
    struct snap *s = snap_of(l, h->pid);
    if (!s) {
        struct snap *a = realloc(l->v, (l->n + 1) * sizeof *a);
        if (!a) {
            free(locks);
            return;
        }
        l->v = a;
        s = &l->v[l->n++];
        memset(s, 0, sizeof *s);
    }
    free(s->locks);
    *s = (struct snap){h->pid, h->start_ns, ns, locks, n};
}

/* Print tab[0..n) of process pid through lockreport.c; returns 1. */
static int print_table(uint64_t pid, const char *comm, const char *path, const struct lp_file *h,
                       const struct lp_lock *tab, size_t n, uint64_t elapsed_ns, double npt,
                       const char *how, size_t top, FILE *out, struct jw *json) {
    struct maps mp;
    maps_read(pid, &mp);
    char exe[4096], link[64];
    snprintf(link, sizeof link, "/proc/%llu/exe", (unsigned long long)pid);
    ssize_t el = readlink(link, exe, sizeof exe - 1);
    exe[el > 0 ? el : 0] = 0;
    char *text = NULL;
    size_t len = 0;
    FILE *tf = open_memstream(&text, &len);
    if (tf) {
        lp_write_text(tf, h, tab, (unsigned)n, exe[0] ? exe : comm, elapsed_ns, npt, where, &mp);
        fclose(tf);
    }
    maps_free(&mp);
    int printed = 0;
    FILE *rf = text ? fmemopen(text, len, "r") : NULL;
    if (rf) {
        printed = lockreport_print_text(rf, path, how, top, out, json);
        fclose(rf);
    }
    free(text);
    if (printed == 0 && !json) /* seen, but nothing to show (a quiet interval) */
        fprintf(out, "txkit lock report: %s (pid %llu; %s): no lock taken\n\n", exe[0] ? exe : comm,
                (unsigned long long)pid, how);
    return 1;
}

int locklive_print(struct locklive *l, const char *dir,
                   int (*want)(uint64_t pid, const char *comm, void *arg), void *arg, size_t top,
                   FILE *out, struct jw *json) {
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == ENOENT)
            return 0;
        fprintf(stderr, "txkit stat: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    int printed = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        char *end;
        unsigned long long pid = strtoull(de->d_name, &end, 10);
        if (!pid || strcmp(end, ".locks") != 0)
            continue;
        char path[4400], comm[64];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        snprintf(comm, sizeof comm, "/proc/%llu/comm", pid);
        FILE *cf = fopen(comm, "r");
        comm[0] = 0;
        if (cf) {
            if (fgets(comm, sizeof comm, cf))
                comm[strcspn(comm, "\n")] = 0;
            fclose(cf);
        }
        if (want && !want(pid, comm, arg))
            continue;
        struct lp_file h;
        size_t n = 0;
        struct lp_lock *locks = copy_table(path, &h, &n);
        if (!locks)
            continue;
        uint64_t ns = now_ns(), tsc = __rdtsc();
        /* The owner's ticks at this reader's rate (one TSC for the machine). */
        double npt = tsc > h.start_tsc && ns > h.start_ns
                         ? (double)(ns - h.start_ns) / (double)(tsc - h.start_tsc)
                         : 1.0;
        const struct snap *prev = snap_of(l, h.pid);
        struct lp_lock *shown = locks; /* the totals, or since the previous report */
        uint64_t since = h.start_ns;
        char how[128];
        snprintf(how, sizeof how, "live, since it started");
        if (prev && prev->start_ns == h.start_ns && (shown = malloc((n ? n : 1) * sizeof *shown))) {
            since = prev->ns;
            snprintf(how, sizeof how, "live, the last %.3g s", (double)(ns - since) / 1e9);
            memcpy(shown, locks, n * sizeof *shown);
            for (size_t i = 0; i < n; i++) {
                const struct lp_lock *p =
                    bsearch(&shown[i], prev->locks, prev->n, sizeof *p, by_key);
                if (p)
                    subtract(&shown[i], p);
            }
        } else {
            shown = locks;
        }
        printed += print_table(pid, comm, path, &h, shown, n, ns - since, npt, how, top, out, json);
        if (shown != locks)
            free(shown);
        if (l)
            remember(l, &h, ns, locks, n);
        else
            free(locks);
    }
    closedir(d);
    return printed;
}
