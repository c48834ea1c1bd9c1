/* SPDX-License-Identifier: MIT */
/* cx_shared_model.pml - the shared mode of cx locks without RTM (src/cx/cx.c:
 * shared_begin, readers_drain, excl_acquire, subscribe) for spin.
 *
 * Every access below is sequentially consistent: in the code each side's
 * store and later load are separated by a full fence (the reader's xchg of
 * its record, the writer's CAS of the word, the subscriber's fetch-or of the
 * flag), so a Dekker pair cannot be reordered. Each statement outside an
 * atomic block is one memory access, so spin interleaves them as the CPUs
 * may.
 *   reader      reading[i] = 1; sees the subscribed flag: back out, go
 *               exclusive; sees the word taken: back out, wait, again; else
 *               inside shared.
 *   writer      takes the word (CAS), then waits for every other record to
 *               be 0, one record at a time.
 *   subscriber  a software transaction that writes without taking the word:
 *               sets the subscribed flag; unless the no-shared flag is set,
 *               waits for every record to be 0, then sets no-shared; its
 *               write-back is excluded from exclusive holders by the clock
 *               (modelled as one atomic check of the word).
 * Checked: no shared holder is inside while an exclusive holder or a
 * subscriber's write-back is (assertions), one exclusive holder at a time,
 * and no deadlock (invalid end states) for N threads doing ROUNDS entries.
 */
#define N 3
#define ROUNDS 2

bool locked = false;
bool subscribed = false;
bool noshared = false;
bool reading[N];
byte readers_in = 0; /* shared holders inside their section */
byte excl = 0;       /* exclusive holders inside */
byte writing = 0;    /* subscribers in their write-back */

inline drain(i) {
    byte k = 0;
    do
    :: k < N ->
        if
        :: k != i -> (!reading[k])
        :: else -> skip
        fi;
        k++
    :: else -> break
    od
}

inline exclusive_section(i) {
    atomic { !locked && writing == 0 -> locked = true } /* taken(): after write-backs */
    drain(i);
    atomic {
        excl++;
        assert(excl == 1 && readers_in == 0 && writing == 0)
    }
    excl--;
    locked = false
}

inline shared_section(i) {
    bool done = false;
    do
    :: done -> break
    :: else ->
        reading[i] = true;
        if
        :: subscribed ->
            reading[i] = false;
            exclusive_section(i);
            done = true
        :: else ->
            if
            :: locked ->
                reading[i] = false;
                (!locked)
            :: else ->
                atomic {
                    readers_in++;
                    assert(excl == 0 && writing == 0)
                }
                readers_in--;
                reading[i] = false;
                done = true
            fi
        fi
    od
}

inline subscriber(i) {
    subscribed = true;
    if
    :: !noshared -> drain(i); noshared = true
    :: else -> skip
    fi;
    atomic {
        !locked -> writing++;
        assert(readers_in == 0 && excl == 0)
    }
    writing--
}

proctype worker(byte i) {
    byte r = 0;
    do
    :: r < ROUNDS ->
        if
        :: shared_section(i)
        :: exclusive_section(i)
        :: subscriber(i)
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
