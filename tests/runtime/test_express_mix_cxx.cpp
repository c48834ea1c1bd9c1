/* SPDX-License-Identifier: MIT */
// test_express_mix_cxx.cpp - test_express_mix's idea for C++: random runs of
// txkit::atomic blocks (each lambda type its own site), TX_ATOMIC blocks and
// gcc __transaction_atomic blocks in one g++ -fgnu-tm program, on a thread
// that is mostly alone, against a model.
//
//   test_express_mix_cxx [seconds]     (default 2; TXKIT_STRESS_SECONDS, a
//                                       seed: TXKIT_STRESS_SEED)
//
// The C++ blocks restart by unwinding (an exception from the barrier or from
// txkit::restart()), so they take other paths out of the express begin than
// the C ones: a restart once after stores, a user exception that leaves the
// lambda (the block commits, the exception propagates), closures as commit
// and abort handlers, nested txkit::atomic, destructors run by a restart, the
// thread's own method switched, a helper thread that comes and goes.
//
// Oracle: the cells equal the model; every destructor of a local ran once
// per construction; commit closures ran once per committed block that
// registered one, abort closures at least once per restart (at most once per
// counted abort); the statistics count every outermost block begun and
// committed.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <pthread.h>
#include <stdexcept>
#include <thread>

#include <txkit.hpp>

#include "test_util.h"

namespace {

constexpr unsigned kCells = 32;
long cell[kCells], model[kCells];
long shared_ctr;
std::atomic<long> shared_expect{0}, blocks{0};
long commit_closures, commit_expect, abort_closures, restarts;
long constructed, destroyed;

uint64_t rng; // the main thread's (tk_rand)
unsigned below(unsigned n) { return unsigned(tk_rand(&rng) % n); }

// Counts its constructions and destructions: a restart that unwinds the
// lambda must run the destructor of each local it built.
struct tracked {
    tracked() { constructed++; }
    ~tracked() { destroyed++; }
    tracked(const tracked &) = delete;
    tracked &operator=(const tracked &) = delete;
};

struct user_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

void add(unsigned i, long v) { txkit::store(&cell[i], txkit::load(&cell[i]) + v); }

__attribute__((noinline)) void cxx_plain(unsigned i, unsigned j, long v) {
    txkit::atomic([&] {
        add(i, v);
        add(j, -v);
        txkit::store(&shared_ctr, txkit::load(&shared_ctr) + 1);
    });
    model[i] += v;
    model[j] -= v;
    shared_expect++;
    blocks++;
}

// A value back, and a restart once after stores (by txkit::restart, which
// unwinds the lambda: its local's destructor runs), with closures.
__attribute__((noinline)) void cxx_restart(unsigned i, unsigned j, long v) {
    int tries = 0;
    long got = txkit::atomic([&] {
        tracked t;
        txkit::on_commit([] { commit_closures++; });
        txkit::on_abort([] { abort_closures++; });
        add(i, v);
        add(j, 1000000);
        if (tries++ == 0)
            txkit::restart();
        add(j, -1000000);
        return txkit::load(&cell[i]);
    });
    model[i] += v;
    CHECK_MSG(got == model[i], "the block returned %ld, the model has %ld", got, model[i]);
    commit_expect++;
    restarts++;
    blocks++;
}

// An exception leaves the lambda: the block commits, the exception arrives.
__attribute__((noinline)) void cxx_throw(unsigned i, long v) {
    bool caught = false;
    try {
        txkit::atomic([&] {
            tracked t;
            add(i, v);
            throw user_error("after the store");
        });
    } catch (const user_error &) {
        caught = true;
    }
    CHECK(caught);
    model[i] += v;
    blocks++;
}

__attribute__((noinline)) void cxx_nested(unsigned i, unsigned j, long v) {
    txkit::atomic([&] {
        add(i, v);
        long inner = txkit::atomic([&] {
            add(j, 2 * v);
            return txkit::in_transaction();
        });
        CHECK_EQ(inner, 2);
        txkit::on_commit([] { commit_closures++; });
    });
    model[i] += v;
    model[j] += 2 * v;
    commit_expect++;
    blocks++;
}

__attribute__((noinline)) void cxx_irrevocable(unsigned i, long v) {
    txkit::atomic([&] {
        add(i, v);
        txkit::irrevocable();
        add(i, v);
    });
    model[i] += 2 * v;
    blocks++;
}

__attribute__((noinline)) void c_block(unsigned i, long v) {
    TX_ATOMIC {
        TX_STORE(&cell[i], TX_LOAD(&cell[i]) - v);
        TX_STORE(&shared_ctr, TX_LOAD(&shared_ctr) + 1);
    }
    model[i] -= v;
    shared_expect++;
    blocks++;
}

__attribute__((noinline)) void gcc_block(unsigned i, unsigned j, long v) {
    __transaction_atomic {
        cell[i] += v;
        cell[j] ^= v;
        shared_ctr++;
    }
    model[i] += v;
    model[j] ^= v;
    shared_expect++;
    blocks++;
}

__attribute__((noinline)) void cxx_sum() {
    long want = 0;
    for (long m : model)
        want += m;
    long got = txkit::atomic([] {
        long s = 0;
        for (unsigned k = 0; k < kCells; k++)
            s += txkit::load(&cell[k]);
        return s;
    });
    CHECK_MSG(got == want, "a block summed %ld, the model %ld", got, want);
    blocks++;
}

std::atomic<bool> helper_stop{false};

void helper_main() {
    volatile long n = 0; // live across the blocks: -Wclobbered
    while (!helper_stop.load()) {
        if (n & 1)
            txkit::atomic([] { txkit::store(&shared_ctr, txkit::load(&shared_ctr) + 1); });
        else
            __transaction_atomic { shared_ctr++; }
        n++;
    }
    shared_expect += n;
    blocks += n;
}

} // namespace

