/* SPDX-License-Identifier: MIT */
/* self.c - the address ranges of libtxkit's own code and data (cx/self.h),
 * found once at load from the program headers of the object that holds
 * this file's code. */
#include <link.h>

#include "cx/self.h"

uintptr_t tk_self_lo, tk_self_hi, tk_self_data_lo, tk_self_data_hi;

static int find_self(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    uintptr_t me = (uintptr_t)arg;
    int found = 0;
    uintptr_t dlo = UINTPTR_MAX, dhi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type != PT_LOAD)
            continue;
        uintptr_t lo = info->dlpi_addr + p->p_vaddr, hi = lo + p->p_memsz;
        if ((p->p_flags & PF_X) && me >= lo && me < hi) {
            tk_self_lo = lo;
            tk_self_hi = hi;
            found = 1;
        }
        if (p->p_flags & PF_W) { /* .data, .bss (and RELRO): one range */
            if (lo < dlo)
                dlo = lo;
            if (hi > dhi)
                dhi = hi;
        }
    }
    if (found && dhi) {
        tk_self_data_lo = dlo;
        tk_self_data_hi = dhi;
    }
    return found;
}

/* Before the preload library's constructor (101) can see a lock. */
__attribute__((constructor(101))) static void self_init(void) {
    dl_iterate_phdr(find_self, (void *)(uintptr_t)&self_init);
}
