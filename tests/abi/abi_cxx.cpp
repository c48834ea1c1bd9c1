/* SPDX-License-Identifier: MIT */
// abi_cxx.cpp - C++ on the libitm ABI (g++ -fgnu-tm): exceptions and
// transactions, new/delete inside transactions, and classes with
// transaction_safe member functions.
//
//  - An exception thrown out of a transaction: gcc's semantics are that the
//    transaction commits (_ITM_commitTransactionEH) and the exception then
//    propagates, so the stores made before the throw are visible in the
//    handler. Also thrown from a transaction_safe function, and from a nested
//    transaction to a handler inside the enclosing one.
//  - An exception thrown and caught inside one transaction
//    (_ITM_cxa_allocate_exception, _ITM_cxa_throw, _ITM_cxa_begin_catch,
//    _ITM_cxa_end_catch), also while the thread is inside a handler of its
//    own outside the transaction, and _ITM_cxa_free_exception; the block of
//    an exception freed at the end of its handler inside the transaction must
//    not be written by the commit. gcc 12 only
//    accepts catch (...) inside a transaction: a typed handler there is an
//    internal compiler error (expand_call_tm, trans-mem.cc:2537).
//
// The cases some runtime is known to crash on run in a child process
// (ABI_RUN_ISOLATED), each a named check, so that one crash does not hide
// the other results; tests/abi/CMakeLists.txt lists which runtime fails
// which.
//  - new / new[] / nothrow new and delete / delete[] inside transactions that
//    commit and that roll back (fault injection, conflicts): nothing leaks, a
//    delete by an attempt that rolled back does not free (each node carries a
//    magic number that its destructor clears), nothing is freed twice.
//  - A class with transaction_safe member functions (and a virtual one, which
//    is called through the vtable: _ITM_getTMCloneSafe), used by two threads
//    moving money between accounts.
//
// usage: abi_cxx [--small]   (--small: fewer operations, for valgrind)

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>
#include <vector>

#include "abi_common.h"

