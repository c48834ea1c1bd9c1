/* SPDX-License-Identifier: MIT */
/* cx_model.pml - a model of the cx lock protocol (src/cx/cx.c) for spin.
 *
 * The lock word is 0 when free and 1 when held: an exclusive entry waits for
 * 0 and sets it with a compare-and-swap, and releases by storing 0. An
 * optimistic entry is a hardware transaction that
 * reads the word and finds it free; hardware conflict detection is modelled
 * by "doomed": any write to the word aborts every transaction that read it.
 * A doomed transaction is rolled back, so only non-doomed optimistic holders
 * count as inside. Optimistic threads wait for a free word outside any
 * transaction; a section may need the lock for I/O (cx_need_exclusive): it
 * aborts itself and enters exclusive.
 *
 * Checked: mutual exclusion (an exclusive holder never overlaps another
 * exclusive holder or a live optimistic one: assertions), and, with spin's
 * default checks, no deadlock (invalid end states) for N threads doing ROUNDS
 * entries each.
 */
#define N 3
#define ROUNDS 2

bool locked = false;
bool spec[N];     /* inside an optimistic section that read the lock free */
bool doomed[N];   /* ... whose transaction a write to the lock word aborted */
byte excl = 0;    /* exclusive holders inside their critical section */

/* A write to the lock word aborts every transaction that read it. */
inline write_word() {
    byte k = 0;
    do
    :: k < N -> if :: spec[k] -> doomed[k] = true :: else -> skip fi; k++
    :: else -> break
    od
}

inline exclusive_section(i) {
    atomic { !locked -> locked = true; write_word() }
    /* critical section */
    atomic {
        excl++;
        assert(excl == 1);
        byte k = 0;
        do
        :: k < N -> assert(!(spec[k] && !doomed[k])); k++
        :: else -> break
        od
    }
    excl--;
    atomic { locked = false; write_word() }
}

proctype worker(byte i) {
    byte r = 0;
    do
    :: r < ROUNDS ->
        if
        :: exclusive_section(i)           /* cx_exclusive */
        :: true ->                        /* cx_optimistic */
            (!locked);                    /* wait outside the transaction */
            atomic {
                if
                :: !locked -> spec[i] = true; doomed[i] = false
                :: else -> skip           /* raced: try again as exclusive */
                fi
            }
            if
            :: spec[i] ->
                /* critical section, one step, while not doomed */
                atomic { if :: !doomed[i] -> assert(excl == 0) :: else -> skip fi }
                if
                :: true ->                /* cx_unlock: commit unless doomed */
                    atomic { spec[i] = false }
                    if
                    :: doomed[i] -> exclusive_section(i)   /* aborted: retried, here exclusive */
                    :: else -> skip
                    fi
                :: true ->                /* cx_need_exclusive: abort, go exclusive */
                    spec[i] = false;
                    exclusive_section(i)
                fi
            :: else -> exclusive_section(i)
            fi
        fi;
        r++
    :: else -> break
    od
}

init {
    atomic {
        byte i = 0;
        do
        :: i < N -> run worker(i); i++
        :: else -> break
        od
    }
}
