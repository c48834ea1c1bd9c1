/* SPDX-License-Identifier: MIT */
/* policy.h - the method policy (runtime/policy.c) and its part of the
 * thread descriptor, tk_thread.policy. */
#ifndef TK_POLICY_H
#define TK_POLICY_H

#include "runtime/core.h"

struct tk_method;

/* Written by the owner thread only, in policy.c (choosing a method, after a
 * hardware abort), except htm_pen_len, which txn.c resets at a hardware commit. */
struct tk_policy_thread {
    /* auto method: detecting that this thread runs alone */
    unsigned solo_countdown;   /* transactions until the next check */
    unsigned quiet_checks;     /* checks in a row that saw no other thread */
    uint64_t others_seen;      /* others' transactions at the last check */
    uint64_t others_active_ns; /* when they were last seen moving */
    int was_solo;              /* tk_auto_solo said so last time it looked */
    /* this thread's hardware penalty for one site after repeated status-0
     * aborts: transactions left to skip, and the next length, which doubles
     * while they recur and resets at a hardware commit */
    txkit_site_t *htm_pen_site;
    unsigned htm_pen_left, htm_pen_len;
    /* long sites' transactions this thread chose a method for (tk_policy_long_serial) */
    unsigned long_n;
};

/* The method of t's next attempt: tk_choose_method, runtime/choose.h (inline). */
/* After a hardware abort with cause: how the next attempt differs (policy.c). Owner thread. */
TK_HIDDEN void tk_htm_policy(tk_thread *t, int cause);
/* A hardware attempt of site committed: its next capacity abort makes it
 * skip hardware for one transaction again (policy.c). Any thread. */
TK_HIDDEN void tk_policy_hw_commit(txkit_site_t *site);
/* A software attempt of site committed having written TK_BIG_WRITES words
 * or more: auto runs the site serially from now on (policy.c). Any thread. */
TK_HIDDEN void tk_policy_big_writes(txkit_site_t *site);
/* A software attempt of site committed having read TK_LONG_READS words or
 * more: auto weighs software TM against serial for it from now on (policy.c). Any thread. */
TK_HIDDEN void tk_policy_long_reads(txkit_site_t *site);
/* Auto, a transaction of a long site (TK_SITE_FLAG_LONG) that would run in
 * software next: run it serially instead? Chosen once per transaction, by
 * what each has cost the site; starts timing it. Owner thread, before an attempt. */
TK_HIDDEN bool tk_policy_long_serial(tk_thread *t, txkit_site_t *site);
/* The timed transaction of a long site committed: its cost goes into the
 * site's average for the method chosen (t->ctl.cost_tsc set). Owner thread. */
TK_HIDDEN void tk_policy_long_commit(tk_thread *t);
/* A serial attempt is about to take the clock: should it first let the
 * software attempts now running finish (new ones wait: serial_pending), so
 * that it may run code without barriers (TK_CODE_PLAIN_SERIAL)? For the
 * long and big sites, whose serial runs pay most for barriers; whether or
 * not one runs now (a look first let one begin between it and the clock's
 * CAS: a third of abi.serial_plain's runs took the instrumented code).
 * Owner thread. */
TK_HIDDEN bool tk_policy_serial_drain(tk_thread *t);
/* Whether to inject an abort into t's next attempt, of method (its thread only). */
TK_HIDDEN bool tk_fault_hit(tk_thread *t, int method);
#define TK_FAULT_SERIAL_MAX 8u

#endif /* TK_POLICY_H */
