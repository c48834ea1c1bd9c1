/* SPDX-License-Identifier: MIT */
/* segment.c - publishing this process's statistics (format.h).
 *
 * The segment is created at the first transaction of the process (a program
 * that links txkit but never runs a transaction, like the txkit command,
 * publishes nothing). When it cannot be created (no /dev/shm, a directory
 * owned by someone else, TXKIT_STATS=private) the same layout lives in
 * private memory, so counting works the same and only publication is lost;
 * the reason is said once on stderr.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "runtime/internal.h"
#include "stats/format.h"

static pthread_mutex_t seg_lock = PTHREAD_MUTEX_INITIALIZER;
/* The contention manager's name, as cm.c last told us (tk_seg_set_cm; it
 * does at load time too), for the header of a segment made later. */
static char cm_name[sizeof((struct tks_header *)0)->cm];
static struct tks_header *seg; /* the mapping, NULL until first use */
static size_t seg_size;
static char seg_path[256];
static unsigned threads_seen;             /* threads that ever ran a transaction */
uintptr_t tk_seg_shared_lo = UINTPTR_MAX; /* start of the shared row (internal.h) */
/* Our own copies of the header's counts: the shared header can be written by
 * any process of the user, so the writer never trusts what it reads back. */
static unsigned my_nsites, my_nthreads, my_shared_threads;

/* Parts start on page boundaries: every thread slot then sits in a cache line
 * of its own (its owner writes it on every transaction), and rows too. */
#define PAGE 4096u
static size_t page_up(size_t n) { return (n + PAGE - 1) & ~(size_t)(PAGE - 1); }
static size_t threads_off(void) { return page_up(sizeof(struct tks_header)); }
static size_t sites_off(void) {
    return threads_off() + page_up(TKS_MAX_THREADS * sizeof(struct tks_thread));
}
static size_t ucounters_off(void) {
    return sites_off() + page_up(TKS_MAX_SITES * sizeof(struct tks_site));
}
static size_t matrix_off(void) {
    return ucounters_off() + page_up(TKS_MAX_UCOUNTERS * sizeof(struct tks_ucounter));
}
static size_t segment_size(void) {
    return matrix_off() + (size_t)TKS_MAX_THREADS * TKS_MAX_SITES * sizeof(struct tks_counters);
}

/* The parts of our own segment, where fill_header put them: from the
 * layout, never from the header in the file, which anyone who may write the
 * file could change under us (garbage written into a live segment crashed
 * the program at its next transaction). */
struct tks_thread *tk_seg_threads(void) {
    return (struct tks_thread *)((char *)seg + threads_off());
}
static struct tks_site *seg_sites(void) { return (struct tks_site *)((char *)seg + sites_off()); }
static struct tks_ucounter *seg_ucounters(void) {
    return (struct tks_ucounter *)((char *)seg + ucounters_off());
}
struct tks_counters *tk_seg_row(unsigned slot) {
    return (struct tks_counters *)((char *)seg + matrix_off()) + (size_t)slot * TKS_MAX_SITES;
}

static uint64_t proc_start_time(void) {
    /* Field 22 of /proc/self/stat; the command name (field 2) may hold spaces. */
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (!p)
        return 0;
    unsigned long long v = 0;
    /* after ") ": state(3) ppid(4) ... starttime(22) */
    if (sscanf(p + 2,
               "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d "
               "%*d %llu",
               &v) != 1)
        return 0;
    return v;
}

static void read_cmdline(char *dst, size_t len) {
    dst[0] = '\0';
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, dst, len - 1);
    close(fd);
    if (n <= 0)
        return;
    for (ssize_t i = 0; i < n - 1; i++)
        if (dst[i] == '\0')
            dst[i] = ' ';
    dst[n] = '\0';
}

