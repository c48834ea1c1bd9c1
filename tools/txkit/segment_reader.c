/* SPDX-License-Identifier: MIT */
/* segment_reader.c - reading statistics segments and dumps (see segment_reader.h). */
#include "segment_reader.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "stat_data.h"

#define SEQ_TRIES 64     /* per record, then the copy is accepted as is */
#define SNAPSHOT_TRIES 4 /* whole snapshots, while slot 0 moves (a thread exiting) */
#define FRESH_SECONDS 5  /* a segment this young may still be being created */
#define HEADER_RETRIES 3 /* a live writer may still be filling its header */
/* No writer of this format makes more: a file that claims more is refused,
 * which bounds every loop of the reader (threads x sites records). */
#define MAX_THREADS_SANE TKS_MAX_THREADS
#define MAX_SITES_SANE TKS_MAX_SITES

/* ------------------------------------------------------------ SIGBUS guard */

/* A mapped file that shrinks under us (someone truncates it) raises SIGBUS
 * on access: every access to a mapping runs armed, and the fault turns into
 * an error for that file. */
static sigjmp_buf bus_jb;
static volatile sig_atomic_t bus_armed;

static void on_sigbus(int sig) {
    if (bus_armed) {
        bus_armed = 0;
        siglongjmp(bus_jb, 1);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void bus_install(void) {
    static int done;
    if (done)
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigbus;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
    done = 1;
}

/* ------------------------------------------------------------- utilities */

static void printable(char *s) {
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = '?';
}

/* Copy a fixed-size, maybe unterminated field of the file. */
static void copy_field(char *dst, size_t dstlen, const char *src, size_t srclen) {
    size_t n = 0;
    while (n < srclen && n + 1 < dstlen && src[n])
        n++;
    memcpy(dst, src, n);
    dst[n] = '\0';
    printable(dst);
}

/* Copy words [from, to) of a record, zero the others (they lie in a hole). */
static void load_counters(struct tks_counters *dst, const struct tks_counters *src, size_t from,
                          size_t to) {
    const uint64_t *s = (const uint64_t *)src;
    uint64_t *d = (uint64_t *)dst;
    for (size_t i = 0; i < sizeof *src / sizeof(uint64_t); i++)
        d[i] = i >= from && i < to ? __atomic_load_n(&s[i], __ATOMIC_RELAXED) : 0;
    tks_fold(dst);
}

/* Copy one record under its thread's seqlock; after tries attempts accept
 * the copy (a writer is never waited for). Returns 1 when it was accepted so. */
static int copy_stable(const struct tks_thread *th, const struct tks_counters *src,
                       struct tks_counters *dst, size_t from, size_t to, unsigned tries) {
    for (unsigned i = 0; i < tries; i++) {
        uint64_t s1 = __atomic_load_n(&th->seq, __ATOMIC_ACQUIRE);
        if (!(s1 & 1)) {
            load_counters(dst, src, from, to);
            __atomic_thread_fence(__ATOMIC_ACQUIRE);
            if (__atomic_load_n(&th->seq, __ATOMIC_RELAXED) == s1)
                return 0;
        }
        __builtin_ia32_pause();
    }
    load_counters(dst, src, from, to);
    return 1;
}

static uint64_t even_seq(const struct tks_thread *th) {
    uint64_t s = 0;
    for (unsigned i = 0; i < SEQ_TRIES; i++) {
        s = __atomic_load_n(&th->seq, __ATOMIC_ACQUIRE);
        if (!(s & 1))
            break;
        __builtin_ia32_pause();
    }
    return s;
}

static double now_realtime(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* "<digits>.seg": the pid the writer named it after, else 0. */
static uint64_t pid_of_name(const char *name) {
    uint64_t v = 0;
    const char *p = name;
    if (*p < '1' || *p > '9')
        return 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > UINT64_MAX / 10 - 1)
            return 0;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    return strcmp(p, ".seg") == 0 ? v : 0;
}

/* ----------------------------------------------------------- validation */

/* end = off + count * size, 0 on overflow. */
static int region_end(uint64_t off, uint64_t count, uint64_t size, uint64_t *end) {
    uint64_t bytes;
    if (__builtin_mul_overflow(count, size, &bytes) || __builtin_add_overflow(off, bytes, end))
        return 0;
    return 1;
}

static int all_zero(const void *p, size_t n) {
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        if (c[i])
            return 0;
    return 1;
}

#define BAD(...) (snprintf(why, wlen, __VA_ARGS__), -1)

/* Everything a reader relies on, checked on a private copy of the header
 * against the real size of the file, before the rest is touched. */
static int validate(const struct tks_header *h, uint64_t st_size, unsigned flags, const char *name,
                    char *why, size_t wlen) {
    typedef unsigned long long ull;
    if (memcmp(h->magic, TKS_MAGIC, sizeof h->magic) != 0)
        return BAD("not a txkit statistics file (bad magic)");
    if (h->version != TKS_VERSION)
        return BAD("format version %u, this txkit reads version %u", h->version, TKS_VERSION);
    if (h->header_size != sizeof *h)
        return BAD("header_size %u, version %u has %zu", h->header_size, TKS_VERSION, sizeof *h);
    if (h->counters_size != sizeof(struct tks_counters) ||
        h->thread_size != sizeof(struct tks_thread) || h->site_size != sizeof(struct tks_site))
        return BAD("record sizes counters/thread/site %u/%u/%u, version %u has %zu/%zu/%zu",
                   h->counters_size, h->thread_size, h->site_size, TKS_VERSION,
                   sizeof(struct tks_counters), sizeof(struct tks_thread), sizeof(struct tks_site));
    if (h->file_size > st_size)
        return BAD("truncated: the header says %llu bytes, the file has %llu", (ull)h->file_size,
                   (ull)st_size);
    if (h->file_size < st_size)
        return BAD("size mismatch: the header says %llu bytes, the file has %llu",
                   (ull)h->file_size, (ull)st_size);
    if (h->max_threads == 0 || h->max_threads > MAX_THREADS_SANE)
        return BAD("max_threads %u out of range (1..%u)", h->max_threads, MAX_THREADS_SANE);
    if (h->max_sites == 0 || h->max_sites > MAX_SITES_SANE)
        return BAD("max_sites %u out of range (1..%u)", h->max_sites, MAX_SITES_SANE);
    if (h->shared_slot && h->shared_slot >= h->max_threads)
        return BAD("shared_slot %u out of range (1..%u)", h->shared_slot, h->max_threads - 1);
    if (h->is_dump > 1)
        return BAD("is_dump %u (0 or 1)", h->is_dump);
    if ((h->threads_offset | h->sites_offset | h->matrix_offset) % 8)
        return BAD("misaligned offsets (threads %llu, sites %llu, matrix %llu)",
                   (ull)h->threads_offset, (ull)h->sites_offset, (ull)h->matrix_offset);
    uint64_t tend, send, mend;
    if (h->threads_offset < h->header_size)
        return BAD("threads_offset %llu inside the header", (ull)h->threads_offset);
    if (!region_end(h->threads_offset, h->max_threads, h->thread_size, &tend) ||
        tend > h->sites_offset)
        return BAD("thread table (offset %llu, %u slots) runs into the site table (offset %llu)",
                   (ull)h->threads_offset, h->max_threads, (ull)h->sites_offset);
    if (!region_end(h->sites_offset, h->max_sites, h->site_size, &send) || send > h->matrix_offset)
        return BAD("site table (offset %llu, %u sites) runs into the counter matrix (offset %llu)",
                   (ull)h->sites_offset, h->max_sites, (ull)h->matrix_offset);
    if (!region_end(h->matrix_offset, (uint64_t)h->max_threads * h->max_sites, h->counters_size,
                    &mend) ||
        mend > h->file_size)
        return BAD("counter matrix (offset %llu, %u x %u records) runs past the end of the file "
                   "(%llu bytes)",
                   (ull)h->matrix_offset, h->max_threads, h->max_sites, (ull)h->file_size);
    uint64_t uend;
    if (h->ucounters_offset &&
        (h->ucounters_offset % 8 || h->ucounters_offset < h->header_size ||
         h->max_ucounters > TKS_MAX_UCOUNTERS ||
         !region_end(h->ucounters_offset, h->max_ucounters, sizeof(struct tks_ucounter), &uend) ||
         uend > h->file_size))
        return BAD("application counters (offset %llu, %u) out of the file or misaligned",
                   (ull)h->ucounters_offset, h->max_ucounters);
    if (h->is_dump && h->max_threads != 1)
        return BAD("a dump with %u thread slots (a dump has one)", h->max_threads);
    if (flags & TKR_SEGMENT) {
        if (h->is_dump)
            return BAD("a TXKIT_STATS=FILE dump, not a live segment (read it with txkit report)");
        if ((uid_t)h->uid != tkr_uid())
            return BAD("written by uid %u, not by uid %u", h->uid, (unsigned)tkr_uid());
        uint64_t npid = pid_of_name(name);
        if (h->pid == 0 || (npid && h->pid != npid))
            return BAD("the header says pid %llu, the file name says %llu", (ull)h->pid, (ull)npid);
    }
    return 0;
}

/* Whose statistics are read: the caller's, or another user's (-u, root only). */
static uid_t reader_uid = (uid_t)-1;
uid_t tkr_uid(void) { return reader_uid == (uid_t)-1 ? getuid() : reader_uid; }
void tkr_set_uid(uid_t uid) { reader_uid = uid; }

/* --------------------------------------------------------- mapped access */

struct mapped {
    const char *base;
    size_t size;
};

/* Guarded phase 1: copy the header. */
static int copy_header(const struct mapped *m, struct tks_header *h) {
    if (sigsetjmp(bus_jb, 1))
        return -1;
    bus_armed = 1;
    memcpy(h, m->base, sizeof *h);
    bus_armed = 0;
    return 0;
}

/* The counts the writer moves while we read (high-water marks, calibration). */
struct live_fields {
    uint32_t nthreads, nsites;
    double ns_per_tick;
    uint64_t shared_threads;
};

static int copy_live_fields(const struct mapped *m, struct live_fields *f) {
    const struct tks_header *h = (const struct tks_header *)m->base;
    if (sigsetjmp(bus_jb, 1))
        return -1;
    bus_armed = 1;
    f->nthreads = __atomic_load_n(&h->nthreads, __ATOMIC_ACQUIRE);
    f->nsites = __atomic_load_n(&h->nsites, __ATOMIC_ACQUIRE);
    f->shared_threads = __atomic_load_n(&h->shared_threads, __ATOMIC_RELAXED);
    uint64_t bits = __atomic_load_n((const uint64_t *)&h->ns_per_tick, __ATOMIC_RELAXED);
    bus_armed = 0;
    memcpy(&f->ns_per_tick, &bits, sizeof bits);
    return 0;
}

/* Which pages of the counter matrix hold data. The matrix is a sparse file
 * and on tmpfs (/dev/shm) reading a hole through a mapping allocates a page
 * in the writer's file: records in holes are zero by definition and are
 * skipped instead of read. A record the writer starts using after this look
 * is counted at the next reading. */
#define DM_PAGE 4096u
struct datamap {
    uint64_t first_page;
    uint64_t npages;
    unsigned char *bits;
    int all; /* no hole information: read everything */
};

static void datamap_mark(struct datamap *dm, uint64_t from, uint64_t to) {
    for (uint64_t pg = from / DM_PAGE; pg <= (to - 1) / DM_PAGE; pg++)
        if (pg >= dm->first_page && pg - dm->first_page < dm->npages)
            dm->bits[(pg - dm->first_page) / 8] |=
                (unsigned char)(1u << ((pg - dm->first_page) % 8));
}

static void datamap_build(struct datamap *dm, int fd, uint64_t start, uint64_t end) {
    memset(dm, 0, sizeof *dm);
    if (end <= start) {
        dm->all = 1;
        return;
    }
    dm->first_page = start / DM_PAGE;
    dm->npages = (end - 1) / DM_PAGE - dm->first_page + 1;
    dm->bits = calloc((size_t)(dm->npages + 7) / 8, 1);
    if (!dm->bits) {
        dm->all = 1;
        return;
    }
    uint64_t pos = start;
    while (pos < end) {
        off_t d = lseek(fd, (off_t)pos, SEEK_DATA);
        if (d < 0) {
            if (errno != ENXIO) /* ENXIO: no data after pos */
                dm->all = 1;
            return;
        }
        if ((uint64_t)d >= end)
            return;
        off_t h = lseek(fd, d, SEEK_HOLE);
        if (h < 0 || h <= d) {
            dm->all = 1;
            return;
        }
        datamap_mark(dm, (uint64_t)d, (uint64_t)h < end ? (uint64_t)h : end);
        pos = (uint64_t)h;
    }
}

static int datamap_has(const struct datamap *dm, uint64_t off, uint64_t len) {
    if (dm->all)
        return 1;
    for (uint64_t pg = off / DM_PAGE; pg <= (off + len - 1) / DM_PAGE; pg++)
        if (pg >= dm->first_page && pg - dm->first_page < dm->npages &&
            (dm->bits[(pg - dm->first_page) / 8] & (1u << ((pg - dm->first_page) % 8))))
            return 1;
    return 0;
}

struct snap_args {
    const struct mapped *m;
    const struct tks_header *h; /* the validated private copy */
    unsigned nthreads, nsites;
    struct tkr_proc *p; /* sites and counters allocated, zeroed */
    const struct datamap *dm;
};

/* Copy record (thread, site), except what lies in holes (zero), with up to
 * tries seqlock attempts. A record (552 bytes) spans at most two pages.
 * Returns 1 when the copy was accepted without a stable seqlock. */
static int read_record(const struct snap_args *a, const struct tks_thread *th, unsigned thread,
                       unsigned site, struct tks_counters *dst, unsigned tries) {
    const size_t nwords = sizeof *dst / sizeof(uint64_t);
    uint64_t off = a->h->matrix_offset + tks_matrix_index(a->h, thread, site) * sizeof *dst;
    uint64_t split = (off / DM_PAGE + 1) * DM_PAGE; /* start of the next page */
    size_t k = split >= off + sizeof *dst ? nwords : (size_t)((split - off) / sizeof(uint64_t));
    int first = datamap_has(a->dm, off, k * sizeof(uint64_t));
    int second = k < nwords && datamap_has(a->dm, split, sizeof *dst - k * sizeof(uint64_t));
    size_t from = first ? 0 : k, to = second ? nwords : k;
    if (from >= to) {
        memset(dst, 0, sizeof *dst);
        return 0;
    }
    const struct tks_counters *src = (const struct tks_counters *)(a->m->base + off);
    int torn = copy_stable(th, src, dst, from, to, tries);
    a->p->torn += (unsigned)torn;
    return torn;
}

/* Add up a thread's row. A writer keeps its seq odd for a few stores: one
 * that stays odd through SEQ_TRIES attempts is stopped, or the file is
 * crafted, and its other records get one attempt each (bounded work). */
static void read_row(const struct snap_args *a, const struct tks_thread *th, unsigned thread) {
    struct tks_counters tmp;
    unsigned tries = SEQ_TRIES;
    for (unsigned s = 0; s < a->nsites; s++) {
        if (read_record(a, th, thread, s, &tmp, tries))
            tries = 1;
        tkc_add(&a->p->counters[s], &tmp);
    }
}

static void read_sites(const struct snap_args *a) {
    const struct tks_site *sites = (const struct tks_site *)(a->m->base + a->h->sites_offset);
    for (unsigned s = 0; s < a->nsites; s++) {
        const struct tks_site *src = &sites[s];
        struct tkr_site *d = &a->p->sites[s];
        d->valid = __atomic_load_n(&src->state, __ATOMIC_ACQUIRE) == 1;
        if (!d->valid) {
            snprintf(d->file, sizeof d->file, "(site being registered)");
            continue;
        }
        d->kind = src->kind;
        d->line = src->line;
        d->key = src->key;
        copy_field(d->file, sizeof d->file, src->file, sizeof src->file);
        copy_field(d->func, sizeof d->func, src->func, sizeof src->func);
    }
}

/* Sum the rows of slot 0 (threads that exited) and of every live thread. A
 * thread that exits folds its row into slot 0 under slot 0's seqlock: when
 * that moved during the snapshot, take it again. */
static void read_counters(const struct snap_args *a) {
    const struct tks_header *h = a->h;
    const struct tks_thread *th = (const struct tks_thread *)(a->m->base + h->threads_offset);
    struct tkr_proc *p = a->p;
    for (unsigned attempt = 0; attempt < SNAPSHOT_TRIES; attempt++) {
        memset(p->counters, 0, (size_t)a->nsites * sizeof *p->counters);
        p->torn = 0;
        p->shared_now = 0;
        unsigned live = 0;
        uint64_t s0 = even_seq(&th[0]);
        for (unsigned i = h->is_dump ? a->nthreads : 1; i < a->nthreads; i++) {
            if (__atomic_load_n(&th[i].state, __ATOMIC_ACQUIRE) != TKS_LIVE)
                continue;
            if (h->shared_slot && i == h->shared_slot) { /* many threads, atomic adds */
                uint64_t n = __atomic_load_n(&th[i].shared, __ATOMIC_RELAXED);
                p->shared_now = n < (1u << 24) ? (unsigned)n : 1u << 24;
                live += p->shared_now;
            } else {
                live++;
            }
            read_row(a, &th[i], i);
        }
        read_row(a, &th[0], 0);
        /* In a dump, slot 0's tid is the number of threads that ran transactions. */
        p->threads = h->is_dump ? __atomic_load_n(&th[0].tid, __ATOMIC_RELAXED) : live;
        if (__atomic_load_n(&th[0].seq, __ATOMIC_ACQUIRE) == s0)
            break;
    }
}

/* Application counters: those whose name is written, in table order. */
static void read_ucounters(const struct snap_args *a) {
    const struct tks_header *h = a->h;
    struct tkr_proc *p = a->p;
    p->nucounters = 0;
    if (!h->ucounters_offset || !p->ucounters)
        return;
    const struct tks_ucounter *u = (const struct tks_ucounter *)(a->m->base + h->ucounters_offset);
    unsigned n =
        __atomic_load_n(&((const struct tks_header *)a->m->base)->nucounters, __ATOMIC_ACQUIRE);
    if (n > h->max_ucounters)
        n = h->max_ucounters;
    for (unsigned i = 0; i < n; i++) {
        if (__atomic_load_n(&u[i].state, __ATOMIC_ACQUIRE) != 1)
            continue;
        struct tkr_ucounter *d = &p->ucounters[p->nucounters++];
        copy_field(d->name, sizeof d->name, u[i].name, sizeof u[i].name);
        d->kind = u[i].kind == TKS_UC_LEVEL ? TKS_UC_LEVEL : TKS_UC_EVENTS;
        d->value = __atomic_load_n(&u[i].value, __ATOMIC_RELAXED);
    }
}

/* Guarded phase 2: sites and counters. */
static int snapshot(const struct snap_args *a) {
    if (sigsetjmp(bus_jb, 1))
        return -1;
    bus_armed = 1;
    read_sites(a);
    read_counters(a);
    read_ucounters(a);
    bus_armed = 0;
    return 0;
}

/* ------------------------------------------------------------ one file */

void tkr_proc_free(struct tkr_proc *p) {
    free(p->ucounters);
    p->ucounters = NULL;
    p->nucounters = 0;
    free(p->sites);
    free(p->counters);
    p->sites = NULL;
    p->counters = NULL;
    p->nsites = 0;
}

/* Remove a dead owner's segment, unless the name now holds another file
 * (a new process that reused the pid). */
static int remove_dead(int dirfd, const char *name, const struct stat *st) {
    struct stat now;
    if (fstatat(dirfd, name, &now, AT_SYMLINK_NOFOLLOW) != 0 || now.st_ino != st->st_ino ||
        now.st_dev != st->st_dev)
        return 0;
    return unlinkat(dirfd, name, 0) == 0;
}

static void sleep_ms(long ms) {
    struct timespec d = {0, ms * 1000000L};
    nanosleep(&d, NULL);
}

enum tkr_result tkr_read(int dirfd, const char *name, unsigned flags, struct tkr_proc *p, char *why,
                         size_t wlen, char *note, size_t nlen) {
    typedef unsigned long long ull;
    memset(p, 0, sizeof *p);
    why[0] = '\0';
    note[0] = '\0';
    snprintf(p->file, sizeof p->file, "%s", name);
    bus_install();

    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT && (flags & TKR_SEGMENT))
            return TKR_ABSENT; /* the process exited meanwhile */
        if (errno == ELOOP)
            snprintf(why, wlen, "a symbolic link (not followed)");
        else
            snprintf(why, wlen, "%s", strerror(errno));
        return TKR_BAD;
    }
    enum tkr_result res = TKR_BAD;
    struct mapped m = {NULL, 0};
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(why, wlen, "%s", strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, wlen, "not a regular file");
        goto out;
    }
    if ((flags & TKR_SEGMENT) && st.st_uid != tkr_uid()) {
        snprintf(why, wlen, "owned by uid %u, not by you (uid %u)", (unsigned)st.st_uid,
                 (unsigned)tkr_uid());
        goto out;
    }
    /* Modification time: a writer creating its segment has just set it. */
    double age = now_realtime() - ((double)st.st_mtim.tv_sec + (double)st.st_mtim.tv_nsec / 1e9);
    if (st.st_size == 0) {
        /* The writer creates the file, locks it, then sizes it: a young empty
         * one is being created (and must not be locked, even briefly). */
        if ((flags & TKR_SEGMENT) && age < FRESH_SECONDS)
            res = TKR_ABSENT;
        else
            snprintf(why, wlen, "empty file");
        goto out;
    }
    if ((uint64_t)st.st_size < sizeof(struct tks_header)) {
        snprintf(why, wlen, "truncated: %llu bytes, shorter than the %zu-byte header",
                 (ull)st.st_size, sizeof(struct tks_header));
        goto out;
    }
    m.size = (size_t)st.st_size;
    void *map = mmap(NULL, m.size, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        snprintf(why, wlen, "cannot map: %s", strerror(errno));
        m.size = 0;
        goto out;
    }
    m.base = map;

    /* A live owner holds an exclusive lock for its whole life. */
    int dead = 0;
    if (flags & TKR_SEGMENT) {
        dead = flock(fd, LOCK_EX | LOCK_NB) == 0;
        /* Unlinked meanwhile: its owner exited normally (it removes its
         * segment, then its lock goes), or someone else cleaned it up. */
        struct stat now;
        if (dead && fstat(fd, &now) == 0 && now.st_nlink == 0) {
            res = TKR_ABSENT;
            goto out;
        }
    }

    struct tks_header h;
    for (unsigned attempt = 0;; attempt++) {
        if (copy_header(&m, &h) != 0) {
            snprintf(why, wlen, "the file shrank while being read");
            goto out;
        }
        if (!dead && (flags & TKR_SEGMENT) && all_zero(h.magic, sizeof h.magic)) {
            res = TKR_ABSENT; /* sized, header not written yet */
            goto out;
        }
        if (validate(&h, (uint64_t)st.st_size, flags, name, why, wlen) == 0)
            break;
        if (dead || !(flags & TKR_SEGMENT) || attempt >= HEADER_RETRIES || age >= FRESH_SECONDS)
            goto out;
        sleep_ms(2); /* a live writer may be filling it in */
    }

    struct live_fields lf;
    if (copy_live_fields(&m, &lf) != 0) {
        snprintf(why, wlen, "the file shrank while being read");
        goto out;
    }
    unsigned nthreads = lf.nthreads, nsites = lf.nsites;
    size_t nl = 0;
    if (nthreads > h.max_threads) {
        nl += (size_t)snprintf(note + nl, nlen - nl, "nthreads %u > max_threads %u (clamped)",
                               lf.nthreads, h.max_threads);
        nthreads = h.max_threads;
    }
    if (nthreads == 0)
        nthreads = 1; /* slot 0 always exists */
    if (nsites > h.max_sites) {
        if (nl < nlen)
            nl += (size_t)snprintf(note + nl, nlen - nl, "%snsites %u > max_sites %u (clamped)",
                                   nl ? "; " : "", lf.nsites, h.max_sites);
        nsites = h.max_sites;
    }
    if (!isfinite(lf.ns_per_tick) || lf.ns_per_tick < 0 || lf.ns_per_tick > 1e6) {
        if (nl < nlen)
            snprintf(note + nl, nlen - nl, "%sns_per_tick %g is not a plausible clock (times n/a)",
                     nl ? "; " : "", lf.ns_per_tick);
        lf.ns_per_tick = 0;
    }

    p->sites = calloc(nsites ? nsites : 1, sizeof *p->sites);
    p->counters = calloc(nsites ? nsites : 1, sizeof *p->counters);
    if (!p->sites || !p->counters) {
        snprintf(why, wlen, "out of memory");
        tkr_proc_free(p);
        goto out;
    }
    p->nsites = nsites;
    if (h.ucounters_offset && h.max_ucounters &&
        !(p->ucounters = calloc(h.max_ucounters, sizeof *p->ucounters))) {
        snprintf(why, wlen, "out of memory");
        tkr_proc_free(p);
        goto out;
    }
    struct datamap dm;
    datamap_build(&dm, fd, h.matrix_offset,
                  h.matrix_offset +
                      (uint64_t)h.max_threads * h.max_sites * sizeof(struct tks_counters));
    struct snap_args a = {&m, &h, nthreads, nsites, p, &dm};
    int shrank = snapshot(&a) != 0;
    free(dm.bits);
    if (shrank) {
        snprintf(why, wlen, "the file shrank while being read");
        tkr_proc_free(p);
        goto out;
    }
    p->pid = h.pid;
    p->start_time = h.start_time;
    p->created_ns = h.created_ns;
    p->uid = h.uid;
    p->is_dump = (int)h.is_dump;
    p->ns_per_tick = lf.ns_per_tick;
    p->shared_threads = lf.shared_threads;
    copy_field(p->name, sizeof p->name, h.name, sizeof h.name);
    copy_field(p->cmdline, sizeof p->cmdline, h.cmdline, sizeof h.cmdline);
    copy_field(p->cm, sizeof p->cm, h.cm, sizeof h.cm);
    if (dead) {
        if (flags & TKR_REMOVE_GONE)
            remove_dead(dirfd, name, &st);
        res = TKR_GONE;
    } else {
        res = TKR_LIVE;
    }