namespace {

constexpr unsigned long kMagic = 0x4e4f44454e4f4445ul;
long ops = 4000;

long x, y, z;
int cancel_now = 1;

struct TxError {
    int code;
    long seen;
    TxError(int c, long s) transaction_safe : code(c), seen(s) {}
};

// ------------------------------------------------------------- exceptions

__attribute__((noinline)) void throw_out_of_transaction() {
    __transaction_atomic {
        x = 1;
        y = 2;
        if (cancel_now)
            throw TxError(42, x + y);
        z = 3; // never reached
    }
}

__attribute__((transaction_safe, noinline)) void store_and_throw(long v) {
    z = v;
    if (v > 0)
        throw TxError(7, v);
}

__attribute__((noinline)) void throw_from_safe_function() {
    __transaction_atomic {
        x = 10;
        store_and_throw(11);
        y = -1; // never reached
    }
}

// The nested transaction is left by the exception; the handler is inside the
// enclosing transaction, which then commits normally.
__attribute__((noinline)) void throw_from_nested() {
    __transaction_atomic {
        x = 20;
        try {
            __transaction_atomic {
                y = 21;
                if (cancel_now)
                    throw TxError(3, y);
                y = -1;
            }
        } catch (...) {
            z = 22;
        }
    }
}

void nested_throw_case() {
    x = y = z = 0;
    throw_from_nested();
    CHECK_EQ(x, 20);
    CHECK_EQ(y, 21);
    CHECK_EQ(z, 22);
}

void exceptions_out() {
    x = y = z = 0;
    try {
        throw_out_of_transaction();
        CHECK(!"no exception");
    } catch (const TxError &e) {
        // committed before the exception left the transaction
        CHECK_EQ(e.code, 42);
        CHECK_EQ(e.seen, 3);
        CHECK_EQ(x, 1);
        CHECK_EQ(y, 2);
        CHECK_EQ(_ITM_inTransaction(), ABI_OUTSIDE);
    }
    CHECK_EQ(z, 0);

    x = y = z = 0;
    try {
        throw_from_safe_function();
        CHECK(!"no exception");
    } catch (const TxError &e) {
        CHECK_EQ(e.code, 7);
        CHECK_EQ(e.seen, 11);
    }
    CHECK_EQ(x, 10);
    CHECK_EQ(z, 11);
    CHECK_EQ(y, 0);

    ABI_RUN_ISOLATED("throw_from_nested", nested_throw_case);
    abi_summary("throw_out=ok");
}

// Thrown and caught in one transaction, many times (with fault injection,
// some attempts roll back after the handler has run).
long caught_count;

__attribute__((noinline)) void throw_and_catch_inside(long i) {
    __transaction_atomic {
        try {
            x = i;
            if (cancel_now)
                throw TxError(1, i);
            x = -1;
        } catch (...) {
            caught_count = caught_count + 1;
        }
    }
}

struct Outer {
    unsigned long magic = kMagic;
    ~Outer() { magic = 0; }
};

void catch_inside_case() {
    caught_count = 0;
    for (long i = 0; i < ops / 8; i++)
        throw_and_catch_inside(i);
    CHECK_EQ(caught_count, ops / 8);
    CHECK_EQ(x, ops / 8 - 1);
}

// the same inside a handler: the outer exception must stay alive
void catch_inside_handler_case() {
    caught_count = 0;
    try {
        throw Outer();
    } catch (const Outer &o) {
        for (long i = 0; i < ops / 8; i++) {
            throw_and_catch_inside(i);
            CHECK_EQ(o.magic, kMagic);
        }
    }
    CHECK_EQ(caught_count, ops / 8);
}

extern "C" {
void *_ITM_cxa_allocate_exception(std::size_t) ABI_PURE;
void _ITM_cxa_free_exception(void *) ABI_PURE;
}

// An exception allocated and freed again without being thrown (what gcc
// emits when constructing the exception object throws).
__attribute__((noinline)) void allocate_and_free_exception(long i) {
    __transaction_atomic {
        void *e = _ITM_cxa_allocate_exception(64);
        static_cast<long *>(e)[0] = i;
        x = static_cast<long *>(e)[0];
        _ITM_cxa_free_exception(e);
    }
}

void free_exception_case() {
    for (long i = 0; i < ops / 8; i++)
        allocate_and_free_exception(i);
    CHECK_EQ(x, ops / 8 - 1);
}

// The exception object is built by a transaction_safe constructor, so with
// barriers, and is freed when its handler ends, still inside the transaction.
// The runtime must not write the constructor's stores to that memory at the
// commit: the block is taken again right after the handler (glibc hands a
// just-freed block of the same size out first) and filled with a pattern
// that must survive the commit.
struct Payload {
    long a, b;
    explicit Payload(long v) transaction_safe : a(v), b(~v) {}
};
constexpr std::size_t kPayloadBlock = 128 + sizeof(Payload); // libstdc++'s header + object
unsigned char *reused;

ABI_PURE void take_freed_exception_block() {
    std::free(reused); // from an attempt that rolled back
    reused = static_cast<unsigned char *>(std::malloc(kPayloadBlock));
    std::memset(reused, 0x5a, kPayloadBlock);
}

__attribute__((noinline)) void catch_then_reuse(long i) {
    __transaction_atomic {
        try {
            x = i;
            if (cancel_now)
                throw Payload(i);
        } catch (...) {
            y = y + 1;
        }
        take_freed_exception_block();
    }
}

void exception_block_case() {
    long damaged = 0;
    for (long i = 0; i < 64; i++) {
        reused = nullptr;
        catch_then_reuse(i);
        for (std::size_t k = 0; k < kPayloadBlock; k++)
            if (reused[k] != 0x5a) {
                damaged++;
                break;
            }
        std::free(reused);
    }
    if (damaged)
        std::fprintf(stderr,
                     "%ld of 64 blocks freed with their exception were written at the "
                     "commit\n",
                     damaged);
    CHECK_EQ(damaged, 0);
}

void exceptions_inside() {
    ABI_RUN_ISOLATED("exception_block_after_free", exception_block_case);
    ABI_RUN_ISOLATED("catch_inside", catch_inside_case);
    ABI_RUN_ISOLATED("catch_inside_handler", catch_inside_handler_case);
    ABI_RUN_ISOLATED("free_exception", free_exception_case);
}

// ------------------------------------------------------------ new / delete

struct Node {
    unsigned long magic;
    long value;
    Node *next;
    Node(long v, Node *n) transaction_safe : magic(kMagic), value(v), next(n) {}
    ~Node() transaction_safe { magic = 0; }
};

Node *head;
long pushed, popped, popped_sum;
unsigned long bad_nodes;

ABI_PURE void note_bad_node() { __atomic_fetch_add(&bad_nodes, 1, __ATOMIC_RELAXED); }

__attribute__((noinline)) void push(long v) {
    __transaction_atomic {
        abi_count_attempt();
        head = new Node(v, head);
        pushed = pushed + 1;
    }
}

__attribute__((noinline)) void pop() {
    __transaction_atomic {
        abi_count_attempt();
        Node *n = head;
        if (n) {
            if (n->magic != kMagic)
                note_bad_node(); // deleted by an attempt that rolled back?
            head = n->next;
            popped_sum = popped_sum + n->value;
            popped = popped + 1;
            delete n;
        }
    }
}

// new[] / delete[] in one transaction, nothing kept. At -O2 g++ 12 stores
// into the new array with _ITM_WM128 (the loop is vectorized) but loads a[3]
// back with a plain load: it takes memory allocated in the transaction for
// private. Right on a runtime that writes in place (every libitm method); a
// runtime that keeps barrier stores aside until the commit reads stale bytes.
long array_errors;

__attribute__((noinline)) void arrays(long i) {
    __transaction_atomic {
        long *a = new long[16];
        for (int k = 0; k < 16; k++)
            a[k] = i + k;
        if (a[3] != i + 3)
            array_errors = array_errors + 1;
        delete[] a;
    }
}

// The transactional operators that gcc 12 does not emit here (nothrow new is
// not transaction_safe in its <new>; unsized delete needs
// -fno-sized-deallocation), called directly: allocated in one transaction,
// freed in the next.
extern "C" {
void *_ZGTtnwm(std::size_t) ABI_PURE;
void *_ZGTtnam(std::size_t) ABI_PURE;
void *_ZGTtnwmRKSt9nothrow_t(std::size_t, const std::nothrow_t &) ABI_PURE;
void *_ZGTtnamRKSt9nothrow_t(std::size_t, const std::nothrow_t &) ABI_PURE;
void _ZGTtdlPv(void *) ABI_PURE;
void _ZGTtdaPv(void *) ABI_PURE;
void _ZGTtdlPvm(void *, std::size_t) ABI_PURE;
void _ZGTtdlPvRKSt9nothrow_t(void *, const std::nothrow_t &) ABI_PURE;
void _ZGTtdaPvRKSt9nothrow_t(void *, const std::nothrow_t &) ABI_PURE;
void _ZGTtdlPvmRKSt9nothrow_t(void *, std::size_t, const std::nothrow_t &) ABI_PURE;
}

__attribute__((noinline)) void direct_operators_alloc(long **slots) {
    __transaction_atomic {
        slots[0] = static_cast<long *>(_ZGTtnwm(32));
        slots[1] = static_cast<long *>(_ZGTtnam(64));
        slots[2] = static_cast<long *>(_ZGTtnwmRKSt9nothrow_t(16, std::nothrow));
        slots[3] = static_cast<long *>(_ZGTtnamRKSt9nothrow_t(48, std::nothrow));
        slots[4] = static_cast<long *>(_ZGTtnwm(24));
        for (int k = 0; k < 5; k++)
            *slots[k] = k;
    }
}

__attribute__((noinline)) void direct_operators_free(long **slots) {
    __transaction_atomic {
        long sum = 0;
        for (int k = 0; k < 5; k++)
            sum += *slots[k];
        z = z + sum - 10;
        _ZGTtdlPv(slots[0]);
        _ZGTtdaPv(slots[1]);
        _ZGTtdlPvRKSt9nothrow_t(slots[2], std::nothrow);
        _ZGTtdaPvRKSt9nothrow_t(slots[3], std::nothrow);
        _ZGTtdlPvm(slots[4], 24);
        for (int k = 0; k < 5; k++)
            slots[k] = nullptr;
    }
}

// The sized nothrow delete, alone (the system libitm crashes in it).
__attribute__((noinline)) long *nothrow_new(long i) {
    long *p;
    __transaction_atomic {
        p = static_cast<long *>(_ZGTtnwmRKSt9nothrow_t(40, std::nothrow));
        *p = i;
    }
    return p;
}

__attribute__((noinline)) void sized_nothrow_delete(long *p, long i) {
    __transaction_atomic {
        z = z + *p - i;
        _ZGTtdlPvmRKSt9nothrow_t(p, 40, std::nothrow);
    }
}

void sized_nothrow_delete_case() {
    z = 0;
    for (long i = 0; i < 16; i++)
        sized_nothrow_delete(nothrow_new(i), i);
    CHECK_EQ(z, 0);
}

void new_delete_worker(long self) {
    long *slots[5];
    for (long i = 0; i < ops; i++) {
        push(self * ops + i);
        if (i % 2)
            pop();
        if (i % 16 == 0)
            arrays(i);
        if (i % 16 == 8) {
            direct_operators_alloc(slots);
            direct_operators_free(slots);
        }
    }
}

void new_delete() {
    z = 0;
    new_delete_worker(0); // warm up one thread: the runtimes' logs reach their size
    size_t before = abi_heap_in_use();
    long live_before = pushed - popped;
    std::thread t1(new_delete_worker, 1), t2(new_delete_worker, 2);
    t1.join();
    t2.join();
    size_t after = abi_heap_in_use();
    long live = pushed - popped;
    size_t grew = after > before ? after - before : 0;
    size_t expected = (size_t)(live - live_before) * (sizeof(Node) + 16);
    std::printf("INFO abi_cxx: heap grew by %zu bytes for %ld more live nodes\n", grew,
                live - live_before);
    ABI_EXPECT("new_delete_no_leak", grew <= expected + 128 * 1024,
               "the heap grew more than the live nodes");
    CHECK_EQ(bad_nodes, 0);
    CHECK_EQ(z, 0);
    char detail[128];
    std::snprintf(detail, sizeof detail,
                  "%ld of %ld transactions read back a value other than "
                  "the one they stored in their new[] array",
                  array_errors, 3 * (ops / 16));
    ABI_EXPECT("new_array_reads", array_errors == 0, detail);
    CHECK_EQ(pushed, 3 * ops);
    CHECK_EQ(popped, 3 * (ops / 2));

    long count = 0, sum = 0;
    for (Node *n = head; n && count <= pushed; n = n->next) {
        CHECK_EQ(n->magic, kMagic);
        count++;
        sum += n->value;
    }
    CHECK_EQ(count, pushed - popped);
    long all = 0;
    for (long v = 0; v < 3 * ops; v++)
        all += v;
    CHECK_EQ(sum + popped_sum, all);
    abi_summary("pushed=%ld popped=%ld left=%ld", pushed, popped, count);
    ABI_RUN_ISOLATED("sized_nothrow_delete", sized_nothrow_delete_case);
    while (head) {
        Node *n = head;
        head = n->next;
        delete n;
    }
}

// ------------------------------------------------- transaction_safe members

class Account {
  public:
    explicit Account(long b = 0) : balance_(b) {}
    virtual ~Account() {}
    long balance() const transaction_safe { return balance_; }
    void deposit(long v) transaction_safe { balance_ += v; }
    bool withdraw(long v) transaction_safe {
        if (balance_ < v)
            return false;
        balance_ -= v;
        return true;
    }
    // dispatched through the vtable: the runtime finds the clone
    virtual long fee(long v) const transaction_safe_dynamic { return v / 100; }

