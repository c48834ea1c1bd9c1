/* SPDX-License-Identifier: MIT */
/* symbolize.c - symbol+offset (and file:line) for sites dladdr could not name. */
#include "symbolize.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAGE_MASK_X86 (~(uint64_t)4095)
#define MAX_TABLE (256u << 20) /* a symbol or string table larger than this is refused */

struct elf {
    int fd;
    uint64_t size;
    Elf64_Ehdr eh;
    Elf64_Shdr *sh; /* [eh.e_shnum], or NULL */
};

static int read_at(const struct elf *e, void *buf, uint64_t off, uint64_t len) {
    if (off > e->size || len > e->size - off)
        return -1;
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread(e->fd, (char *)buf + done, len - done, (off_t)(off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        done += (size_t)n;
    }
    return 0;
}

/* A table of the file in memory, bounds-checked; NULL when out of range. */
static void *read_table(const struct elf *e, uint64_t off, uint64_t len) {
    if (len == 0 || len > MAX_TABLE)
        return NULL;
    void *p = malloc(len);
    if (p && read_at(e, p, off, len) != 0) {
        free(p);
        p = NULL;
    }
    return p;
}

static void elf_close(struct elf *e) {
    if (e->fd >= 0)
        close(e->fd);
    free(e->sh);
    e->fd = -1;
    e->sh = NULL;
}

static int elf_open(struct elf *e, const char *path) {
    memset(e, 0, sizeof *e);
    e->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (e->fd < 0)
        return -1;
    struct stat st;
    if (fstat(e->fd, &st) != 0 || !S_ISREG(st.st_mode))
        goto bad;
    e->size = (uint64_t)st.st_size;
    if (read_at(e, &e->eh, 0, sizeof e->eh) != 0 || memcmp(e->eh.e_ident, ELFMAG, SELFMAG) != 0 ||
        e->eh.e_ident[EI_CLASS] != ELFCLASS64 || e->eh.e_ident[EI_DATA] != ELFDATA2LSB)
        goto bad;
    if (e->eh.e_shnum && e->eh.e_shentsize == sizeof(Elf64_Shdr))
        e->sh = read_table(e, e->eh.e_shoff, (uint64_t)e->eh.e_shnum * sizeof(Elf64_Shdr));
    return 0;
bad:
    elf_close(e);
    return -1;
}

/* Where dladdr's dli_fbase is in the file's addresses: the first loadable
 * segment's page. */
static int load_base(const struct elf *e, uint64_t *base) {
    if (e->eh.e_phentsize != sizeof(Elf64_Phdr))
        return -1;
    for (unsigned i = 0; i < e->eh.e_phnum; i++) {
        Elf64_Phdr ph;
        if (read_at(e, &ph, e->eh.e_phoff + (uint64_t)i * sizeof ph, sizeof ph) != 0)
            return -1;
        if (ph.p_type == PT_LOAD) {
            *base = ph.p_vaddr & PAGE_MASK_X86;
            return 0;
        }
    }
    return -1;
}

struct symtab {
    Elf64_Sym *sym;
    size_t n;
    char *str;
    uint64_t strsize;
};

/* The table of a type (SHT_SYMTAB or SHT_DYNSYM) with its strings. */
static int symtab_load(const struct elf *e, uint32_t type, struct symtab *t) {
    memset(t, 0, sizeof *t);
    if (!e->sh)
        return -1;
    for (unsigned i = 0; i < e->eh.e_shnum; i++) {
        const Elf64_Shdr *s = &e->sh[i];
        if (s->sh_type != type || s->sh_entsize != sizeof(Elf64_Sym) || s->sh_link >= e->eh.e_shnum)
            continue;
        const Elf64_Shdr *ss = &e->sh[s->sh_link];
        t->sym = read_table(e, s->sh_offset, s->sh_size);
        t->str = read_table(e, ss->sh_offset, ss->sh_size);
        if (!t->sym || !t->str) {
            free(t->sym);
            free(t->str);
            memset(t, 0, sizeof *t);
            return -1;
        }
        t->n = s->sh_size / sizeof(Elf64_Sym);
        t->strsize = ss->sh_size;
        return 0;
    }
    return -1;
}

static void symtab_free(struct symtab *t) {
    free(t->sym);
    free(t->str);
}

/* The symbol's name, or NULL when its offset is out of the string table or
 * the string is not terminated inside it. */
static const char *sym_name(const struct symtab *t, const Elf64_Sym *s) {
    if (s->st_name == 0 || s->st_name >= t->strsize ||
        !memchr(t->str + s->st_name, '\0', t->strsize - s->st_name))
        return NULL;
    return t->str + s->st_name;
}

static int is_code(const Elf64_Sym *s) {
    int type = ELF64_ST_TYPE(s->st_info);
    return (type == STT_FUNC || type == STT_GNU_IFUNC) && s->st_shndx != SHN_UNDEF;
}

static int is_data(const Elf64_Sym *s) {
    return ELF64_ST_TYPE(s->st_info) == STT_OBJECT && s->st_shndx != SHN_UNDEF;
}

/* The symbol covering vaddr: name and offset into it. A function first (code
 * addresses); else a data object (a lock in a global, for the lock report). */
static int by_addr(const struct symtab *t, uint64_t vaddr, char *buf, size_t len) {
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < t->n; i++) {
            const Elf64_Sym *s = &t->sym[i];
            const char *name;
            if (!(pass ? is_data(s) : is_code(s)) || vaddr < s->st_value ||
                vaddr - s->st_value >= (s->st_size ? s->st_size : 1) || !(name = sym_name(t, s)))
                continue;
            snprintf(buf, len, "%s+%#" PRIx64, name, vaddr - s->st_value);
            return 0;
        }
    }
    return -1;
}

