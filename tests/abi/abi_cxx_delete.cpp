/* SPDX-License-Identifier: MIT */
// abi_cxx_delete.cpp - C++ delete inside __transaction_atomic must wait for
// the readers like tx_free (issue 11, defect 3).
//
//   abi_cxx_delete [--serial-writer] [SECONDS] [VARIANT...]
//
// A writer thread replaces a shared pointer to a large object inside a
// transaction and deletes the old object there; a reader thread loads the
// pointer in a transaction, works privately for a while, then reads through
// it. A software reader can still hold the pointer when the writer commits:
// the delete must wait until no such attempt runs (txkit's epoch reclamation).
// Before the fix it freed right after the commit, and with
// GLIBC_TUNABLES=glibc.malloc.mmap_threshold=65536 (set by the test) the
// object's memory is unmapped at once, so the reader takes SIGSEGV.
//
// Every variant of the transactional delete is exercised, one after the
// other, SECONDS / (number of variants) each:
//   plain        ::operator delete(p)                  _ZGTtdlPv
//   sized        delete p (complete type)              _ZGTtdlPvm
//   array        delete[] of a trivially destructible  _ZGTtdaPv
//   array_dtor   delete[] of a class with a destructor _ZGTtdaPvm
//   aligned      delete of an over-aligned type        _ZGTtdlPvmSt11align_val_t
//   aligned_arr  delete[] of over-aligned with dtor    _ZGTtdaPvmSt11align_val_t
// (the last three are not in libitm's ABI: built with ABI_LIBITM_VARIANTS,
// the program leaves them out and runs on GCC's libitm and txkit's drop-in). Objects are allocated outside the transactions (aligned new is
// not transaction-safe); only the deletes run inside.
//
// --serial-writer: the writer's transactions run serially
// (txkit_set_thread_method): a serial transaction's delete must wait for the
// software readers too (one of them may hold the pointer from before).
//
// Oracle: no crash; every reader transaction saw an object whose two stamps
// agree (v and its complement at the far end of the object); both threads
// made progress in every variant.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <thread>
#include <vector>

#ifndef ABI_LIBITM_VARIANTS
#include <txkit.h>
#endif

static const size_t kPad = 192 * 1024; // > the 64 KiB mmap threshold the test sets

struct Plain {
    long v;
    char pad[kPad];
    long check;
};

struct Elem { // an array element with a destructor: delete[] is sized
    long v;
    char pad[kPad / 4];
    long check;
    ~Elem() transaction_safe { v = -1; }
};

struct alignas(64) Aligned {
    long v;
    char pad[kPad];
    long check;
    ~Aligned() transaction_safe {}
};

enum Variant { PLAIN, SIZED, ARRAY, ARRAY_DTOR, ALIGNED, ALIGNED_ARR, NVARIANTS };
#ifdef ABI_LIBITM_VARIANTS
static const int kRun = ARRAY_DTOR; // the variants before it
#else
static const int kRun = NVARIANTS;
#endif
static const char *const kNames[NVARIANTS] = {"plain",      "sized",   "array",
                                              "array_dtor", "aligned", "aligned_arr"};

// The shared object: v at the start, ~v at the end, whatever the variant.
static void *head;
static Variant variant;
static std::atomic<bool> stop;
static long reads, writes, bad;
static bool serial_writer;
volatile long sink;

static void *make(Variant k, long v) {
    switch (k) {
    case PLAIN:
    case SIZED: {
        Plain *p = new Plain;
        p->v = v;
        p->check = ~v;
        return p;
    }
    case ARRAY: {
        Plain *p = new Plain[1];
        p->v = v;
        p->check = ~v;
        return p;
    }
#ifndef ABI_LIBITM_VARIANTS
    case ARRAY_DTOR: {
        Elem *p = new Elem[4];
        p[0].v = v;
        p[3].check = ~v;
        return p;
    }
    case ALIGNED: {
        Aligned *p = new Aligned;
        p->v = v;
        p->check = ~v;
        return p;
    }
    case ALIGNED_ARR: {
        Aligned *p = new Aligned[1];
        p->v = v;
        p->check = ~v;
        return p;
    }
#endif
    default:
        std::abort();
    }
}