out:
    if (m.base)
        munmap((void *)m.base, m.size);
    close(fd); /* releases a dead owner's lock we took */
    return res;
}

/* ----------------------------------------------------------- directory */

int tkr_default_dir(char *buf, size_t len) {
    const char *env = getenv("TXKIT_STATS_DIR");
    int n = env && *env ? snprintf(buf, len, "%s", env)
                        : snprintf(buf, len, "/dev/shm/txkit-%u", (unsigned)tkr_uid());
    return n > 0 && (size_t)n < len ? 0 : -1;
}

int tkr_open_dir(const char *dir, int *fdp, char *why, size_t wlen) {
    struct stat st, st2;
    if (lstat(dir, &st) != 0) {
        if (errno == ENOENT)
            return 1;
        snprintf(why, wlen, "%s: %s", dir, strerror(errno));
        return -1;
    }
    if (S_ISLNK(st.st_mode)) {
        snprintf(why, wlen,
                 "%s is a symbolic link: the statistics directory must be a real directory", dir);
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(why, wlen, "%s is not a directory", dir);
        return -1;
    }
    if (st.st_uid != tkr_uid()) {
        snprintf(
            why, wlen,
            "%s belongs to uid %u, not to you (uid %u): refusing to read another user's statistics",
            dir, (unsigned)st.st_uid, (unsigned)tkr_uid());
        return -1;
    }
    if (st.st_mode & 077) {
        snprintf(why, wlen,
                 "%s has mode %04o: a statistics directory must be private to you (0700)", dir,
                 (unsigned)(st.st_mode & 07777));
        return -1;
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, wlen, "%s: %s", dir, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st2) != 0 || st2.st_ino != st.st_ino || st2.st_dev != st.st_dev) {
        snprintf(why, wlen, "%s changed while being opened", dir);
        close(fd);
        return -1;
    }
    *fdp = fd;
    return 0;
}

