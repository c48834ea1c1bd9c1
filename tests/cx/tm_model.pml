/* SPDX-License-Identifier: MIT */
/* tm_model.pml - txkit's hybrid protocol for spin: hardware transactions
 * (src/methods/htm.c), NOrec software transactions (src/methods/stm_norec.c),
 * the irrevocability token (tk_g.irr_owner) and cx locks (src/cx/cx.c) with
 * optimistic (hardware) and exclusive holders.
 *
 * All data x, y is protected by one cx lock; every transaction keeps x == y
 * (it adds 1 to both). Three threads:
 *   sw  - a NOrec software writer subscribed to the lock (reads the lock word
 *         through the read barrier, so it is in its read set);
 *   cx  - a cx user: optimistic section (hardware) with fallback to
 *         exclusive after TRIES aborts, or exclusive at once;
 *   any - one of: a hardware (htm) transaction subscribed to the lock, a
 *         NOrec read-only transaction, or an irrevocable software writer
 *         (token taken first, then the lock held for real, as subscribe()
 *         does for irrevocable transactions).
 * A hardware transaction is one atomic step: it reads its subscriptions and,
 * if they allow, reads and writes and bumps hw_commits when software
 * transactions are registered, or it aborts. That is what conflict detection
 * gives: any write by others to what it read or wrote aborts it, so a
 * committed one is indivisible. Clock loads, validation by value (rlog) and
 * each data access of software code are steps of their own.
 *
 * Checked (assertions): mutual exclusion of lock holders (exclusive,
 * irrevocable holders, committed optimistic sections); opacity: every
 * software reader and every committed hardware transaction sees x == y; an
 * irrevocable transaction never fails validation; no lost update: at the end
 * x == y == the number of committed increments. Plus no deadlock.
 *
 * Run: spin -a [-DNAME=0|1 ...] tm_model.pml; cc -O2 -DSAFETY -DCOLLAPSE -o pan
 * pan.c; ./pan -m100000 (run_tm_model.sh). About 1.4 M states, 1 s.
 *
 * CX_SUBSCRIBES 0 is the code before the fix of issue 12 defect 2: the
 * optimistic section neither checks the clock / irrevocable owner at its
 * start nor bumps hw_commits at its end. spin must find a violation then.
 */
#ifndef CX_SUBSCRIBES
#define CX_SUBSCRIBES 1
#endif
/* stm_make_irrevocable() takes the token, extends, then holds the subscribed
 * cx locks (tk_cx_hold_subscribed). A cx exclusive holder (which never looks
 * at the token) can take the lock, write and release between the extension
 * and the hold; the reads are then stale under the token. 1: extend again
 * after the hold (the fix this model proposes); 0: src/ as of 7ef5134. */
#ifndef MAKE_IRR_REVALIDATES
#define MAKE_IRR_REVALIDATES 1
#endif
/* USE_LOCK 0: x, y are plain transactional data, under no cx lock: the
 * threads are a software writer, a hardware writer and one of the three
 * above (the irrevocable one holds no lock). That is where the hardware
 * subscription to the irrevocable owner matters. */
#ifndef USE_LOCK
#define USE_LOCK 1
#endif
#define TRIES 2
#define IRR_ID 3 /* the irrevocable thread's id in irr */

byte clock = 0;     /* tk_g.clock: odd while a software commit writes back */
byte hw = 0;        /* tk_g.hw_commits */
byte sw_active = 0; /* tk_g.sw_active: registered software transactions */
byte irr = 0;       /* tk_g.irr_owner */
byte lock = 0;      /* the cx lock word: 0 free, 1 held exclusively */
bool subscribed = false; /* CX_F_SUBSCRIBED in the lock's flags */
byte x = 0;
byte y = 0;
/* ghosts */
byte commits = 0; /* committed increments */
byte holders = 0; /* threads inside the lock (not optimistic) */
byte done = 0;

/* rlog_valid(): the read set, validated by value */
#define RLOG_VALID ((!hl || lock == rl) && (!hx || x == rx) && (!hy || y == ry))

/* try_extend(): wait for an even clock, validate, check nothing moved. */
inline try_extend() {
    ok = false;
    do
    :: atomic { (clock % 2 == 0) -> c = clock }
       h = hw;
       if
       :: !RLOG_VALID -> break
       :: else -> skip
       fi;
       if
       :: clock == c && hw == h -> snap = c; hsnap = h; ok = true; break
       :: else -> skip
       fi
    od
}