  private:
    long balance_;
};

class PremiumAccount : public Account {
  public:
    explicit PremiumAccount(long b) : Account(b) {}
    long fee(long v) const transaction_safe_dynamic override { return 0 * v; }
};

constexpr int kAccounts = 16;
Account *accounts[kAccounts];
long fees_collected, refused;

__attribute__((noinline)) void transfer(int from, int to, long amount) {
    __transaction_atomic {
        Account *a = accounts[from];
        long fee = a->fee(amount);
        if (a->withdraw(amount + fee)) {
            accounts[to]->deposit(amount);
            fees_collected = fees_collected + fee;
        } else {
            refused = refused + 1;
        }
    }
}

__attribute__((noinline)) long audit() {
    long sum;
    __transaction_atomic {
        sum = fees_collected;
        for (int i = 0; i < kAccounts; i++)
            sum += accounts[i]->balance();
    }
    return sum;
}

void bank_worker(uint64_t seed) {
    for (long i = 0; i < ops; i++) {
        uint64_t r = abi_rand(&seed);
        int from = (int)(r % kAccounts);
        int to = (int)((from + 1 + (r >> 8) % (kAccounts - 1)) % kAccounts);
        transfer(from, to, (long)((r >> 32) % 500));
        if (i % 32 == 0)
            CHECK_EQ(audit(), kAccounts * 1000L);
    }
}

void members() {
    for (int i = 0; i < kAccounts; i++)
        accounts[i] = i % 4 ? new Account(1000) : new PremiumAccount(1000);
    std::thread t1(bank_worker, 0x1234567ull), t2(bank_worker, 0x7654321ull);
    t1.join();
    t2.join();
    CHECK_EQ(audit(), kAccounts * 1000L);
    long negative = 0;
    for (int i = 0; i < kAccounts; i++)
        negative += accounts[i]->balance() < 0;
    CHECK_EQ(negative, 0);
    std::printf("INFO abi_cxx: fees %ld, refused transfers %ld (depend on the interleaving)\n",
                fees_collected, refused);
    abi_summary("bank_total=%ld", audit());
    for (int i = 0; i < kAccounts; i++)
        delete accounts[i];
}

} // namespace

int main(int argc, char **argv) {
    abi_init("abi_cxx");
    if (argc > 1 && std::strcmp(argv[1], "--small") == 0)
        ops = 400;
    exceptions_out();
    members();
    new_delete();
    exceptions_inside();
    return abi_finish();
}