static int by_name(const struct symtab *t, const char *name, uint64_t *value) {
    for (size_t i = 0; i < t->n; i++) {
        const char *n;
        if (is_code(&t->sym[i]) && (n = sym_name(t, &t->sym[i])) && strcmp(n, name) == 0) {
            *value = t->sym[i].st_value;
            return 0;
        }
    }
    return -1;
}

/* "file:line" from `addr2line -e object 0xVADDR`, when it knows. */
static int addr2line(const char *object, uint64_t vaddr, char *buf, size_t len) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        char addr[32];
        snprintf(addr, sizeof addr, "%#" PRIx64,
                 vaddr - 1); /* a return address: the call is before it */
        dup2(fds[1], STDOUT_FILENO);
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, STDIN_FILENO);
            dup2(null, STDERR_FILENO);
        }
        execlp("addr2line", "addr2line", "-e", object, addr, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char out[512];
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fds[0], out + n, sizeof out - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
        if (n == sizeof out - 1)
            break;
    }
    close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    out[n] = '\0';
    out[strcspn(out, "\n")] = '\0';
    /* "??:0" or "??:?" when there is no line information */
    char *colon = strrchr(out, ':');
    if (!colon || out[0] == '?' || colon[1] == '?' || strcmp(colon + 1, "0") == 0 ||
        colon[1] == '\0')
        return -1;
    char *p = strstr(out, " (discriminator");
    if (p)
        *p = '\0';
    const char *base = strrchr(out, '/');
    base = base ? base + 1 : out;
    size_t k = strlen(base) < len ? strlen(base) : len - 1; /* cut to fit */
    memcpy(buf, base, k);
    buf[k] = '\0';
    return 0;
}

/* dladdr names the main program as the process saw it (argv[0], maybe a
 * relative path): find the file in the process's /proc/PID/maps, else take
 * the name relative to our own directory. */
static void object_path(const char *object, unsigned long long pid, char *buf, size_t len) {
    snprintf(buf, len, "%s", object);
    if (object[0] == '/' || !pid)
        return;
    const char *rel = object;
    while (rel[0] == '.' && rel[1] == '/')
        rel += 2;
    char maps[64], line[4352];
    snprintf(maps, sizeof maps, "/proc/%llu/maps", pid);
    FILE *f = fopen(maps, "re");
    if (!f)
        return;
    size_t rl = strlen(rel);
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *path = strchr(line, '/');
        if (!path)
            continue;
        size_t pl = strlen(path);
        if (pl > rl && path[pl - rl - 1] == '/' && strcmp(path + pl - rl, rel) == 0 && pl < len) {
            memcpy(buf, path, pl + 1);
            break;
        }
    }
    fclose(f);
}

