/* SPDX-License-Identifier: MIT */
/* stat_helper_itm.c - gcc -fgnu-tm transactions for stat_helper_itm (linked
 * with libtxkit, not libitm). The site is the call of _ITM_beginTransaction
 * in stat_itm_work, exported (-rdynamic) so the runtime can name it. */
static long itm_counter;

void stat_itm_work(void);
void stat_itm_run(unsigned n);
void stat_itm_left(void);
void stat_itm_right(void);
void stat_itm_pair_run(unsigned n);

/* One transaction per call: a loop counter around it would live across the
 * transaction's restart point (gcc warns: -Wclobbered). */
__attribute__((noinline)) void stat_itm_work(void) {
    __transaction_atomic { itm_counter++; }
}

void stat_itm_run(unsigned n) {
    for (unsigned i = 0; i < n; i++)
        stat_itm_work();
}

/* Two more sites with the same properties, run in turns (--itm-pair): each
 * begin follows a commit of the other block, which txkit may begin express
 * (runtime/express.h); each must still count at its own site. */
static long itm_left, itm_right;

__attribute__((noinline)) void stat_itm_left(void) {
    __transaction_atomic { itm_left++; }
}

__attribute__((noinline)) void stat_itm_right(void) {
    __transaction_atomic { itm_right++; }
}

void stat_itm_pair_run(unsigned n) {
    for (unsigned i = 0; i < n; i++) {
        stat_itm_left();
        stat_itm_right();
    }
}
