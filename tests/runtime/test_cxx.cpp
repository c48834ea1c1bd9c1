/* SPDX-License-Identifier: MIT */
// test_cxx.cpp - the C++ interface (include/txkit.hpp): txkit::atomic with
// values, nesting, closures as handlers, exceptions, destructors on restart,
// and a small two-thread stress with an exact oracle.
//
// CTest runs it once per method; the htm run skips (77) without usable RTM.
//   test_cxx [--no-fork] [SUBSTRING]   (see tk_run_tests in test_util.h)
#include <txkit.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "test_util.h"

namespace {

long g_a, g_b, g_c;
int g_arr[4];
int g_idx;

void reset_globals() {
    g_a = g_b = g_c = 0;
    std::memset(g_arr, 0, sizeof g_arr);
    g_idx = 0;
}

// Counts constructions and destructions (a hardware abort rolls back both
// sides, a software abort must run the destructor). Atomic: the two-thread
// test counts from both threads.
struct Tracker {
    static std::atomic<int> ctor, dtor;
    Tracker() { ++ctor; }
    Tracker(const Tracker &) { ++ctor; }
    Tracker &operator=(const Tracker &) = default;
    ~Tracker() { ++dtor; }
    static void reset() {
        ctor = 0;
        dtor = 0;
    }
};
std::atomic<int> Tracker::ctor, Tracker::dtor;

// A non-trivially-copyable value whose live instances are counted, to see
// that closures holding it are destroyed exactly once on every path.
struct Counted {
    static int live;
    std::string s;
    explicit Counted(std::string v) : s(std::move(v)) { ++live; }
    Counted(const Counted &o) : s(o.s) { ++live; }
    Counted(Counted &&o) noexcept : s(std::move(o.s)) { ++live; }
    Counted &operator=(const Counted &) = default;
    ~Counted() { --live; }
};
int Counted::live;

struct Custom {
    int v;
};

// ------------------------------------------------------------- values

void test_return_values() {
    reset_globals();
    txkit::atomic([&] { txkit::store(&g_a, 5L); });
    CHECK_EQ(g_a, 5);

    int v = txkit::atomic([] { return static_cast<int>(txkit::load(&g_a)) + 1; });
    CHECK_EQ(v, 6);

    std::string s = txkit::atomic([] { return "a=" + std::to_string(txkit::load(&g_a)); });
    CHECK(s == "a=5");

    g_idx = 2;
    int &r = txkit::atomic([]() -> int & { return g_arr[txkit::load(&g_idx)]; });
    CHECK(&r == &g_arr[2]);
    r = 7;
    CHECK_EQ(g_arr[2], 7);
    const int &cr = txkit::atomic([]() -> const int & { return g_arr[txkit::load(&g_idx)]; });
    CHECK(&cr == &g_arr[2]);

    struct Pair {
        long a;
        double b;
    };
    Pair p = txkit::atomic([] { return Pair{txkit::load(&g_a), 2.5}; });
    CHECK_EQ(p.a, 5);
    CHECK(p.b == 2.5);

    for (int i = 0; i < 4; i++)
        g_arr[i] = 10 * i;
    std::vector<int> vec = txkit::atomic([] {
        std::vector<int> out;
        for (int i = 0; i < 4; i++)
            out.push_back(txkit::load(&g_arr[i]));
        return out;
    });
    CHECK((vec == std::vector<int>{0, 10, 20, 30}));

    // The value of the attempt that committed, after a restart.
    tk_attempts a;
    tk_attempts_init(&a);
    std::string s2 = txkit::atomic([&] {
        int n = tk_attempt_no(&a);
        std::string out = "attempt " + std::to_string(n);
        txkit::store(&g_b, static_cast<long>(n));
        if (n == 0)
            txkit::restart();
        return out;
    });
    CHECK(s2 == "attempt 1");
    CHECK_EQ(g_b, 1);
    CHECK_EQ(tk_explicit_aborts() - a.explicit_base, 1);
    CHECK_EQ(txkit::in_transaction(), 0);
}

void test_load_store_types() {
    static int8_t i8;
    static uint16_t u16;
    static int32_t i32;
    static uint64_t u64;
    static float f;
    static double d;
    static int *ptr;
    static bool flag;
    txkit::atomic([] {
        txkit::store(&i8, -3);
        txkit::store(&u16, 60000);
        txkit::store(&i32, -2000000000);
        txkit::store(&u64, 0x8000000000000001ULL);
        txkit::store(&f, 1.5f);
        txkit::store(&d, 1); // converted to double
        txkit::store(&ptr, &g_arr[1]);
        txkit::store(&flag, true);
        CHECK_EQ(txkit::load(&i8), -3);
        CHECK_EQ(txkit::load(&u16), 60000);
        CHECK_EQ(txkit::load(&i32), -2000000000);
        CHECK(txkit::load(&u64) == 0x8000000000000001ULL);
        CHECK(txkit::load(&f) == 1.5f);
        CHECK(txkit::load(&d) == 1.0);
        CHECK(txkit::load(&ptr) == &g_arr[1]);
        CHECK(txkit::load(&flag));
    });
    CHECK_EQ(i8, -3);
    CHECK_EQ(u16, 60000);
    CHECK_EQ(i32, -2000000000);
    CHECK(u64 == 0x8000000000000001ULL);
    CHECK(f == 1.5f);
    CHECK(d == 1.0);
    CHECK(ptr == &g_arr[1]);
    CHECK(flag);
    // Outside a transaction: plain accesses.
    txkit::store(&i32, 12);
    CHECK_EQ(i32, 12);
    CHECK_EQ(txkit::load(&i32), 12);
    static_assert(std::is_same_v<decltype(txkit::load(&d)), double>, "load returns T");
}

// ------------------------------------------------------------- nesting

void test_nesting() {
    reset_globals();
    CHECK_EQ(txkit::in_transaction(), 0);
    int outer = txkit::atomic([] {
        CHECK_EQ(txkit::in_transaction(), 1);
        txkit::store(&g_a, 1L);
        int inner = txkit::atomic([] {
            CHECK_EQ(txkit::in_transaction(), 2);
            txkit::atomic([] { CHECK_EQ(txkit::in_transaction(), 3); });
            CHECK_EQ(txkit::in_transaction(), 2);
            txkit::store(&g_b, 2L);
            return static_cast<int>(txkit::load(&g_a)) + 10;
        });
        CHECK_EQ(txkit::in_transaction(), 1);
        CHECK_EQ(txkit::load(&g_b), 2);
        return inner * 2;
    });
    CHECK_EQ(outer, 22);
    CHECK_EQ(txkit::in_transaction(), 0);
    CHECK_EQ(g_a, 1);
    CHECK_EQ(g_b, 2);

    // A restart inside the inner block restarts the outer one: destructors
    // of both levels run, the outer level's stores are undone.
    reset_globals();
    Tracker::reset();
    tk_attempts a;
    tk_attempts_init(&a);
    int res = txkit::atomic([&] {
        int n = tk_attempt_no(&a);
        Tracker t1;
        CHECK_EQ(txkit::load(&g_b), 0);
        txkit::store(&g_b, 100L + n);
        return txkit::atomic([&] {
            Tracker t2;
            CHECK_EQ(txkit::in_transaction(), 2);
            if (n == 0)
                txkit::restart();
            return n;
        });
    });
    CHECK_EQ(res, 1);
    CHECK_EQ(g_b, 101);
    CHECK_EQ(txkit::in_transaction(), 0);
    CHECK_EQ(tk_explicit_aborts() - a.explicit_base, 1);
    CHECK_EQ(Tracker::ctor, Tracker::dtor);
    if (!tk_hw_possible())
        CHECK_EQ(Tracker::ctor, 4);
}

// ------------------------------------------------- destructors on restart

// Its destructor writes shared data: the write of an aborted attempt's
// unwinding must never become visible.
struct StoresOnExit {
    ~StoresOnExit() { txkit::store(&g_c, txkit::load(&g_c) + 1); }
};

void test_destructors_on_restart() {
    reset_globals();
    Tracker::reset();
    tk_attempts a;
    tk_attempts_init(&a);
    int last = txkit::atomic([&] {
        Tracker t;
        StoresOnExit s;
        std::string heap(200, 'x'); // freed by the unwinding too
        std::vector<Tracker> more(3);
        int n = tk_attempt_no(&a);
        txkit::store(&g_a, static_cast<long>(n));
        if (n < 2)
            txkit::restart();
        return n;
    });
    CHECK_EQ(last, 2);
    CHECK_EQ(g_a, 2);
    CHECK_EQ(tk_explicit_aborts() - a.explicit_base, 2);
    CHECK_EQ(Tracker::ctor, Tracker::dtor);
    if (!tk_hw_possible()) {
        CHECK_EQ(a.handler_runs, 2);
        CHECK_EQ(Tracker::ctor, 3 * 4); // t and three in the vector, per attempt
    }
    CHECK_EQ(g_c, 1); // only the committed attempt's destructor store
    CHECK_EQ(txkit::in_transaction(), 0);
}

// ------------------------------------------------------------- handlers

int g_int_events[16];
int g_nint;

void test_on_commit_on_abort() {
    reset_globals();
    Counted::live = 0;
    g_nint = 0;
    std::vector<std::string> events;
    tk_attempts a;
    tk_attempts_init(&a);
    txkit::atomic([&] {
        int n = tk_attempt_no(&a);
        Counted c("commit-" + std::to_string(n));
        txkit::on_commit([c, &events] {
            CHECK_EQ(txkit::in_transaction(), 0);
            events.push_back(c.s);
        });
        int x = 10 + n; // trivially copyable closure
        txkit::on_commit([x] {
            CHECK_EQ(txkit::in_transaction(), 0);
            g_int_events[g_nint++] = x;
        });
        Counted tag("abort-" + std::to_string(n));
        txkit::on_abort([tag, &events] {
            CHECK_EQ(txkit::in_transaction(), 0);
            events.push_back(tag.s);
        });
        std::string late = "registered";
        txkit::on_commit([late, &events] { events.push_back(late); });
        late = "changed after registration";
        // Only abort handlers of earlier attempts may have run by now.
        for (const std::string &e : events)
            CHECK(e.compare(0, 6, "abort-") == 0);
        if (!tk_hw_possible())
            CHECK_EQ(events.size(), static_cast<size_t>(n));
        CHECK_EQ(g_nint, 0);
        txkit::store(&g_a, 1L);
        if (n == 0)
            txkit::restart();
    });
    CHECK_EQ(tk_explicit_aborts() - a.explicit_base, 1);
    if (!tk_hw_possible()) {
        CHECK_EQ(events.size(), 3u);
        CHECK(events[0] == "abort-0");
        CHECK(events[1] == "commit-1");
        CHECK(events[2] == "registered");
    } else {
        CHECK(events.size() >= 2u);
        CHECK(events[events.size() - 2] == "commit-1");
        CHECK(events.back() == "registered");
    }
    CHECK_EQ(g_nint, 1);
    CHECK_EQ(g_int_events[0], 11);
    // Every closure is gone: run-and-deleted, or deleted when discarded.
    CHECK_EQ(Counted::live, 0);

    // Order across both closure kinds, once each.
    events.clear();
    txkit::atomic([&] {
        std::string one = "1";
        txkit::on_commit([one, &events] { events.push_back(one); });
        txkit::on_commit([&events] { events.push_back("2"); }); // trivially copyable
        std::string three = "3";
        txkit::on_commit([three, &events] { events.push_back(three); });
    });
    CHECK((events == std::vector<std::string>{"1", "2", "3"}));
    txkit::atomic([] {});
    CHECK_EQ(events.size(), 3u);

    // A large trivially copyable capture, and an over-aligned one.
    std::array<unsigned char, 1000> big;
    for (size_t i = 0; i < big.size(); i++)
        big[i] = static_cast<unsigned char>(i * 7);
    struct alignas(64) Aligned {
        int v;
    };
    int big_ok = 0, aligned_ok = 0;
    txkit::atomic([&] {
        txkit::on_commit([big, &big_ok] {
            for (size_t i = 0; i < big.size(); i++)
                CHECK_EQ(big[i], static_cast<unsigned char>(i * 7));
            big_ok++;
        });
        Aligned al{42};
        txkit::on_commit([al, &aligned_ok] {
            CHECK(reinterpret_cast<uintptr_t>(&al) % 64 == 0);
            CHECK_EQ(al.v, 42);
            aligned_ok++;
        });
    });
    big[0] = 1;
    CHECK_EQ(big_ok, 1);
    CHECK_EQ(aligned_ok, 1);

    // Outside a transaction: on_commit runs at once, on_abort never.
    events.clear();
    {
        Counted c("now");
        txkit::on_commit([c, &events] { events.push_back(c.s); });
        txkit::on_abort([c, &events] { events.push_back("never " + c.s); });
    }
    CHECK_EQ(events.size(), 1u);
    CHECK(events[0] == "now");
    CHECK_EQ(Counted::live, 0);
    tk_attempts_init(&a);
    txkit::atomic([&] {
        if (tk_attempt_no(&a) == 0)
            txkit::restart();
    });
    CHECK_EQ(events.size(), 1u);
}

// Handlers run outside any transaction, so they may run transactions.
void test_handler_transactions() {
    reset_globals();
    txkit::atomic([] {
        txkit::on_commit([] {
            CHECK_EQ(txkit::in_transaction(), 0);
            long v = txkit::atomic([] {
                txkit::store(&g_c, txkit::load(&g_c) + 5);
                return txkit::load(&g_c);
            });
            CHECK_EQ(v, 5);
        });
    });
    CHECK_EQ(g_c, 5);

    // From an abort handler: afterwards the aborted transaction retries and
    // commits as usual.
    reset_globals();
    tk_attempts a;
    tk_attempts_init(&a);
    int r = txkit::atomic([&] {
        int n = tk_attempt_no(&a);
        txkit::store(&g_a, txkit::load(&g_a) + 1);
        txkit::on_abort([] {
            CHECK_EQ(txkit::in_transaction(), 0);
            txkit::atomic([] { txkit::store(&g_c, txkit::load(&g_c) + 1); });
        });
        if (n == 0)
            txkit::restart();
        return n;
    });
    CHECK_EQ(r, 1);
    CHECK_EQ(g_a, 1);
    CHECK_EQ(txkit::in_transaction(), 0);
    CHECK_EQ(tk_explicit_aborts() - a.explicit_base, 1);
    if (!tk_hw_possible())
        CHECK_EQ(g_c, 1);
    // And the next transaction is an ordinary one.
    long v = txkit::atomic([] {
        txkit::store(&g_b, 3L);
        return txkit::load(&g_b);
    });
    CHECK_EQ(v, 3);
}

// ------------------------------------------------------------ exceptions

void test_exceptions() {
    reset_globals();
    bool ran = false;
    bool caught = false;
    try {
        txkit::atomic([&] {
            txkit::store(&g_a, 1L);
            txkit::on_commit([&ran] { ran = true; });
            throw std::runtime_error("boom");
        });
    } catch (const std::runtime_error &e) {
        caught = true;
        CHECK(std::string(e.what()) == "boom");
        CHECK_EQ(txkit::in_transaction(), 0);
        CHECK(ran); // committed before the exception got here
        CHECK_EQ(g_a, 1);
    }
    CHECK(caught);
    CHECK_EQ(g_a, 1);

    // From a value-returning block, after a restart: the second attempt's
    // stores are committed, the first attempt's are not.
    caught = false;
    tk_attempts a;
    tk_attempts_init(&a);
    try {
        int v = txkit::atomic([&]() -> int {
            int n = tk_attempt_no(&a);
            txkit::store(&g_b, 10L + n);
            if (n == 0) {
                txkit::store(&g_c, 99L);
                txkit::restart();
            }
            if (txkit::load(&g_b) > 0)
                throw 42;
            return 0;
        });
        (void)v;
    } catch (int e) {
        caught = true;
        CHECK_EQ(e, 42);
    }
    CHECK(caught);
    CHECK_EQ(g_b, 11);
    CHECK_EQ(g_c, 0);

    // Through an outer block: both levels' stores commit.
    reset_globals();
    caught = false;
    try {
        txkit::atomic([] {
            txkit::store(&g_a, 10L);
            txkit::atomic([] {
                txkit::store(&g_b, 20L);
                throw Custom{7};
            });
            txkit::store(&g_a, 99L); // not reached
        });
    } catch (const Custom &c) {
        caught = true;
        CHECK_EQ(c.v, 7);
    }
    CHECK(caught);
    CHECK_EQ(g_a, 10);
    CHECK_EQ(g_b, 20);
    CHECK_EQ(txkit::in_transaction(), 0);

    // Caught inside the outer block: the transaction goes on and commits.
    reset_globals();
    txkit::atomic([] {
        try {
            txkit::atomic([] {
                txkit::store(&g_b, 30L);
                throw std::logic_error("inner");
            });
        } catch (const std::logic_error &) {
            CHECK_EQ(txkit::in_transaction(), 1);
        }
        txkit::store(&g_a, 40L);
    });
    CHECK_EQ(g_a, 40);
    CHECK_EQ(g_b, 30);
    CHECK_EQ(txkit::in_transaction(), 0);
}

// ----------------------------------------------------------- irrevocable

void test_irrevocable() {
    reset_globals();
    static volatile int side;
    side = 0;
    tx_stats_t s0 = tk_stats();
    int r = txkit::atomic([] {
        txkit::store(&g_a, txkit::load(&g_a) + 1);
        txkit::irrevocable();
        side = side + 1;
        CHECK_EQ(txkit::in_transaction(), 1);
        return static_cast<int>(txkit::load(&g_a));
    });
    tx_stats_t s1 = tk_stats();
    CHECK_EQ(r, 1);
    CHECK_EQ(side, 1);
    CHECK_EQ(s1.irrevocable - s0.irrevocable, 1);
}

// ---------------------------------------------------------------- stress

long g_counter, g_mirror;
std::atomic<int> g_commit_runs;

void test_two_thread_counter() {
    const int per_thread = 50000;
    g_counter = g_mirror = 0;
    Tracker::reset();
    g_commit_runs = 0;
    std::vector<long> got[2];
    long inconsistent[2] = {0, 0};
    tx_stats_t s0 = tk_stats();
    std::atomic<int> ready{0};
    auto body = [&](int t) {
        got[t].reserve(per_thread);
        ready.fetch_add(1);
        while (ready.load() < 2) {
        } // start together
        for (int i = 0; i < per_thread; i++) {
            long v = txkit::atomic([&] {
                long c = txkit::load(&g_counter);
                for (volatile int k = 0; k < 20; k++) {
                } // widen the window for conflicts
                long m = txkit::load(&g_mirror);
                if (c != m)
                    inconsistent[t]++;
                Tracker local; // destroyed by every restart's unwinding
                txkit::store(&g_counter, c + 1);
                txkit::store(&g_mirror, m + 1);
                if (i % 100 == 0)
                    txkit::on_commit([] { g_commit_runs.fetch_add(1); });
                return c + 1;
            });
            got[t].push_back(v);
        }
    };
    std::thread th0(body, 0), th1(body, 1);
    th0.join();
    th1.join();
    tx_stats_t s1 = tk_stats();
    CHECK_EQ(inconsistent[0] + inconsistent[1], 0);
    CHECK_EQ(g_counter, 2 * per_thread);
    CHECK_EQ(g_mirror, 2 * per_thread);
    CHECK_EQ(g_commit_runs.load(), 2 * (per_thread / 100));
    CHECK_EQ(Tracker::ctor, Tracker::dtor);
    // Every increment returned a distinct value: together exactly 1..2N,
    // and each thread saw its own values increase.
    std::vector<long> all;
    long switches = 0; // how often the other thread committed in between
    for (int t = 0; t < 2; t++) {
        CHECK(std::is_sorted(got[t].begin(), got[t].end()));
        for (size_t i = 1; i < got[t].size(); i++)
            switches += got[t][i] != got[t][i - 1] + 1;
        all.insert(all.end(), got[t].begin(), got[t].end());
    }
    std::sort(all.begin(), all.end());
    for (size_t i = 0; i < all.size(); i++)
        CHECK_EQ(all[i], static_cast<long>(i) + 1);
    CHECK_EQ(tx_stats_commits(&s1) - tx_stats_commits(&s0), 2 * per_thread);
    std::printf("    2 x %d increments, %ld interleavings, %llu aborts\n", per_thread, switches,
                static_cast<unsigned long long>(tx_stats_aborts(&s1) - tx_stats_aborts(&s0)));
}

/* A move-only result (std::unique_ptr) comes out of txkit::atomic, also after
 * a restart: the value is moved, never copied. */
static int g_mo_value = 41;
static void test_move_only_result() {
    int attempts = 0;
    std::unique_ptr<int> p = txkit::atomic([&] {
        auto q = std::make_unique<int>(txkit::load(&g_mo_value) + 1);
        if (++attempts == 1)
            txkit::restart();
        return q;
    });
    CHECK(p != nullptr);
    CHECK_EQ(*p, 42);
    CHECK_EQ(attempts, 2);
}

const tk_test tests[] = {
    {"return_values", test_return_values},
    {"move_only_result", test_move_only_result},
    {"load_store_types", test_load_store_types},
    {"nesting", test_nesting},
    {"destructors_on_restart", test_destructors_on_restart},
    {"on_commit_on_abort", test_on_commit_on_abort},
    {"handler_transactions", test_handler_transactions},
    {"exceptions", test_exceptions},
    {"irrevocable", test_irrevocable},
    {"two_thread_counter", test_two_thread_counter},
};

} // namespace

int main(int argc, char **argv) {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    tk_skip_unless_method_usable("test_cxx");
    std::printf("txkit %s, method %s, RTM usable: %d\n", txkit_version(),
                txkit_method_name(txkit_get_method()), txkit_htm_usable());
    return tk_run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
}