/* ------------------------------------------------------------------ cache */

struct entry {
    char object[160], func[80];
    int have_sym, line_tried;
    char sym[96], line[128];
    char path[4096]; /* the file read */
    uint64_t vaddr;  /* 0: unknown */
};

static struct entry *cache;
static size_t ncache;

static struct entry *cache_get(const char *object, const char *func, unsigned long long pid) {
    for (size_t i = 0; i < ncache; i++)
        if (strcmp(cache[i].object, object) == 0 && strcmp(cache[i].func, func) == 0)
            return &cache[i];
    struct entry *c = realloc(cache, (ncache + 1) * sizeof *c);
    if (!c)
        return NULL;
    cache = c;
    struct entry *e = &cache[ncache++];
    memset(e, 0, sizeof *e);
    snprintf(e->object, sizeof e->object, "%s", object);
    snprintf(e->func, sizeof e->func, "%s", func);

    /* "0xOFFSET" or "symbol+0xN" */
    uint64_t off = 0;
    char name[80];
    int is_off = 0;
    if (func[0] == '0' && func[1] == 'x') {
        char *end;
        errno = 0;
        off = strtoull(func + 2, &end, 16);
        is_off = !errno && *end == '\0' && end != func + 2;
        if (!is_off)
            return e;
    } else {
        size_t plus = strcspn(func, "+");
        char *end;
        if (!func[plus] || plus == 0 || plus >= sizeof name ||
            strncmp(func + plus + 1, "0x", 2) != 0)
            return e;
        memcpy(name, func, plus);
        name[plus] = '\0';
        errno = 0;
        off = strtoull(func + plus + 3, &end, 16);
        if (errno || *end)
            return e;
        snprintf(e->sym, sizeof e->sym, "%s", func);
        e->have_sym = 1;
    }
    struct elf el;
    char path[4096];
    object_path(object, pid, path, sizeof path);
    if (elf_open(&el, path) != 0)
        return e;
    snprintf(e->path, sizeof e->path, "%s", path);
    struct symtab tabs[2];
    int loaded[2] = {symtab_load(&el, SHT_SYMTAB, &tabs[0]) == 0,
                     symtab_load(&el, SHT_DYNSYM, &tabs[1]) == 0};
    uint64_t base;
    if (is_off) {
        if (load_base(&el, &base) == 0) {
            e->vaddr = base + off;
            for (int k = 0; k < 2 && !e->have_sym; k++)
                e->have_sym = loaded[k] && by_addr(&tabs[k], e->vaddr, e->sym, sizeof e->sym) == 0;
        }
    } else {
        uint64_t value;
        for (int k = 0; k < 2 && !e->vaddr; k++)
            if (loaded[k] && by_name(&tabs[k], name, &value) == 0)
                e->vaddr = value + off;
    }
    for (int k = 0; k < 2; k++)
        if (loaded[k])
            symtab_free(&tabs[k]);
    elf_close(&el);
    return e;
}

int sym_lookup(const char *object, const char *func, unsigned long long pid, int want_line,
               char *sym, size_t slen, char *line, size_t llen) {
    sym[0] = '\0';
    line[0] = '\0';
    struct entry *e = cache_get(object, func, pid);
    if (!e)
        return -1;
    if (want_line && !e->line_tried && e->vaddr) {
        e->line_tried = 1;
        if (addr2line(e->path, e->vaddr, e->line, sizeof e->line) != 0)
            e->line[0] = '\0';
    }
    if (want_line)
        snprintf(line, llen, "%s", e->line);
    if (!e->have_sym)
        return -1;
    snprintf(sym, slen, "%s", e->sym);
    return 0;
}
