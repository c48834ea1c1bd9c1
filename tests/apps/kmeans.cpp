/* SPDX-License-Identifier: MIT */
/* kmeans.cpp - k-means clustering (in the style of STAMP's kmeans), the
 * C++ app of the corpus: tiny floating-point update transactions plus
 * membership bookkeeping in containers of our own that allocate with
 * new/new[] and free with delete/delete[] inside transactions.
 *
 * Each iteration: threads claim chunks of points in a transaction, find each
 * point's nearest center (centers are read-only during the phase), and add
 * the point into the new center's float sums and count and a double error
 * total (a tiny transaction). When a point changes cluster, another
 * transaction moves it between two member lists (delete the old node, new
 * a node) and appends it to a change log vector (grown with new[] and
 * delete[]). Between iterations the main thread checks the oracle and
 * computes the next centers.
 * Oracle, every iteration: counts per cluster are exact (sums' count, member
 * list, assignment array agree); float sums and the error total agree with
 * a sequential double recomputation within a tolerance; the change log
 * holds exactly the points that moved.
 *
 * SIZE: the number of points (default 16384).
 */
#include "app_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TS __attribute__((transaction_safe))
#define TS_NOINLINE __attribute__((transaction_safe, noinline))

namespace {

const int D = 4;
const int K = 8;
const int ITERS = 5;
const long CHUNK = 64;

/* A growable array of a trivial T: new[] a larger buffer, copy, delete[]
 * the old one. */
template <class T> class TxVec {
  public:
    TxVec() : a_(nullptr), n_(0), cap_(0) {}
    ~TxVec() { ::operator delete[](a_); }
    TS_NOINLINE void push(const T &v) {
        if (n_ == cap_)
            grow(cap_ ? cap_ * 2 : 4);
        a_[n_++] = v;
    }
    TS long size() const { return n_; }
    const T &operator[](long i) const { return a_[i]; }
    void clear() {
        ::operator delete[](a_);
        a_ = nullptr;
        n_ = cap_ = 0;
    }

  private:
    TS_NOINLINE void grow(long cap) {
        /* raw new[] of bytes: `new T[cap]` with a run-time count may throw
         * bad_array_new_length, which is not transaction-safe (T is trivial) */
        T *na = static_cast<T *>(::operator new[](sizeof(T) * (size_t)cap));
        for (long i = 0; i < n_; i++)
            na[i] = a_[i];
        ::operator delete[](a_);
        a_ = na;
        cap_ = cap;
    }
    T *a_;
    long n_, cap_;
};

/* A singly linked list with new/delete per node. */
template <class T> class TxList {
    struct Node {
        T v;
        Node *next;
    };

  public:
    TxList() : head_(nullptr), n_(0) {}
    ~TxList() { clear(); }
    TS_NOINLINE void push(const T &v) {
        Node *x = new Node;
        x->v = v;
        x->next = head_;
        head_ = x;
        n_++;
    }
    /* Removes one v; whether it was there. */
    TS_NOINLINE bool remove(const T &v) {
        for (Node **pp = &head_; *pp; pp = &(*pp)->next) {
            if ((*pp)->v == v) {
                Node *x = *pp;
                *pp = x->next;
                delete x;
                n_--;
                return true;
            }
        }
        return false;
    }
    TS long size() const { return n_; }
    template <class F> long for_each(F f) const {
        long c = 0;
        for (Node *x = head_; x; x = x->next, c++)
            f(x->v);
        return c;
    }
    void clear() {
        while (head_) {
            Node *x = head_;
            head_ = x->next;
            delete x;
        }
        n_ = 0;
    }

  private:
    Node *head_;
    long n_;
};

app_cfg cfg;
long npts;
float *pts; /* npts * D */
float centers[K][D];
int *assign; /* current cluster of each point, -1 before the first */

/* shared, updated in transactions */
float new_sum[K][D];
long new_len[K];
double sse;
long next_point;
TxList<int> *members; /* K lists */
TxVec<int> *changes;

struct tally {
    long points, moved;
    char pad[64];
};
tally *tallies;

/* Adds point p (D floats, the caller's) to cluster c's accumulators. */
TS_NOINLINE void accumulate(int c, const float *p, double dist) {
    new_len[c]++;
    for (int d = 0; d < D; d++)
        new_sum[c][d] += p[d];
    sse += dist;
}

/* Moves point i from cluster from (-1: none) to cluster to. */
TS_NOINLINE void move_point(long i, int from, int to) {
    bool removed = from < 0 || members[from].remove((int)i);
    CHECK_MSG(removed, "point %ld not in cluster %d", i, from);
    members[to].push((int)i);
    assign[i] = to;
    changes->push((int)i);
}

void phase(int tid, void *) {
    tally *ty = &tallies[tid];
    for (;;) {
        long start;
        __transaction_atomic {
            start = next_point;
            next_point += CHUNK;
        }
        if (start >= npts)
            break;
        long end = start + CHUNK < npts ? start + CHUNK : npts;
        for (long i = start; i < end; i++) {
            float p[D]; /* a stack copy the transaction reads */
            memcpy(p, &pts[i * D], sizeof p);
            int best = 0;
            double bestd = 0;
            for (int c = 0; c < K; c++) {
                double dd = 0;
                for (int d = 0; d < D; d++)
                    dd += (double)(p[d] - centers[c][d]) * (p[d] - centers[c][d]);
                if (c == 0 || dd < bestd) {
                    best = c;
                    bestd = dd;
                }
            }
            __transaction_atomic { accumulate(best, p, bestd); }
            ty->points++;
            int old = assign[i];
            if (old != best) {
                __transaction_atomic { move_point(i, old, best); }
                ty->moved++;
            }
        }
    }
}

void setup() {
    uint64_t rng = app_seed(&cfg, 999, 6);
    npts = cfg.size < K ? K : cfg.size;
    pts = static_cast<float *>(app_xmalloc(sizeof(float) * (size_t)npts * D));
    assign = static_cast<int *>(app_xmalloc(sizeof(int) * (size_t)npts));
    float truth[K][D];
    for (int c = 0; c < K; c++)
        for (int d = 0; d < D; d++)
            truth[c][d] = (float)(app_rand(&rng) % 2000) / 10.0f - 100.0f;
    for (long i = 0; i < npts; i++) {
        int c = (int)(app_rand(&rng) % K);
        for (int d = 0; d < D; d++)
            pts[i * D + d] =
                truth[c][d] + (float)((double)(app_rand(&rng) % 20001) / 1000.0 - 10.0);
        assign[i] = -1;
    }
    for (int c = 0; c < K; c++) /* the first K points as initial centers */
        memcpy(centers[c], &pts[c * D], sizeof centers[c]);
    members = new TxList<int>[K];
    changes = new TxVec<int>;
}

void reset_accumulators() {
    memset(new_sum, 0, sizeof new_sum);
    memset(new_len, 0, sizeof new_len);
    sse = 0;
    next_point = 0;
    changes->clear();
    memset(tallies, 0, sizeof(tally) * (size_t)cfg.threads);
}

/* Checks one iteration; returns the points that moved. */
long check_iteration(int it) {
    double seq[K][D] = {};
    long cnt[K] = {};
    double seq_sse = 0;
    for (long i = 0; i < npts; i++) {
        int c = assign[i];
        CHECK_MSG(c >= 0 && c < K, "iteration %d: point %ld in cluster %d", it, i, c);
        double dd = 0;
        for (int d = 0; d < D; d++) {
            seq[c][d] += pts[i * D + d];
            dd += (double)(pts[i * D + d] - centers[c][d]) * (pts[i * D + d] - centers[c][d]);
        }
        seq_sse += dd;
        cnt[c]++;
    }
    long total = 0;
    for (int c = 0; c < K; c++) {
        CHECK_MSG(new_len[c] == cnt[c], "iteration %d cluster %d: count %ld, expected %ld", it, c,
                  new_len[c], cnt[c]);
        long listed = members[c].for_each([&](int i) {
            CHECK_MSG(assign[i] == c, "point %d listed in cluster %d, assigned %d", i, c,
                      assign[i]);
        });
        CHECK_MSG(listed == cnt[c] && members[c].size() == cnt[c],
                  "iteration %d cluster %d: %ld members listed, size %ld, expected %ld", it, c,
                  listed, members[c].size(), cnt[c]);
        for (int d = 0; d < D; d++) {
            double tol = 1e-3 * (fabs(seq[c][d]) + (double)cnt[c]) + 1.0;
            CHECK_MSG(fabs((double)new_sum[c][d] - seq[c][d]) <= tol,
                      "iteration %d cluster %d dim %d: sum %.3f, sequential %.3f", it, c, d,
                      (double)new_sum[c][d], seq[c][d]);
        }
        total += cnt[c];
    }
    CHECK_MSG(total == npts, "iteration %d: %ld points counted of %ld", it, total, npts);
    CHECK_MSG(fabs(sse - seq_sse) <= 1e-6 * seq_sse + 1e-6,
              "iteration %d: error %.6f, sequential %.6f", it, sse, seq_sse);
    long moved = 0, points = 0;
    for (int t = 0; t < cfg.threads; t++) {
        moved += tallies[t].moved;
        points += tallies[t].points;
    }
    CHECK_MSG(points == npts, "iteration %d: threads took %ld points of %ld", it, points, npts);
    CHECK_MSG(changes->size() == moved, "iteration %d: change log %ld, moved %ld", it,
              changes->size(), moved);
    char *mark = static_cast<char *>(app_xmalloc((size_t)npts));
    memset(mark, 0, (size_t)npts);
    for (long j = 0; j < changes->size(); j++) {
        int i = (*changes)[j];
        CHECK_MSG(i >= 0 && i < npts && !mark[i], "iteration %d: change log entry %d bad or twice",
                  it, i);
        mark[i] = 1;
    }
    free(mark);
    for (int c = 0; c < K; c++)
        for (int d = 0; d < D; d++)
            centers[c][d] = cnt[c] ? (float)(new_sum[c][d] / (float)cnt[c]) : centers[c][d];
    return moved;
}

void free_all() {
    delete[] members;
    delete changes;
    free(pts);
    free(assign);
}

} // namespace

int main(int argc, char **argv) {
    app_init(&cfg, "kmeans", argc, argv, 16384);
    tallies = static_cast<tally *>(app_xmalloc(sizeof(tally) * (size_t)cfg.threads));
    while (app_next_round(&cfg)) {
        setup();
        long moved = 0;
        for (int it = 0; it < ITERS; it++) {
            reset_accumulators();
            app_parallel(&cfg, phase, nullptr);
            moved = check_iteration(it);
            if (cfg.round == 0)
                printf("INFO kmeans: iteration %d: %ld points moved, error %.1f\n", it, moved, sse);
        }
        free_all();
    }
    free(tallies);
    app_pass("oracle holds");
    return 0;
}
