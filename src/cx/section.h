/* section.h - what cx locks (cx.c) and elided mutexes (elide.c) share: an
 * optimistic section is a hardware transaction that read a lock word and
 * found it free. One set of abort codes, so that a section nested in the
 * other kind is understood by whichever began the transaction. */
#ifndef TK_CX_SECTION_H
#define TK_CX_SECTION_H

#include <immintrin.h>

#include "runtime/internal.h"

#define TK_XCODE_SECTION_BUSY 0xe1      /* the lock was held for real */
#define TK_XCODE_SECTION_EXCLUSIVE 0xe2 /* the section must run holding the lock */

__attribute__((target("rtm"))) static inline void tk_section_end(void) { _xend(); }

__attribute__((target("rtm"), noreturn)) static inline void tk_section_abort_exclusive(void) {
    _xabort(TK_XCODE_SECTION_EXCLUSIVE);
    __builtin_unreachable();
}

__attribute__((target("rtm"), noreturn)) static inline void tk_section_abort_busy(void) {
    _xabort(TK_XCODE_SECTION_BUSY);
    __builtin_unreachable();
}

/* The cause of an aborted section; *hopeless when retrying in hardware cannot
 * help (the section then takes the lock). */
TK_HIDDEN int tk_section_classify(unsigned status, int *hopeless);

#endif /* TK_CX_SECTION_H */
