/* SPDX-License-Identifier: MIT */
/* rtm.h - the one door to Intel RTM: tk_xbegin(), tk_xend(), tk_xtest() and
 * TK_XABORT(code). htm.c, cx.c, elide.c and section.h use nothing else.
 *
 * A normal build compiles them to XBEGIN, XEND, XTEST and XABORT. A build
 * configured with -DTXKIT_SIM_RTM=ON (tests only, never installed) routes
 * them to a simulator (rtm_sim.c) so that every hardware path runs on any
 * CPU:
 *  - each XBEGIN takes the next status of a script (TXKIT_SIM_RTM, or
 *    txkit_sim_rtm_script()): an abort status is returned at once, as the CPU
 *    would after an abort; "start" begins a simulated transaction;
 *  - a simulated transaction runs the section for real (not speculatively);
 *    XEND ends it; XABORT inside it goes back to its XBEGIN with the status
 *    the CPU would give (code << 24 | explicit), after putting back the stack
 *    as it was at the XBEGIN. Shared memory is NOT put back: use "start" only
 *    in single-threaded control-flow tests whose sections abort before they
 *    write anything shared;
 *  - XEND outside a transaction (#GP on the CPU: SIGSEGV) and XABORT outside
 *    one (a no-op on the CPU, but never what txkit means) are counted and
 *    reported (txkit_sim_rtm_violations()); XEND outside one also stops the
 *    process with the place, as the CPU would.
 */
#ifndef TK_ARCH_RTM_H
#define TK_ARCH_RTM_H

#include "arch/x86_64/cpu.h"

#ifndef TXKIT_SIM_RTM

#include <immintrin.h>

#define TK_RTM_FN __attribute__((target("rtm")))
#define tk_xbegin() _xbegin()
#define tk_xend() _xend()
#define tk_xtest() _xtest()
#define TK_XABORT(code) _xabort(code)

#else /* simulated */

#define TK_RTM_FN
#define TK_RTM_STR2(x) #x
#define TK_RTM_STR(x) TK_RTM_STR2(x)
#define TK_RTM_WHERE __FILE__ ":" TK_RTM_STR(__LINE__)

/* Where a simulated XBEGIN saves the point to come back to (a
 * __builtin_setjmp buffer of this thread; a scratch one when nested). */
__attribute__((visibility("hidden"))) void **tk_sim_xbegin_slot(void);
/* What XBEGIN returns: a scripted status, or TK_XSTARTED (then the
 * simulated transaction runs). */
__attribute__((visibility("hidden"))) unsigned tk_sim_xbegin(void);
/* Back at XBEGIN after a simulated XABORT: the status. */
__attribute__((visibility("hidden"))) unsigned tk_sim_resumed(void);
__attribute__((visibility("hidden"))) void tk_sim_xend(const char *where);
__attribute__((visibility("hidden"))) void tk_sim_xabort(unsigned code, const char *where);
__attribute__((visibility("hidden"))) int tk_sim_xtest(void);

#define tk_xbegin() (__builtin_setjmp(tk_sim_xbegin_slot()) ? tk_sim_resumed() : tk_sim_xbegin())
#define tk_xend() tk_sim_xend(TK_RTM_WHERE)
#define tk_xtest() tk_sim_xtest()
#define TK_XABORT(code) tk_sim_xabort((code), TK_RTM_WHERE)

#endif

#endif /* TK_ARCH_RTM_H */