// Offsets of the two stamps in each layout.
static long *first(void *p) { return (long *)p; }
static long *last(void *p) {
    switch (variant) {
    case ARRAY_DTOR:
        return &((Elem *)p)[3].check;
    case ALIGNED:
    case ALIGNED_ARR:
        return &((Aligned *)p)->check;
    default:
        return &((Plain *)p)->check;
    }
}

__attribute__((noinline)) static void free_untransacted(void *p, Variant k) {
    switch (k) {
    case PLAIN:
    case SIZED:
        delete (Plain *)p;
        break;
    case ARRAY:
        delete[](Plain *) p;
        break;
#ifndef ABI_LIBITM_VARIANTS
    case ARRAY_DTOR:
        delete[](Elem *) p;
        break;
    case ALIGNED:
        delete (Aligned *)p;
        break;
    case ALIGNED_ARR:
        delete[](Aligned *) p;
        break;
#endif
    default:
        std::abort();
    }
}

__attribute__((noinline)) static long reader_tx() {
    long a, b, work;
    __transaction_atomic {
        void *p = head;
        long x = (long)p;
        for (int i = 0; i < 2000; i++) // private work between loading the pointer and using it
            x = x * 6364136223846793005L + 1;
        a = *first(p);
        b = *last(p);
        work = x;
    }
    sink = work;
    return a == ~b ? a : (bad++, a);
}

__attribute__((noinline)) static void writer_tx(void *fresh) {
    __transaction_atomic {
        void *old = head;
        head = fresh;
        switch (variant) {
        case PLAIN:
            ::operator delete(old);
            break;
        case SIZED:
            delete (Plain *)old;
            break;
        case ARRAY:
            delete[](Plain *) old;
            break;
#ifndef ABI_LIBITM_VARIANTS
        case ARRAY_DTOR:
            delete[](Elem *) old;
            break;
        case ALIGNED:
            delete (Aligned *)old;
            break;
        case ALIGNED_ARR:
            delete[](Aligned *) old;
            break;
#endif
        default:
            break;
        }
    }
}

static int run(Variant k, double secs) {
    variant = k;
    head = make(k, 0);
    stop = false;
    reads = writes = bad = 0;
    std::thread r([] {
        long n = 0, sum = 0;
        while (!stop) {
            sum += reader_tx();
            n++;
        }
        reads = n;
        sink = sum;
    });
    std::thread w([] {
#ifndef ABI_LIBITM_VARIANTS
        if (serial_writer && txkit_set_thread_method(TXKIT_SERIAL) != 0)
            std::abort();
#endif
        long i = 1;
        while (!stop) {
            void *fresh = make(variant, i);
            writer_tx(fresh);
            i++;
        }
        writes = i - 1;
    });
    std::this_thread::sleep_for(std::chrono::duration<double>(secs));
    stop = true;
    r.join();
    w.join();
    free_untransacted(head, k);
    std::printf("%-12s %ld reads, %ld writes, %ld inconsistent\n", kNames[k], reads, writes, bad);
    if (reads == 0 || writes == 0 || bad != 0) {
        std::fprintf(stderr, "FAILED: variant %s\n", kNames[k]);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    int a = 1;
    if (a < argc && std::strcmp(argv[a], "--serial-writer") == 0) {
        serial_writer = true;
        a++;
    }
    double secs = a < argc ? std::atof(argv[a++]) : 6.0;
    std::vector<Variant> which;
    for (int i = a; i < argc; i++) {
        int k = 0;
        while (k < kRun && std::strcmp(argv[i], kNames[k]) != 0)
            k++;
        if (k == kRun) {
            std::fprintf(stderr, "unknown variant %s\n", argv[i]);
            return 2;
        }
        which.push_back((Variant)k);
    }
    if (which.empty())
        for (int k = 0; k < kRun; k++)
            which.push_back((Variant)k);
    int failed = 0;
    for (Variant k : which)
        failed += run(k, secs / (double)which.size());
    std::printf(failed ? "FAILED\n" : "ok\n");
    return failed ? 1 : 0;
}