/* Everything but the magic, which the caller writes last. */
static void fill_header(struct tks_header *h, size_t size) {
    h->version = TKS_VERSION;
    h->header_size = sizeof *h;
    h->counters_size = sizeof(struct tks_counters);
    h->thread_size = sizeof(struct tks_thread);
    h->site_size = sizeof(struct tks_site);
    h->max_threads = TKS_MAX_THREADS;
    h->max_sites = TKS_MAX_SITES;
    h->uid = (uint32_t)getuid();
    h->pid = (uint64_t)getpid();
    h->start_time = proc_start_time();
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    h->created_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    h->threads_offset = threads_off();
    h->sites_offset = sites_off();
    h->matrix_offset = matrix_off();
    h->ucounters_offset = ucounters_off();
    h->max_ucounters = TKS_MAX_UCOUNTERS;
    h->file_size = size;
    snprintf(h->cm, sizeof h->cm, "%s", cm_name);
    h->shared_slot = TKS_SHARED_SLOT;
    h->shared_threads = my_shared_threads = 0;
    h->nthreads = my_nthreads = 1; /* slot 0: threads that exited, added up */
    h->nsites = my_nsites = 2;     /* sites 0 and 1: sites and locks beyond TKS_MAX_SITES */
    struct tks_site *other = (struct tks_site *)((char *)h + h->sites_offset);
    snprintf(other[TKS_SITE_OTHER].file, sizeof other->file, "(other sites)");
    other[TKS_SITE_OTHER].state = 1;
    snprintf(other[TKS_SITE_OTHER_LOCKS].file, sizeof other->file, "(other locks)");
    other[TKS_SITE_OTHER_LOCKS].kind = TKS_SITE_LOCK;
    other[TKS_SITE_OTHER_LOCKS].state = 1;
    if (prctl(PR_GET_NAME, h->name, 0, 0, 0) != 0)
        h->name[0] = '\0';
    read_cmdline(h->cmdline, sizeof h->cmdline);
}

/* The per-user directory: ours, a directory, not a link, mode 0700. */
static int check_dir(const char *dir, char *why, size_t len) {
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(why, len, "cannot create %s: %s", dir, strerror(errno));
        return -1;
    }
    struct stat st;
    if (lstat(dir, &st) != 0) {
        snprintf(why, len, "%s: %s", dir, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 077)) {
        snprintf(why, len, "%s is not a private directory of this user (uid %u, mode %o)", dir,
                 (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
        return -1;
    }
    return 0;
}

int tk_seg_dir(char *buf, size_t len) {
    const char *env = getenv("TXKIT_STATS_DIR");
    int n = env && *env ? snprintf(buf, len, "%s", env)
                        : snprintf(buf, len, "/dev/shm/txkit-%u", (unsigned)getuid());
    return n > 0 && (size_t)n < len ? 0 : -1;
}

/* Remove the files (NAME.SUFFIX) of processes that died without removing
 * theirs (a crash, _exit): their lock is free. Done once, when we create ours. */
static void clean_dead(const char *dir, const char *suffix) {
    DIR *d = opendir(dir);
    if (!d)
        return;
    size_t sl = strlen(suffix);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n <= sl + 1 || e->d_name[n - sl - 1] != '.' || strcmp(e->d_name + n - sl, suffix) != 0)
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0)
            continue;
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            unlink(path);
        close(fd);
    }
    closedir(d);
}

/* Build the file under a temporary name (locked, sized, filled by fill, whose
 * magic it writes last) and rename it into place, so no reader or cleaner
 * ever sees an unlocked or half-made DIR/<pid>.SUFFIX. */