static int grow(void **arr, size_t *cap, size_t n, size_t elem) {
    if (n < *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 16;
    void *a = realloc(*arr, nc * elem);
    if (!a)
        return -1;
    *arr = a;
    *cap = nc;
    return 0;
}

static int by_pid(const void *a, const void *b) {
    const struct tkr_proc *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return strcmp(x->file, y->file);
}

static int by_file(const void *a, const void *b) {
    return strcmp(((const struct tkr_problem *)a)->file, ((const struct tkr_problem *)b)->file);
}

static void add_problem(struct tkr_scan *s, size_t *cap, int dirfd, const char *name,
                        const char *msg, int fatal) {
    if (grow((void **)&s->problems, cap, s->nproblems, sizeof *s->problems) != 0)
        return;
    struct tkr_problem *pr = &s->problems[s->nproblems++];
    memset(pr, 0, sizeof *pr);
    snprintf(pr->file, sizeof pr->file, "%s", name);
    printable(pr->file);
    snprintf(pr->msg, sizeof pr->msg, "%s", msg);
    pr->fatal = fatal;
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        pr->dev = st.st_dev;
        pr->ino = st.st_ino;
    }
}

int tkr_scan_dir(const char *dir, struct tkr_scan *out, char *why, size_t wlen) {
    memset(out, 0, sizeof *out);
    int fd;
    int r = tkr_open_dir(dir, &fd, why, wlen);
    if (r != 0)
        return r;
    DIR *d = fdopendir(fd);
    if (!d) {
        snprintf(why, wlen, "%s: %s", dir, strerror(errno));
        close(fd);
        return -1;
    }
    size_t cap_p = 0, cap_g = 0, cap_e = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".seg") != 0)
            continue;
        if (n >= TKR_FILE_MAX) {
            add_problem(out, &cap_e, fd, e->d_name, "file name too long", 1);
            continue;
        }
        struct tkr_proc p;
        char bad[320], note[320];
        enum tkr_result res = tkr_read(fd, e->d_name, TKR_SEGMENT | TKR_REMOVE_GONE, &p, bad,
                                       sizeof bad, note, sizeof note);
        switch (res) {
        case TKR_ABSENT:
            break;
        case TKR_BAD:
            add_problem(out, &cap_e, fd, e->d_name, bad, 1);
            break;
        case TKR_GONE:
            if (grow((void **)&out->gone, &cap_g, out->ngone, sizeof *out->gone) == 0) {
                struct tkr_gone *g = &out->gone[out->ngone++];
                struct tks_counters sum;
                tkc_sum_transactions(&sum, p.counters, p.sites, p.nsites);
                g->pid = p.pid;
                snprintf(g->name, sizeof g->name, "%s", p.name);
                snprintf(g->file, sizeof g->file, "%s", p.file);
                g->commits = tkc_commits(&sum);
                g->aborts = tkc_aborts(&sum);
                g->removed = faccessat(fd, e->d_name, F_OK, AT_SYMLINK_NOFOLLOW) != 0;
            }
            tkr_proc_free(&p);
            break;
        case TKR_LIVE:
            if (note[0])
                add_problem(out, &cap_e, fd, e->d_name, note, 0);
            if (grow((void **)&out->procs, &cap_p, out->nprocs, sizeof *out->procs) != 0) {
                tkr_proc_free(&p);
                add_problem(out, &cap_e, fd, e->d_name, "out of memory", 1);
                break;
            }
            out->procs[out->nprocs++] = p;
            break;
        }
    }
    closedir(d);
    if (out->nprocs > 1)
        qsort(out->procs, out->nprocs, sizeof *out->procs, by_pid);
    if (out->nproblems > 1)
        qsort(out->problems, out->nproblems, sizeof *out->problems, by_file);
    return 0;
}

void tkr_scan_free(struct tkr_scan *s) {
    for (size_t i = 0; i < s->nprocs; i++)
        tkr_proc_free(&s->procs[i]);
    free(s->procs);
    free(s->gone);
    free(s->problems);
    memset(s, 0, sizeof *s);
}