/* stm_load(): load, then the snapshot must be current or extendable. */
inline sw_read(dst, var) {
    ok = true;
    dst = var;
    do
    :: clock == snap && hw == hsnap -> break
    :: else -> try_extend();
       if
       :: !ok -> break
       :: else -> dst = var
       fi
    od
}

/* stm_begin(): register (hybrid), snapshot the even clock, then hw_commits */
inline sw_begin() {
    sw_active++;
    atomic { (clock % 2 == 0) -> snap = clock }
    hsnap = hw;
    hl = false; hx = false; hy = false
}

/* acquire_clock() for a writer; ok false: abort. me: our irr id (0: none) */
inline acquire_clock(me) {
    ok = true;
    do
    :: atomic { clock == snap -> clock = snap + 1 }
       if
       :: irr == 0 || irr == me -> break
       :: else -> clock = snap + 2;  /* give it back unused */
          (irr == 0);                /* tk_wait_no_irrevocable */
          try_extend();
          if
          :: !ok -> break
          :: else -> skip
          fi
       fi
    :: clock != snap ->              /* the CAS failed */
       try_extend();
       if
       :: !ok -> break
       :: else -> skip
       fi
    od;
    if
    :: ok && hw != hsnap && !RLOG_VALID -> clock = snap + 2; ok = false
    :: else -> skip
    fi
}

/* excl_acquire() + taken(): software subscribers revalidate on the clock */
inline excl_acquire() {
    atomic { lock == 0 -> lock = 1 }
    if
    :: subscribed -> atomic { (clock % 2 == 0) -> clock = clock + 2 } /* tk_stm_external_write */
    :: else -> skip
    fi;
    atomic { holders++; assert(holders == 1) }
}

inline exclusive_section() {
    excl_acquire();
    x++;
    atomic { y++; commits++ }
    holders--;
    lock = 0
}

/* A hardware transaction subscribed to the lock (htm_begin's subscriptions
 * plus the lock word, read by subscribe()), adding 1 to x and y. */
inline hw_txn(checks, publish) {
    atomic {
        if
        :: lock == 0 && checks ->
           assert(holders == 0 && x == y);
           x++; y++; commits++;
           if
           :: publish && sw_active > 0 -> hw++
           :: else -> skip
           fi;
           hdone = true
        :: else -> skip /* aborted */
        fi
    }
}

#define HTM_CHECKS (clock % 2 == 0 && irr == 0)
#if CX_SUBSCRIBES
#define CX_CHECKS HTM_CHECKS
#define CX_PUBLISH true
#else
#define CX_CHECKS true
#define CX_PUBLISH false
#endif

proctype sw_writer() {
    byte snap, hsnap, c, h, rl, rx, ry, tries = 0;
    bool hl, hx, hy, ok;
    do
    :: tries < TRIES ->
       tries++;
       sw_begin();
#if USE_LOCK
       subscribed = true;             /* subscribe(): flag, then read the word */
       sw_read(rl, lock);
       if
       :: !ok || rl != 0 -> goto abort
       :: else -> hl = true
       fi;
#endif
       sw_read(rx, x);
       if
       :: !ok -> goto abort
       :: else -> hx = true
       fi;
       sw_read(ry, y);
       if
       :: !ok -> goto abort
       :: else -> hy = true
       fi;
       assert(rx == ry);              /* opacity */
       acquire_clock(0);
       if
       :: !ok -> goto abort
       :: else -> skip
       fi;
       x = rx + 1;                    /* write-back */
       y = ry + 1;
       atomic { clock = snap + 2; commits++ }
       sw_active--;
       break;
abort:
       sw_active--
    :: else -> break
    od;
    done++
}

proctype cx_user() {
    byte tries = 0;
    bool hdone = false;
    if
    :: true ->                        /* cx_optimistic */
       do
       :: tries < TRIES ->
          tries++;
          (lock == 0);                /* wait outside the transaction */
          hw_txn(CX_CHECKS, CX_PUBLISH);
          if
          :: hdone -> break
          :: else -> skip
          fi
       :: else -> exclusive_section(); break
       od
    :: exclusive_section()            /* cx_exclusive */
    fi;
    done++
}