void *tk_seg_publish(const char *suffix, size_t size, void (*fill)(void *map, size_t size),
                     char *path, size_t plen, char *why, size_t wlen) {
    char dir[200], tmp[300];
    if (tk_seg_dir(dir, sizeof dir) != 0) {
        snprintf(why, wlen, "TXKIT_STATS_DIR is too long");
        return NULL;
    }
    if (check_dir(dir, why, wlen) != 0)
        return NULL;
    clean_dead(dir, suffix);
    /* The file is sparse and mapped shared: its pages are allocated when they
     * are first written, and a write that finds the file system full is a
     * SIGBUS, not an error. So only publish where the whole file fits (the
     * most it can ever take); a file system that fills up later while the
     * program runs can still stop it. */
    struct statvfs vfs;
    if (statvfs(dir, &vfs) == 0 && (uint64_t)vfs.f_bavail * vfs.f_frsize < size) {
        snprintf(why, wlen, "%s has %llu KiB free, less than the %zu KiB the statistics may need",
                 dir, (unsigned long long)vfs.f_bavail * vfs.f_frsize / 1024, size / 1024);
        return NULL;
    }
    snprintf(path, plen, "%s/%ld.%s", dir, (long)getpid(), suffix);
    snprintf(tmp, sizeof tmp, "%s/.%ld.%s.tmp", dir, (long)getpid(), suffix);
    unlink(tmp);
    int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(why, wlen, "cannot create %s: %s", tmp, strerror(errno));
        return NULL;
    }
    void *p = MAP_FAILED;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0 || ftruncate(fd, (off_t)size) != 0 ||
        (p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
        snprintf(why, wlen, "cannot set up %s: %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        return NULL;
    }
    fill(p, size);
    /* A file of that name belongs to a dead process whose pid we reuse. */
    if (rename(tmp, path) != 0) {
        snprintf(why, wlen, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        munmap(p, size);
        close(fd);
        unlink(tmp);
        path[0] = '\0';
        return NULL;
    }
    /* The mapping keeps the file open, and so its lock (an flock belongs to
     * the open file, which the mapping holds until munmap or exit): no
     * descriptor of ours stays in the program's table. One kept there was the
     * program's to close and reuse: a daemon that closed every descriptor and
     * opened its own file under that number lost it in a fork's child, whose
     * handler closed "ours"; and with stdin or stdout closed the file became
     * descriptor 0 or 1, which the program then read or wrote (the
     * statistics' magic as its input). */
    close(fd);
    return p;
}

/* The segment's fill: the header, then the magic. */
static void fill_segment(void *map, size_t size) {
    fill_header(map, size);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    memcpy(((struct tks_header *)map)->magic, TKS_MAGIC, 8);
}

static int create_shared(size_t size, char *why, size_t wlen) {
    void *p = tk_seg_publish("seg", size, fill_segment, seg_path, sizeof seg_path, why, wlen);
    if (!p)
        return -1;
    seg = p;
    return 0;
}

static void ucounters_republish(void);

/* Called with seg_lock held. */
static void seg_create(void) {
    size_t size = segment_size();
    char why[320] = "";
    const char *mode = getenv("TXKIT_STATS");
    int publish = !(mode && strcmp(mode, "private") == 0);
    if (!publish || create_shared(size, why, sizeof why) != 0) {
        void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED)
            TK_FATAL("cannot map %zu bytes for statistics", size);
        seg = p;
        seg_path[0] = '\0';
        fill_header(seg, size);
        memcpy(seg->magic, TKS_MAGIC, 8);
        if (publish)
            fprintf(stderr,
                    "txkit: statistics not published (txkit stat cannot see this process): %s\n",
                    why);
    }
    seg_size = size;
    __atomic_store_n(&tk_seg_shared_lo, (uintptr_t)tk_seg_row(TKS_SHARED_SLOT), __ATOMIC_RELAXED);
    ucounters_republish();
}


/* ------------------------------------------------- application counters
 * The handles are private (they survive fork(), the segment does not): a
 * handle is an index into the segment's table, whose names are written again
 * into each new segment. */
struct txkit_counter {
    unsigned idx;
};
static struct txkit_counter uc_handles[TKS_MAX_UCOUNTERS];
static char uc_names[TKS_MAX_UCOUNTERS][48];
static uint32_t uc_kinds[TKS_MAX_UCOUNTERS];
static unsigned uc_count;

