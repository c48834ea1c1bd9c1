/* SPDX-License-Identifier: MIT */
/* self.c - the address ranges of libtxkit's own code and data (cx/self.h),
 * found once at load from the program headers of the object that holds
 * this file's code. */
#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "cx/self.h"

__thread unsigned tk_in_self; /* runtime/internal.h */

/* Everything until self_init (cx/self.h): the hooks leave every lock alone. */
uintptr_t tk_self_lo = 0, tk_self_hi = UINTPTR_MAX;
uintptr_t tk_self_data_lo = 0, tk_self_data_hi = UINTPTR_MAX;

uintptr_t tk_alloc_lo = 0, tk_alloc_hi = 0;

struct self_ranges {
    uintptr_t me;
    uintptr_t lo, hi;   /* the executable segment that holds me */
    uintptr_t dlo, dhi; /* the writable segments, as one range */
    uintptr_t malloc_at;
    uintptr_t alo, ahi; /* the executable segment that holds malloc_at (a library's) */
};

static int find_self(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    struct self_ranges *r = arg;
    int found = 0;
    uintptr_t dlo = UINTPTR_MAX, dhi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type != PT_LOAD)
            continue;
        uintptr_t lo = info->dlpi_addr + p->p_vaddr, hi = lo + p->p_memsz;
        if ((p->p_flags & PF_X) && r->me >= lo && r->me < hi) {
            r->lo = lo;
            r->hi = hi;
            found = 1;
        }
        /* a shared library's malloc, not the program's (its range would be
         * the whole program) nor glibc's (its locks are not pthread's) */
        if ((p->p_flags & PF_X) && r->malloc_at >= lo && r->malloc_at < hi && info->dlpi_name &&
            info->dlpi_name[0] && !strstr(info->dlpi_name, "/libc.so")) {
            r->alo = lo;
            r->ahi = hi;
        }
        if (p->p_flags & PF_W) { /* .data, .bss (and RELRO): one range */
            if (lo < dlo)
                dlo = lo;
            if (hi > dhi)
                dhi = hi;
        }
    }
    if (found && dhi) {
        r->dlo = dlo;
        r->dhi = dhi;
    }
    return 0; /* every object: malloc's may come after ours */
}

/* The library's only constructor without a priority, so its last
 * (TK_CONSTRUCTOR, runtime/core.h). Each range narrows with two stores; a
 * hook that sees one of them sees a range that still holds the true one, so
 * it only leaves a lock alone a moment longer. Not found (never expected):
 * the ranges stay whole and the hooks never elide or count. */
__attribute__((constructor)) static void self_init(void) {
    struct self_ranges r = {(uintptr_t)&self_init, 0, 0, 0, 0, 0, 0, 0};
    r.malloc_at = (uintptr_t)dlsym(RTLD_DEFAULT, "malloc");
    dl_iterate_phdr(find_self, &r);
    if (!r.hi || !r.dhi)
        return;
    __atomic_store_n(&tk_alloc_lo, r.alo, __ATOMIC_RELAXED);
    __atomic_store_n(&tk_alloc_hi, r.ahi, __ATOMIC_RELAXED);
    __atomic_store_n(&tk_self_data_lo, r.dlo, __ATOMIC_RELAXED);
    __atomic_store_n(&tk_self_data_hi, r.dhi, __ATOMIC_RELAXED);
    __atomic_store_n(&tk_self_lo, r.lo, __ATOMIC_RELAXED);
    __atomic_store_n(&tk_self_hi, r.hi, __ATOMIC_RELEASE);
}