/* USE_LOCK 0: a hardware writer instead of the cx user */
proctype htm_user() {
    byte tries = 0;
    bool hdone = false;
    do
    :: tries < TRIES ->
       tries++;
       hw_txn(HTM_CHECKS, true);
       if
       :: hdone -> break
       :: else -> skip
       fi
    :: else -> break
    od;
    done++
}

proctype any() {
    byte snap, hsnap, c, h, rl, rx, ry, tries = 0;
    bool hl, hx, hy, ok, hdone = false;
    if
    :: true ->                        /* htm attempts; then it would go software */
       do
       :: tries < TRIES ->
          tries++;
          hw_txn(HTM_CHECKS, true);
          if
          :: hdone -> break
          :: else -> skip
          fi
       :: else -> break
       od
    :: true ->                        /* a software reader subscribed to the lock */
       do
       :: tries < TRIES ->
          tries++;
          sw_begin();
#if USE_LOCK
          subscribed = true;
          sw_read(rl, lock);
          if
          :: !ok || rl != 0 -> goto rabort
          :: else -> hl = true
          fi;
#endif
          sw_read(rx, x);
          if
          :: !ok -> goto rabort
          :: else -> hx = true
          fi;
          sw_read(ry, y);
          if
          :: !ok -> goto rabort
          :: else -> hy = true
          fi;
          assert(rx == ry);           /* opacity */
          sw_active--;                /* read-only commit */
          break;
rabort:
          sw_active--
       :: else -> break
       od
    :: true ->                        /* a software writer that becomes irrevocable */
       sw_begin();
#if USE_LOCK
       subscribed = true;
       sw_read(rl, lock);
       if
       :: !ok || rl != 0 -> goto early
       :: else -> hl = true
       fi;
#endif
       sw_read(rx, x);
       if
       :: !ok -> goto early
       :: else -> hx = true
       fi;
       /* stm_make_irrevocable: take the token, extend, hold the lock */
       atomic { irr == 0 -> irr = IRR_ID }
       try_extend();
       if
       :: !ok -> goto restart
       :: else -> skip
       fi;
#if USE_LOCK
       atomic {                       /* tk_cx_hold_subscribed: excl_try */
           if
           :: lock == 0 -> lock = 1; hdone = true
           :: else -> hdone = false
           fi
       }
       if
       :: !hdone -> goto restart
       :: else -> skip
       fi;
       if
       :: subscribed -> atomic { (clock % 2 == 0) -> clock = clock + 2 }
       :: else -> skip
       fi;
       atomic { holders++; assert(holders == 1) }
       rl = lock;                     /* tk_stm_rlog_refresh */
#if MAKE_IRR_REVALIDATES
       try_extend();                  /* an exclusive holder may have come between */
       if
       :: !ok -> holders--; lock = 0; goto restart /* rollback releases it */
       :: else -> skip
       fi;
#endif
#endif
       sw_read(ry, y);                /* irrevocable now */
       assert(ok);
       hy = true;
       assert(rx == ry);
       goto commit;
early: /* aborted before the token: retried irrevocable from the start */
       sw_active--;
       atomic { irr == 0 -> irr = IRR_ID }
       goto fromstart;
restart: /* aborted holding the token: irrevocable from the start */
       sw_active--;
fromstart:
       sw_begin();
#if USE_LOCK
       excl_acquire();                /* subscribe(): irrevocable holds the lock */
#endif
       sw_read(rx, x);
       assert(ok);                    /* nobody may write while it runs */
       hx = true;
       sw_read(ry, y);
       assert(ok);
       hy = true;
       assert(rx == ry);
commit:
       acquire_clock(IRR_ID);
       assert(ok);
       x = rx + 1;
       y = ry + 1;
       atomic { clock = snap + 2; commits++ }
       sw_active--;
#if USE_LOCK
       holders--;
       lock = 0;                      /* released after the commit */
#endif
       irr = 0
    fi;
    done++
}

init {
    atomic {
        run sw_writer();
#if USE_LOCK
        run cx_user();
#else
        run htm_user();
#endif
        run any()
    }
    (done == 3);
    assert(x == commits && y == commits); /* no lost update */
    assert(lock == 0 && irr == 0 && sw_active == 0 && clock % 2 == 0)
}
