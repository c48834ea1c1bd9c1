/* cx_model.pml - a model of the cx lock protocol (src/cx/cx.c) for spin.
 *
 * The lock is a ticket lock (nxt, own): free when own == nxt. An exclusive
 * entry takes a ticket (writes nxt), waits for own to reach it, and releases
 * by incrementing own. An optimistic entry is a hardware transaction that
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

byte nxt = 0;
byte own = 0;
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
    byte ticket;
    atomic { ticket = nxt; nxt = nxt + 1; write_word() }
    (own == ticket);
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
    atomic { own = own + 1; write_word() }
}

proctype worker(byte i) {
    byte r = 0;
    do
    :: r < ROUNDS ->
        if
        :: exclusive_section(i)           /* cx_exclusive */
        :: true ->                        /* cx_optimistic */
            (own == nxt);                 /* wait outside the transaction */
            atomic {
                if
                :: own == nxt -> spec[i] = true; doomed[i] = false
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