/* seg_lock held, seg set: names and kinds of every counter, values at zero. */
static void ucounters_republish(void) {
    struct tks_ucounter *u = seg_ucounters();
    for (unsigned i = 0; i < uc_count; i++) {
        memcpy(u[i].name, uc_names[i], sizeof u[i].name);
        u[i].kind = uc_kinds[i];
        __atomic_store_n(&u[i].state, 1, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&seg->nucounters, uc_count, __ATOMIC_RELEASE);
}

txkit_counter_t *txkit_counter(const char *name, int kind) {
    size_t len = name ? strlen(name) : 0;
    if (len == 0 || len >= sizeof uc_names[0] ||
        (kind != TXKIT_COUNTER_EVENTS && kind != TXKIT_COUNTER_LEVEL)) {
        errno = EINVAL;
        return NULL;
    }
    if (tk_cfg.stats_off) {
        errno = ENOTSUP;
        return NULL;
    }
    tk_mutex_lock(&seg_lock);
    if (!seg)
        seg_create();
    struct txkit_counter *c = NULL;
    for (unsigned i = 0; i < uc_count && !c; i++)
        if (strcmp(uc_names[i], name) == 0)
            c = &uc_handles[i];
    if (!c && uc_count < TKS_MAX_UCOUNTERS) {
        unsigned i = uc_count++;
        memcpy(uc_names[i], name, len + 1);
        uc_kinds[i] = (uint32_t)kind;
        uc_handles[i].idx = i;
        c = &uc_handles[i];
        struct tks_ucounter *u = &seg_ucounters()[i];
        memcpy(u->name, uc_names[i], sizeof u->name);
        u->kind = (uint32_t)kind;
        __atomic_store_n(&u->state, 1, __ATOMIC_RELEASE);
        __atomic_store_n(&seg->nucounters, uc_count, __ATOMIC_RELEASE);
    }
    tk_mutex_unlock(&seg_lock);
    if (!c)
        errno = ENOSPC;
    return c;
}

/* The counter's value in the current segment; after fork() the child's
 * segment is made at its first use. */
static int64_t *uc_value(const txkit_counter_t *c) {
    struct tks_header *h = __atomic_load_n(&seg, __ATOMIC_ACQUIRE);
    if (TXKIT_UNLIKELY(!h)) {
        tk_mutex_lock(&seg_lock);
        if (!seg)
            seg_create();
        h = seg;
        tk_mutex_unlock(&seg_lock);
    }
    return &((struct tks_ucounter *)((char *)h + ucounters_off()))[c->idx].value; /* (the layout) */
}

void txkit_counter_add(txkit_counter_t *c, int64_t delta) {
    if (c)
        __atomic_fetch_add(uc_value(c), delta, __ATOMIC_RELAXED);
}

void txkit_counter_set(txkit_counter_t *c, int64_t value) {
    if (c)
        __atomic_store_n(uc_value(c), value, __ATOMIC_RELAXED);
}

int64_t txkit_counter_get(const txkit_counter_t *c) {
    return c ? __atomic_load_n(uc_value(c), __ATOMIC_RELAXED) : 0;
}

/* A slot of its own for the thread, or, when every one is taken, the shared
 * slot: its row takes atomic adds (TK_COUNT), its seqlock is the thread's
 * own_slot, which no reader looks at. */
void tk_seg_thread_attach(tk_thread *t) {
    tk_mutex_lock(&seg_lock);
    if (!seg)
        seg_create();
    struct tks_thread *th = tk_seg_threads();
    unsigned slot = TKS_SHARED_SLOT;
    for (unsigned i = 1; i < TKS_SHARED_SLOT; i++) {
        if (th[i].state != TKS_LIVE) {
            slot = i;
            break;
        }
    }
    if (slot == TKS_SHARED_SLOT) {
        __atomic_store_n(&th[slot].shared, th[slot].shared + 1, __ATOMIC_RELAXED);
        __atomic_store_n(&seg->shared_threads, ++my_shared_threads, __ATOMIC_RELAXED);
        memset(&t->own_slot, 0, sizeof t->own_slot);
        t->own_slot.state = TKS_LIVE;
        t->slot = &t->own_slot;
    } else {
        th[slot].tid = (uint32_t)gettid();
        th[slot].cur_site = 0;
        t->slot = &th[slot];
    }
    __atomic_store_n(&th[slot].state, TKS_LIVE, __ATOMIC_RELEASE);
    if (slot >= my_nthreads) {
        my_nthreads = slot + 1;
        __atomic_store_n(&seg->nthreads, my_nthreads, __ATOMIC_RELEASE);
    }
    threads_seen++;
    tk_mutex_unlock(&seg_lock);
    t->slot_index = slot;
    t->row = tk_seg_row(slot);
    t->cnt = t->row;
}

static void add_counters(struct tks_counters *dst, const struct tks_counters *src) {
    const uint64_t *s = (const uint64_t *)src;
    uint64_t *d = (uint64_t *)dst;
    uint64_t old_max = dst->inside_max, old_code = dst->explicit_code;
    size_t n = sizeof *src / sizeof(uint64_t);
    for (size_t i = 0; i < n; i++)
        d[i] += __atomic_load_n(&s[i], __ATOMIC_RELAXED);
    tks_fold(dst); /* dst's own came folded, or zero */
    /* not sums: the largest, and the last seen */
    uint64_t m = __atomic_load_n(&src->inside_max, __ATOMIC_RELAXED);
    dst->inside_max = old_max > m ? old_max : m;
    uint64_t c = __atomic_load_n(&src->explicit_code, __ATOMIC_RELAXED);
    dst->explicit_code = c ? c : old_code;
}

/* Fold an exiting thread's row into slot 0 and free its slot, as one update
 * for readers: slot 0's seq stays odd until the row is zeroed and free. */
void tk_seg_thread_detach(tk_thread *t) {
    if (!t->slot)
        return;
    tk_mutex_lock(&seg_lock);
    struct tks_thread *th = tk_seg_threads();
    if (t->slot_index == TKS_SHARED_SLOT) { /* its counts stay in the shared row */
        __atomic_store_n(&th[TKS_SHARED_SLOT].shared, th[TKS_SHARED_SLOT].shared - 1,
                         __ATOMIC_RELAXED);
        tk_mutex_unlock(&seg_lock);
        t->slot = NULL;
        t->row = t->cnt = NULL;
        return;
    }
    struct tks_counters *retired = tk_seg_row(0);
    unsigned nsites = my_nsites;
    __atomic_store_n(&th[0].seq, th[0].seq + 1, __ATOMIC_RELAXED);
    t->slot->seq++;
    __atomic_thread_fence(__ATOMIC_RELEASE);
    for (unsigned s = 0; s < nsites; s++)
        add_counters(&retired[s], &t->row[s]);
    memset(t->row, 0, nsites * sizeof *t->row);
    t->slot->cur_site = 0;
    __atomic_store_n(&t->slot->state, TKS_FREE, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    t->slot->seq++;
    __atomic_store_n(&th[0].seq, th[0].seq + 1, __ATOMIC_RELAXED);
    tk_mutex_unlock(&seg_lock);
    t->slot = NULL;
    t->row = t->cnt = NULL;
}

unsigned tk_seg_site_register(unsigned kind, uint64_t key, const char *file, const char *func,
                              int line) {
    tk_mutex_lock(&seg_lock);
    if (!seg)
        seg_create();
    unsigned idx = my_nsites;
    if (idx >= TKS_MAX_SITES) { /* full: lock sections must not count as transactions */
        tk_mutex_unlock(&seg_lock);
        return kind == TKS_SITE_LOCK ? TKS_SITE_OTHER_LOCKS : TKS_SITE_OTHER;
    }
    struct tks_site *s = &seg_sites()[idx];
    s->kind = kind;
    s->key = key;
    s->line = line > 0 ? (uint32_t)line : 0;
    snprintf(s->file, sizeof s->file, "%s", file ? file : "?");
    snprintf(s->func, sizeof s->func, "%s", func ? func : "?");
    __atomic_store_n(&s->state, 1, __ATOMIC_RELEASE);
    my_nsites = idx + 1;
    __atomic_store_n(&seg->nsites, my_nsites, __ATOMIC_RELEASE);
    tk_mutex_unlock(&seg_lock);
    return idx;
}

/* Add up the transaction sites of every slot into *out (a reader's view of
 * our own segment); lock sites (cx sections) are not transactions. */
void tk_seg_sum(struct tks_counters *out, unsigned *threads) {
    memset(out, 0, sizeof *out);
    tk_mutex_lock(&seg_lock);
    if (seg) {
        struct tks_thread *th = tk_seg_threads();
        struct tks_site *sites = seg_sites();
        unsigned nthreads = my_nthreads, nsites = my_nsites;
        for (unsigned i = 0; i < nthreads; i++) {
            if (i != 0 && th[i].state != TKS_LIVE)
                continue;
            struct tks_counters *row = tk_seg_row(i);
            for (unsigned s = 0; s < nsites; s++)
                if (sites[s].kind != TKS_SITE_LOCK)
                    add_counters(out, &row[s]);
        }
    }
    *threads = threads_seen;
    tk_mutex_unlock(&seg_lock);
}

/* One line per cx lock that was entered (TXKIT_STATS=1's exit summary): lock
 * sections are not transactions, so tx_stats_print omits them. Elided mutexes
 * have lines of their own (cx/elide.c). */
void tk_seg_print_locks(FILE *f) {
    tk_mutex_lock(&seg_lock);
    if (seg) {
        struct tks_thread *th = tk_seg_threads();
        struct tks_site *sites = seg_sites();
        unsigned nthreads = my_nthreads, nsites = my_nsites, shown = 0;
        for (unsigned s = 0; s < nsites; s++) {
            if (sites[s].kind != TKS_SITE_LOCK ||
                (tk_lock_reported_elsewhere && tk_lock_reported_elsewhere(sites[s].key)))
                continue;
            struct tks_counters c;
            memset(&c, 0, sizeof c);
            for (unsigned i = 0; i < nthreads; i++)
                if (i == 0 || th[i].state == TKS_LIVE)
                    add_counters(&c, &tk_seg_row(i)[s]);
            unsigned long long opt = c.commits[TXKIT_HTM], shr = c.commits[TXKIT_STM],
                               excl = c.commits[TXKIT_SERIAL], ab = 0;
            for (int m = 0; m < TKS_NMETHODS; m++)
                ab += c.aborts[m];
            if (!c.transactions && !opt && !shr && !excl && !ab)
                continue;
            if (!shown++)
                fprintf(f, "  locks (sections are not transactions):\n");
            const char *obj = strrchr(sites[s].file, '/');
            char shared[48] = ""; /* cx_shared sections without RTM, when there were any */
            if (shr)
                snprintf(shared, sizeof shared, "shared %llu, ", shr);
            char which[400]; /* the "(other locks)" site (TKS_SITE_OTHER_LOCKS) has no lock */
            if (s == TKS_SITE_OTHER_LOCKS)
                snprintf(which, sizeof which, "%s", sites[s].file);
            else
                snprintf(which, sizeof which, "lock %#llx first taken in %s (%s)",
                         (unsigned long long)sites[s].key, sites[s].func,
                         obj ? obj + 1 : sites[s].file);
            fprintf(f,
                    "    %s: %llu sections (optimistic %llu, %sexclusive %llu), "
                    "%llu aborts, went exclusive after aborts %llu\n",
                    which, opt + shr + excl, opt, shared, excl, ab,
                    (unsigned long long)c.to_serial);
        }
    }
    tk_mutex_unlock(&seg_lock);
}

unsigned tk_seg_shared_threads(void) {
    tk_mutex_lock(&seg_lock);
    unsigned n = my_shared_threads;
    tk_mutex_unlock(&seg_lock);
    return n;
}

void tk_seg_set_cm(const char *name) {
    tk_mutex_lock(&seg_lock);
    snprintf(cm_name, sizeof cm_name, "%s", name);
    if (seg)
        snprintf(seg->cm, sizeof seg->cm, "%s", name);
    tk_mutex_unlock(&seg_lock);
}

void tk_seg_set_ns_per_tick(double v) {
    tk_mutex_lock(&seg_lock);
    if (seg)
        seg->ns_per_tick = v;
    tk_mutex_unlock(&seg_lock);
}

/* fork(): the child must not write into the parent's segment. Its threads are
 * gone but the forking one, whose descriptor gets a fresh slot in a fresh
 * segment (created now: the child may run a transaction at once). */
static void seg_atfork(tk_thread *me, int phase) {
    if (phase != TK_FORK_CHILD)
        return;
    pthread_mutex_init(&seg_lock, NULL);
    tk_seg_shared_lo = UINTPTR_MAX;
    seg_path[0] = '\0'; /* the parent's (its mapping keeps its lock) */
    if (seg)
        munmap(seg, seg_size);
    seg = NULL;
    threads_seen = 0;
    if (me) { /* attached again at its next transaction (tk_start_transaction) */
        me->slot = NULL;
        me->row = me->cnt = NULL;
    }
}

/* At exit: remove the published segment (a reader would find it dead and do
 * the same, but later). */
void tk_seg_unpublish(void) {
    tk_mutex_lock(&seg_lock);
    if (seg_path[0]) {
        unlink(seg_path);
        seg_path[0] = '\0';
    }
    tk_mutex_unlock(&seg_lock);
}

/* TXKIT_STATS=FILE: one slot (every thread added up) and the sites used. */
int tk_seg_dump(const char *path, char *why, size_t wlen) {
    /* The dump replaces path (a file renamed over it): only a regular file
     * may be replaced; a symbolic link, a FIFO or a device (/dev/null as
     * root) would be lost */
    struct stat st;
    if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        snprintf(why, wlen, "%s is not a regular file (%s): nothing written", path,
                 S_ISLNK(st.st_mode)    ? "a symbolic link"
                 : S_ISDIR(st.st_mode)  ? "a directory"
                 : S_ISFIFO(st.st_mode) ? "a FIFO"
                 : S_ISSOCK(st.st_mode) ? "a socket"
                                        : "a device");
        return -1;
    }
    tk_mutex_lock(&seg_lock);
    if (!seg) {
        tk_mutex_unlock(&seg_lock);
        snprintf(why, wlen, "no transaction ran");
        return -1;
    }
    unsigned nsites = my_nsites, nthreads = my_nthreads;
    struct tks_header h = *seg;
    h.max_threads = 1;
    h.max_sites = nsites;
    h.nthreads = 1;
    h.is_dump = 1;
    h.shared_slot = 0; /* one slot: the shared one's counts are in it */
    h.shared_threads = my_shared_threads;
    h.threads_offset = sizeof h;
    h.sites_offset = h.threads_offset + sizeof(struct tks_thread);
    h.matrix_offset = h.sites_offset + nsites * sizeof(struct tks_site);
    unsigned nuc = uc_count;
    h.ucounters_offset = nuc ? h.matrix_offset + nsites * sizeof(struct tks_counters) : 0;
    h.max_ucounters = h.nucounters = nuc;
    h.file_size =
        h.matrix_offset + nsites * sizeof(struct tks_counters) + nuc * sizeof(struct tks_ucounter);
    /* in a dump, tid says how many threads ran transactions */
    struct tks_thread th = {.state = TKS_EXITED, .tid = threads_seen};
    struct tks_counters *sum = calloc(nsites, sizeof *sum);
    if (!sum) {
        tk_mutex_unlock(&seg_lock);
        snprintf(why, wlen, "out of memory");
        return -1;
    }
    struct tks_thread *threads = tk_seg_threads();
    for (unsigned i = 0; i < nthreads; i++) {
        if (i != 0 && threads[i].state != TKS_LIVE)
            continue;
        struct tks_counters *row = tk_seg_row(i);
        for (unsigned s = 0; s < nsites; s++)
            add_counters(&sum[s], &row[s]);
    }
    int rc = -1;
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
    /* Mode 0600 like the segments: the counters and command line are the
     * user's own business. */
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f && fd >= 0) {
        close(fd);
        unlink(tmp);
        snprintf(why, wlen, "cannot write %s: %s", tmp, strerror(errno));
    } else if (!f) {
        snprintf(why, wlen, "cannot create %s: %s", tmp, strerror(errno));
    } else {
        int ok = fwrite(&h, sizeof h, 1, f) == 1 && fwrite(&th, sizeof th, 1, f) == 1 &&
                 fwrite(seg_sites(), sizeof(struct tks_site), nsites, f) == nsites &&
                 fwrite(sum, sizeof *sum, nsites, f) == nsites &&
                 fwrite(seg_ucounters(), sizeof(struct tks_ucounter), nuc, f) == nuc;
        ok = (fclose(f) == 0) && ok;
        if (ok && rename(tmp, path) == 0)
            rc = 0;
        else {
            snprintf(why, wlen, "cannot write %s: %s", path, strerror(errno));
            unlink(tmp);
        }
    }
    free(sum);
    tk_mutex_unlock(&seg_lock);
    return rc;
}

static void seg_thread_exit(tk_thread *t, int arg) {
    (void)arg;
    tk_seg_thread_detach(t);
}

TK_CONSTRUCTOR static void seg_hooks(void) {
    tk_hook_add(TK_HOOK_THREAD_EXIT, TK_EXIT_ORDER_SEGMENT, seg_thread_exit);
    tk_hook_add(TK_HOOK_FORK, TK_FORK_ORDER_SEGMENT, seg_atfork);
}