int main(int argc, char **argv) {
    double secs = tk_stress_seconds(argc > 1 ? std::atof(argv[1]) : 2.0);
    rng = tk_stress_seed("test_express_mix_cxx");
    tk_skip_unless_method_usable("test_express_mix_cxx");
    int methods[] = {-1, TXKIT_AUTO, TXKIT_STM, TXKIT_SERIAL, TXKIT_HTM};
    unsigned nmethods = txkit_htm_usable() ? 5 : 4;

    tx_stats_t s0, s1;
    CHECK(tx_stats_get(&s0) == 0);
    std::thread helper;
    double end = tk_now() + secs;
    long ops = 0;
    unsigned op = 0;
    while (tk_now() < end) {
        for (int burst = 0; burst < 64; burst++, ops++) {
            if (below(8) == 0) // mostly the same block again: its express path
                op = below(12);
            unsigned i = below(kCells), j = below(kCells);
            long v = long(below(1000)) + 1;
            switch (op) {
            case 0:
            case 1:
                cxx_plain(i, j, v);
                break;
            case 2:
                cxx_restart(i, j, v);
                break;
            case 3:
                cxx_throw(i, v);
                break;
            case 4:
                cxx_nested(i, j, v);
                break;
            case 5:
                cxx_irrevocable(i, v);
                break;
            case 6:
                c_block(i, v);
                break;
            case 7:
                gcc_block(i, j, v);
                break;
            case 8:
                cxx_sum();
                break;
            case 9: // the thread's own method, or the process's again
                CHECK(txkit_set_thread_method(methods[below(nmethods)]) == 0);
                op = below(9);
                break;
            default: // another thread comes, or goes
                if (helper.joinable()) {
                    helper_stop = true;
                    helper.join();
                } else {
                    helper_stop = false;
                    helper = std::thread(helper_main);
                }
                op = below(9);
                break;
            }
        }
    }
    if (helper.joinable()) {
        helper_stop = true;
        helper.join();
    }
    CHECK(txkit_set_thread_method(-1) == 0);
    CHECK(tx_stats_get(&s1) == 0);

    for (unsigned k = 0; k < kCells; k++)
        CHECK_MSG(cell[k] == model[k], "cell %u: %ld, the model %ld", k, cell[k], model[k]);
    CHECK_EQ(shared_ctr, shared_expect.load());
    CHECK_EQ(constructed, destroyed);
    CHECK_EQ(commit_closures, commit_expect);
    long aborts = tk_check_block_stats("test_express_mix_cxx", &s0, &s1, blocks.load(),
                                       blocks.load(), abort_closures, restarts);
    std::printf("test_express_mix_cxx: %ld operations, %ld blocks, %ld restarts, %ld aborts; "
                "serial %llu, stm %llu, htm %llu commits\n",
                ops, blocks.load(), restarts, aborts,
                (unsigned long long)(s1.commits[TXKIT_SERIAL] - s0.commits[TXKIT_SERIAL]),
                (unsigned long long)(s1.commits[TXKIT_STM] - s0.commits[TXKIT_STM]),
                (unsigned long long)(s1.commits[TXKIT_HTM] - s0.commits[TXKIT_HTM]));
    return 0;
}
