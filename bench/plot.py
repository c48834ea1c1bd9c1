#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/plot.py - every figure of txkit's benchmarks, drawn from their CSV files.

The runners (bench/run-*.sh, bench/cm/run.sh, cache/bench/*/run.sh) write CSV
files and call this script through plot_csv in bench/harness/lib.sh; it can
also be run by hand on kept CSV files:

  bench/plot.py KIND [--out FILE] [--about TEXT] [--scale TEXT] INPUT...

KIND and its inputs:
  intset  CSV...           txkit-bench-intset / -bank / -fixed files: Mops/s vs threads,
                           one panel per workload, one line per method
  cache   NAME=CSV...      txkit-bench-cache runs (auto, stm, nortm, libitm):
                           Mops/s vs threads, one panel per Zipf s
  apache  CSV              cache/bench/apache/run.sh's apache.csv (every run):
                           requests/s and mean latency vs threads per s (FILE),
                           and aborts per million transactions (FILE with
                           -aborts before the extension)
  abi     CSV              run-abi.sh's abi-summary.csv: throughput relative
                           to GCC's libitm default, per workload and threads
  apps    CSV              run-apps.sh's apps.csv: time per round, txkit /
                           GCC's libitm, per application and threads
  cx      CSV              run-cx.sh's cx.csv: Mops/s vs threads per lock
  cm      DIR              bench/cm/run.sh's directory (inversion.csv,
                           hotcounter.csv, pipeline.csv): three figures
  locks   CSV              run-locks.sh's locks.csv: time lost per program,
                           top locks' acquisitions, waiters, exclusive share

Conventions of every figure: the median of the runs with min/max error bars
where the CSV has them; Mops/s for throughput; a logarithmic axis (plain
tick labels) where the values span more than a decade; thread axes in
powers of two; points with more threads than CPUs drawn hollow in a shaded
"oversubscribed" band; the legend outside the data; a title that says the
machine (host, CPU, CPUs, RTM) and the scale of the run.

Exit status: 0 with the figures written, or when matplotlib is missing (a
note says so: the CSV files are the results); 2 for bad input.
"""

import argparse
import csv
import math
import os
import sys
from collections import defaultdict

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter, NullLocator
except ImportError:  # pragma: no cover - exercised on machines without it
    plt = None

# one colour and marker per series name, the same in every figure
STYLE = {
    "seq": ("#000000", "o"),
    "mutex": ("#d62728", "s"),
    "mutex+elision": ("#ff7f0e", "D"),
    "mutex+preload": ("#e377c2", "v"),
    "rwlock": ("#8c564b", "P"),
    "lock": ("#d62728", "s"),
    "nocache": ("#7f7f7f", "x"),
    "socache": ("#8c564b", "P"),
    "auto": ("#1f77b4", "o"),
    "tx": ("#1f77b4", "o"),
    "htm": ("#17becf", "^"),
    "tx-htm": ("#17becf", "^"),
    "stm": ("#2ca02c", "v"),
    "tx-stm": ("#2ca02c", "v"),
    "serial": ("#7f7f7f", "<"),
    "cx": ("#9467bd", "D"),
    "tx-libitm": ("#b15928", "*"),
    "itm@libitm:ml_wt": ("#e377c2", "h"),
    "itm@libitm:gl_wt": ("#8c6d31", "p"),
    "itm@libitm:serialirr": ("#636363", "d"),
    "lock-preload": ("#ff7f0e", ">"),
}
EXTRA = ["#7570b3", "#a6761d", "#1b9e77", "#e7298a", "#66a61e", "#d95f02", "#666666", "#386cb0"]
MARKS = ["o", "s", "^", "v", "D", "P", "X", "*", "<", ">"]


def die(msg):
    print("plot.py: " + msg, file=sys.stderr)
    sys.exit(2)


def read_csv(path):
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    except OSError as e:
        die("%s: %s" % (path, e.strerror))


def num(v):
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    if n == 0:
        return None
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


class Styler:
    """Colour, marker and line style per series: a series is known by its
    method or server name (tx@txkit:stm is stm's colour, tx@libitm:X the
    libitm colour); a "(TXKIT_RTM=off)" series is its twin, dashed."""

    def __init__(self):
        self.extra = {}

    @staticmethod
    def base(name):
        b = name.split(" (")[0].split(",")[0]
        if b.startswith("tx@txkit:"):
            b = b[len("tx@txkit:"):]
        elif b in ("tx@libitm:default", "itm@libitm:default", "itm@libitm"):
            b = "tx-libitm"
        elif b.startswith("itm@txkit:"):
            b = b[len("itm@txkit:"):]
        return b

    def __call__(self, name):
        ls = "--" if "RTM=off" in name else "-"
        b = self.base(name)
        if b in STYLE:
            return STYLE[b] + (ls,)
        if b not in self.extra:
            k = len(self.extra)
            self.extra[b] = (EXTRA[k % len(EXTRA)], MARKS[(k + 3) % len(MARKS)])
        return self.extra[b] + (ls,)


def plain(v, _pos=None):
    """A tick or count label without exponents: 0.05, 2.5, 750, 5k, 1.2M."""
    if v <= 0:
        return "0"
    if v < 1000:
        return "%g" % float("%.3g" % v)
    if v < 1e6:
        return "%gk" % float("%.3g" % (v / 1e3))
    return "%gM" % float("%.3g" % (v / 1e6))


def value_axis(ax, values, axis="y", force_log=None):
    """Log scale when the positive values span more than a decade (or when
    forced); plain tick labels either way."""
    vals = [v for v in values if v is not None and v > 0]
    log = force_log if force_log is not None else (len(vals) > 1 and max(vals) / min(vals) > 10)
    setter = ax.set_yscale if axis == "y" else ax.set_xscale
    fmt_axis = ax.yaxis if axis == "y" else ax.xaxis
    if log:
        setter("log")
        fmt_axis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        fmt_axis.set_major_formatter(FuncFormatter(plain))
        fmt_axis.set_minor_formatter(NullFormatter())
    else:
        fmt_axis.set_major_formatter(FuncFormatter(plain))
        if axis == "y":
            ax.set_ylim(bottom=0)
    return log


def thread_axis(ax, threads, ncpu):
    """x: threads on a log2 axis with a tick per measured count; the band
    beyond the CPU count shaded and labelled."""
    ts = sorted(set(threads))
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(matplotlib.ticker.FixedLocator(ts))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: "%d" % v))
    ax.xaxis.set_minor_locator(NullLocator())
    lo, hi = ts[0] / 1.25, ts[-1] * 1.25
    ax.set_xlim(lo, hi)
    ax.set_xlabel("threads")
    if ncpu and ts[-1] > ncpu:
        edge = ncpu * 1.25
        ax.axvspan(edge, hi, color="#000000", alpha=0.07, lw=0)
        ax.text(math.sqrt(edge * hi), 0.01, "oversubscribed\n(> %d CPUs)" % ncpu,
                transform=ax.get_xaxis_transform(), ha="center", va="bottom", fontsize=7,
                color="#444444")


def series_lines(ax, st, name, pts, over_at=None):
    """pts: [(x, median, lo, hi)] sorted by x; lo/hi may be None. Points
    with x > over_at are drawn hollow (oversubscribed)."""
    c, m, ls = st(name)
    xs = [p[0] for p in pts]
    ys = [p[1] for p in pts]
    lo = [p[1] - p[2] if p[2] is not None else 0 for p in pts]
    hi = [p[3] - p[1] if p[3] is not None else 0 for p in pts]
    ax.errorbar(xs, ys, yerr=[lo, hi], color=c, marker=m, ms=5, lw=1.6, ls=ls, capsize=3,
                elinewidth=1, label=name)
    if over_at:
        ox = [x for x in xs if x > over_at]
        oy = [y for x, y in zip(xs, ys) if x > over_at]
        if ox:
            ax.plot(ox, oy, ls="none", marker=m, ms=5, mfc="white", mec=c, zorder=5)


def legend_outside(ax, **kw):
    """The legend right of AX, outside the data; with every series of the
    figure's panels (each label once)."""
    handles, labels, seen = [], [], set()
    for a in ax.figure.axes:
        for h, lab in zip(*a.get_legend_handles_labels()):
            if lab not in seen:
                seen.add(lab)
                handles.append(h)
                labels.append(lab)
    if handles:
        ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0),
                  borderaxespad=0.0, fontsize=8, frameon=False, **kw)


def machine_line(args, rows=()):
    if args.about:
        return args.about
    host = next((r.get("host") for r in rows if r.get("host")), None) or os.uname().nodename
    return "%s, %d CPUs" % (host, os.cpu_count() or 0)


def title(fig, what, args, rows=()):
    sub = machine_line(args, rows)
    if args.scale:
        sub += "; " + args.scale
    fig.suptitle(what + "\n" + sub, fontsize=10)


def subplots(*a, **kw):
    """plt.subplots with the layout that keeps titles, labels and the outside
    legend from overlapping."""
    return plt.subplots(*a, layout="constrained", **kw)


def save(fig, path):
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    print("plot: " + path)


def ncpu_of(rows, tkey="threads"):
    """The CPU count the run had: the largest thread count not marked
    oversubscribed, when any row is marked."""
    ok = [int(num(r[tkey])) for r in rows if r.get("oversubscribed") == "0" and num(r.get(tkey))]
    bad = [r for r in rows if r.get("oversubscribed") == "1"]
    return max(ok) if ok and bad else None


# ------------------------------------------------------------------ intset


def plot_intset(args):
    rows = []
    for p in args.inputs:
        rows += [r for r in read_csv(p) if r.get("status") == "ok"]
    if not rows:
        die("intset: no rows with status ok")
    panels = []
    for r in rows:
        key = (r["bench"], r["struct"], r["size"], r["update_pct"])
        if key not in panels:
            panels.append(key)
    fig, axes = subplots(1, len(panels), figsize=(5.2 * len(panels) + 1.5, 4.4), squeeze=False)
    st = Styler()
    ncpu = ncpu_of(rows)
    for ax, key in zip(axes[0], panels):
        sub = [r for r in rows if (r["bench"], r["struct"], r["size"], r["update_pct"]) == key]
        methods = []
        for r in sub:
            if r["method"] not in methods:
                methods.append(r["method"])
        allv = []
        for m in methods:
            pts = sorted((int(r["threads"]), num(r["mops"]), num(r["mops_min"]), num(r["mops_max"]))
                         for r in sub if r["method"] == m and num(r["mops"]) is not None)
            if pts:
                series_lines(ax, st, m, pts, ncpu)
                allv += [p[1] for p in pts]
        value_axis(ax, allv)
        thread_axis(ax, [int(r["threads"]) for r in sub], ncpu)
        b, s, n, u = key
        if b == "bank":
            what = "bank, %s accounts, %s%% transfers" % (n, u)
        elif b == "fixed":
            what = "%s, a cell per thread (no conflicts)" % s
        else:
            what = "%s, %s keys, %s%% updates" % (s, n, u)
        ax.set_title(what, fontsize=9)
        ax.set_ylabel("Mops/s (median, min/max bars)")
        ax.grid(True, which="major", alpha=0.3)
    legend_outside(axes[0][-1])
    benches = sorted(set(r["bench"] for r in rows))
    name = ("txkit-bench-fixed: a critical section's fixed cost" if benches == ["fixed"]
            else "txkit-bench-intset / -bank")
    title(fig, "%s: throughput vs threads (itm@libitm = GCC's libitm)" % name, args, rows)
    save(fig, args.out)


# ------------------------------------------------------------------ cache


def plot_cache(args):
    rows = []
    for spec in args.inputs:
        name, _, path = spec.rpartition("=")
        if not os.path.exists(path):
            continue
        for r in read_csv(path):
            if r.get("status") != "ok":
                continue
            # the auto run gives every sync; the others only their tx rows
            if name not in ("", "auto", "nortm") and r["sync"] != "tx":
                continue
            r["series"] = r["label"] + (" (TXKIT_RTM=off)" if name == "nortm" else "")
            rows.append(r)
    if not rows:
        die("cache: no rows with status ok")
    zipfs = sorted(set(r["zipf"] for r in rows), key=float)
    fig, axes = subplots(1, len(zipfs), figsize=(4.6 * len(zipfs) + 2.2, 4.4), squeeze=False)
    st = Styler()
    ncpu = ncpu_of(rows)
    order = []
    for r in rows:
        if r["series"] not in order:
            order.append(r["series"])
    allv = [num(r["mops"]) for r in rows]
    for ax, z in zip(axes[0], zipfs):
        for s in order:
            pts = sorted((int(r["threads"]), num(r["mops"]), num(r["mops_min"]), num(r["mops_max"]))
                         for r in rows if r["series"] == s and r["zipf"] == z)
            if pts:
                series_lines(ax, st, s, pts, ncpu)
        value_axis(ax, allv)
        thread_axis(ax, [int(r["threads"]) for r in rows], ncpu)
        ax.set_title("Zipf s = %s" % z, fontsize=9)
        ax.set_ylabel("Mops/s (median, min/max bars)")
        ax.grid(True, alpha=0.3)
    legend_outside(axes[0][-1])
    r0 = rows[0]
    scale = "%s pages, at most %s objects, %s s x %s runs per point" % (
        r0.get("pages"), r0.get("max_objects"), r0.get("seconds"), r0.get("runs"))
    if not args.scale:
        args.scale = scale
    title(fig, "mod_cache_tx core in process (txkit-bench-cache): lookups and inserts vs threads",
          args, rows)
    save(fig, args.out)


# ------------------------------------------------------------------ apache


def plot_apache(args):
    rows = [r for r in read_csv(args.inputs[0]) if r.get("status") == "ok"]
    if not rows:
        die("apache: no measured point (status ok) in " + args.inputs[0])
    servers, zipfs = [], sorted(set(r["zipf_s"] for r in rows), key=float)
    for r in rows:
        if r["server"] not in servers:
            servers.append(r["server"])
    pts = defaultdict(list)  # (server, s, threads) -> rows of the runs
    for r in rows:
        pts[(r["server"], r["zipf_s"], int(r["threads"]))].append(r)
    threads = sorted(set(k[2] for k in pts))
    ncpu = args.cpus or os.cpu_count()
    st = Styler()

    def stat(key, field, scale=1.0):
        v = [num(r[field]) for r in pts[key] if num(r[field]) is not None]
        if not v:
            return None
        return (key[2], median(v) * scale, min(v) * scale, max(v) * scale)

    fig, axes = subplots(2, len(zipfs), figsize=(4.3 * len(zipfs) + 2.2, 7.6), squeeze=False)
    allr = [num(r["rps"]) for r in rows]
    alll = [num(r["lat_mean_ms"]) for r in rows]
    for j, z in enumerate(zipfs):
        for i, (field, ylab, allv) in enumerate(
                (("rps", "requests/s (median, min/max bars)", allr),
                 ("lat_mean_ms", "mean latency, ms (median, min/max bars)", alll))):
            ax = axes[i][j]
            for s in servers:
                p = [stat((s, z, t), field) for t in threads if (s, z, t) in pts]
                p = [q for q in p if q]
                if p:
                    series_lines(ax, st, s, p, ncpu)
            value_axis(ax, allv)
            thread_axis(ax, threads, ncpu)
            ax.set_xlabel("server worker threads")
            ax.set_ylabel(ylab)
            ax.set_title("%s, Zipf s = %s" % ("throughput" if i == 0 else "latency", z), fontsize=9)
            ax.grid(True, alpha=0.3)
    legend_outside(axes[0][-1])
    nruns = max(len(v) for v in pts.values())
    if not args.scale:
        args.scale = "%d runs per point" % nruns
    title(fig, "Apache + man2html through each cache, Zipf-distributed requests over loopback "
          "(wrk)", args)
    save(fig, args.out)

    # aborts per million transactions, from the servers with txkit statistics
    ab = defaultdict(lambda: [0, 0])
    for r in rows:
        c, a = num(r.get("tx_commits")), num(r.get("tx_aborts"))
        if not c or a is None:  # no txkit statistics, or no transactions
            continue
        k = (r["server"], r["zipf_s"], int(r["threads"]))
        ab[k][0] += c
        ab[k][1] += a
    if not ab:
        print("plot: no txkit statistics in the CSV: no abort figure")
        return
    fig, ax = subplots(figsize=(7.8, 4.6))
    nth = -1  # the series' number: staggers its labels
    for s in servers:
        for z in zipfs:
            nth += 1
            p = sorted((k[2], 1e6 * a / c if c else 0.0, c, a)
                       for k, (c, a) in ab.items() if k[0] == s and k[1] == z)
            if not p:
                continue
            c0, m, _ls = st(s)
            ls = {0: "-", 1: "--", 2: ":"}[zipfs.index(z) % 3]
            ax.plot([q[0] for q in p], [q[1] for q in p], color=c0, marker=m, ls=ls, lw=1.6,
                    label="%s, s = %s" % (s, z))
            for x, y, c, a in p:
                ax.annotate("%d/%s" % (a, plain(c)), (x, y), textcoords="offset points",
                            xytext=(5, 2 + 8 * (nth % 6)), fontsize=6, color=c0)
    ax.set_yscale("symlog", linthresh=1.0)
    ax.yaxis.set_major_formatter(FuncFormatter(plain))
    ax.set_ylim(bottom=0)
    thread_axis(ax, threads, ncpu)
    ax.set_xlabel("server worker threads")
    ax.set_ylabel("aborts per million transactions\n(labels: aborts / transactions, all runs)")
    ax.grid(True, alpha=0.3)
    legend_outside(ax)
    title(fig, "txkit aborts in the server (txkit stat deltas over the measured seconds)", args)
    base, ext = os.path.splitext(args.out)
    save(fig, base + "-aborts" + (ext or ".png"))


# ------------------------------------------------------------------ abi


def ratio_bars(ax, groups, series, vals, st, ylabel, ref_label, log2=True):
    """Clustered bars: vals[(group, series)] = (ratio, lo, hi)."""
    n = len(series)
    w = 0.8 / max(n, 1)
    allv = []
    for k, s in enumerate(series):
        xs, ys, el, eh = [], [], [], []
        for g, grp in enumerate(groups):
            v = vals.get((grp, s))
            if not v or v[0] is None:
                continue
            xs.append(g - 0.4 + w * (k + 0.5))
            ys.append(v[0])
            el.append(v[0] - v[1] if v[1] is not None else 0)
            eh.append(v[2] - v[0] if v[2] is not None else 0)
            allv.append(v[0])
        ax.bar(xs, ys, width=w, color=st(s)[0], edgecolor="black", lw=0.5, label=s,
               yerr=[el, eh], capsize=2, error_kw={"elinewidth": 0.8})
    ax.axhline(1.0, color="black", ls="--", lw=1, label=ref_label)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=30, ha="right", fontsize=8)
    if log2 and allv:
        ax.set_yscale("log", base=2)
        lo = 2 ** math.floor(math.log2(min(min(allv), 1.0)))
        hi = 2 ** math.ceil(math.log2(max(max(allv), 1.0)) + 0.01)
        ax.set_ylim(lo / 1.1, hi * 1.1)
        ax.yaxis.set_major_formatter(FuncFormatter(
            lambda v, _p: ("%g" % v) if v >= 1 else "1/%g" % (1 / v)))
        ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_ylabel(ylabel)
    ax.grid(True, axis="y", alpha=0.3)


def plot_abi(args):
    rows = read_csv(args.inputs[0])
    if not rows:
        die("abi: empty " + args.inputs[0])
    key = "workload" if "workload" in rows[0] else "bench"
    med = {}
    for r in rows:
        v = num(r.get("mops"))
        if v is not None and r.get("status", "ok") == "ok":
            med[(r[key], r["method"], int(r["threads"]))] = (v, num(r.get("mops_min")),
                                                              num(r.get("mops_max")))
    groups, series, vals = [], [], {}
    want = ["itm@libitm:ml_wt", "itm@libitm:gl_wt", "itm@txkit:auto", "itm@txkit:stm", "auto"]
    names = {"itm@libitm:ml_wt": "libitm ml_wt", "itm@libitm:gl_wt": "libitm gl_wt",
             "itm@txkit:auto": "txkit auto (drop-in)", "itm@txkit:stm": "txkit stm (drop-in)",
             "auto": "txkit API auto"}
    for (w, m, t) in sorted(med, key=lambda k: (k[0], k[2])):
        g = "%s@%d" % (w, t)
        d = med.get((w, "itm@libitm:default", t))
        if m not in want or not d or not d[0]:
            continue
        if g not in groups:
            groups.append(g)
        v = med[(w, m, t)]
        s = names[m]
        if s not in series:
            series.append(s)
        vals[(g, s)] = (v[0] / d[0], v[1] / d[0] if v[1] else None, v[2] / d[0] if v[2] else None)
    if not vals:
        die("abi: no workload with both itm@libitm:default and another method")
    series.sort(key=lambda s: list(names.values()).index(s))
    fig, ax = subplots(figsize=(max(7, 0.9 * len(groups) + 3), 4.6))
    ratio_bars(ax, groups, series, vals, Styler(),
               "throughput / GCC's libitm default (log2; bars: min/max runs)",
               "libitm default = 1")
    legend_outside(ax)
    title(fig, "The same gcc -fgnu-tm binaries on GCC's libitm and on txkit's drop-in", args, rows)
    save(fig, args.out)


# ------------------------------------------------------------------ apps


def plot_apps(args):
    rows = read_csv(args.inputs[0])
    by = {}
    for r in rows:
        by[(r["pair"], r["app"], int(r["threads"]), r["runtime"])] = r
    groups, series, vals = [], [], {}
    for (pair, app, t, rt), r in sorted(by.items(), key=lambda kv: (kv[0][1], kv[0][2])):
        if rt != "txkit":
            continue
        li = by.get((pair, app, t, "libitm"))
        tk = num(r["rounds_per_s"])
        if not li or not tk or not num(li["rounds_per_s"]):
            continue
        lr = num(li["rounds_per_s"])
        g = "%s@%d" % (app, t)
        # one series per pair, named by the methods compared
        lm = sorted(set("%s@%s" % (x["method"], x["threads"]) for x in rows
                        if x["pair"] == pair and x["runtime"] == "libitm"),
                    key=lambda m: int(m.rpartition("@")[2]))
        if len(set(m.split("@")[0] for m in lm)) == 1:
            lm = [lm[0].split("@")[0]]
        s = "txkit %s / libitm %s" % (r["method"], ", ".join(lm))
        if g not in groups:
            groups.append(g)
        if s not in series:
            series.append(s)
        tmin, tmax = num(r["min"]), num(r["max"])
        vals[(g, s)] = (lr / tk, lr / tmax if tmax else None, lr / tmin if tmin else None)
    if not vals:
        die("apps: no application with rates for both runtimes")
    fig, ax = subplots(figsize=(max(7, 0.8 * len(groups) + 3), 4.6))
    ratio_bars(ax, groups, series, vals, Styler(),
               "time per round, txkit / GCC's libitm\n(log2; < 1: txkit faster; bars: txkit min/max)",
               "equal time")
    legend_outside(ax)
    title(fig, "Application corpus (tests/apps), the same -fgnu-tm binary on both runtimes",
          args, rows)
    save(fig, args.out)


# ------------------------------------------------------------------ cx


def plot_cx(args):
    rows = [r for r in read_csv(args.inputs[0]) if r.get("status") == "ok"]
    if not rows:
        die("cx: no rows with status ok")
    works = [w for w in ("hash", "counter") if any(r["workload"] == w for r in rows)]
    ios = sorted(set(int(r["io_pct"]) for r in rows if r["workload"] == "hash"))
    npanel = len(works) + (1 if len(ios) > 1 else 0)
    fig, axes = subplots(1, npanel, figsize=(4.6 * npanel + 2, 4.4), squeeze=False)
    st = Styler()
    ncpu = ncpu_of(rows)
    locks = []
    for r in rows:
        if r["lock"] not in locks:
            locks.append(r["lock"])
    for ax, w in zip(axes[0], works):
        sub = [r for r in rows if r["workload"] == w and r["io_pct"] == "0"]
        allv = []
        for lk in locks:
            p = sorted((int(r["threads"]), num(r["mops"]), num(r["mops_min"]), num(r["mops_max"]))
                       for r in sub if r["lock"] == lk)
            if p:
                series_lines(ax, st, lk, p, ncpu)
                allv += [q[1] for q in p]
        value_axis(ax, allv)
        thread_axis(ax, [int(r["threads"]) for r in sub], ncpu)
        ax.set_title({"hash": "hash set, 1024 buckets, 10% updates",
                      "counter": "one shared counter"}[w], fontsize=9)
        ax.set_ylabel("Mops/s (median, min/max bars)")
        ax.grid(True, alpha=0.3)
    if len(ios) > 1:
        ax = axes[0][-1]
        t2 = 2 if any(r["threads"] == "2" for r in rows) else int(rows[0]["threads"])
        allv = []
        for lk in locks:
            p = sorted((int(r["io_pct"]), num(r["mops"]), num(r["mops_min"]), num(r["mops_max"]))
                       for r in rows if r["workload"] == "hash" and r["lock"] == lk
                       and int(r["threads"]) == t2)
            if p:
                c, m, _ls = st(lk)
                ax.errorbar([q[0] for q in p], [q[1] for q in p],
                            yerr=[[q[1] - (q[2] or q[1]) for q in p],
                                  [(q[3] or q[1]) - q[1] for q in p]],
                            color=c, marker=m, capsize=3, lw=1.6, label=lk)
                allv += [q[1] for q in p]
        ax.set_xscale("symlog", linthresh=1)
        ax.xaxis.set_major_locator(matplotlib.ticker.FixedLocator(ios))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: "%d%%" % v))
        ax.xaxis.set_minor_locator(NullLocator())
        value_axis(ax, allv)
        ax.set_xlabel("sections doing I/O (write(2)), %")
        ax.set_ylabel("Mops/s (median, min/max bars)")
        ax.set_title("hash set, %d threads, I/O inside the section" % t2, fontsize=9)
        ax.grid(True, alpha=0.3)
    legend_outside(axes[0][-1])
    rtm = rows[0].get("rtm", "?")
    if not args.about:
        args.about = machine_line(args, rows) + ", RTM " + rtm
    title(fig, "cx locks against pthread mutexes (plain, glibc elision, txkit preload)", args, rows)
    save(fig, args.out)


# ------------------------------------------------------------------ cm


def plot_cm(args):
    d = args.inputs[0]
    base = args.out if args.out else d
    inv = os.path.join(d, "inversion.csv")
    hot = os.path.join(d, "hotcounter.csv")
    pipe = os.path.join(d, "pipeline.csv")
    st = Styler()
    cms = ["backoff", "timestamp", "size", "prio"]
    if os.path.exists(inv):
        rows = read_csv(inv)
        fig, axes = subplots(1, 2, figsize=(11.5, 4.4))
        for cm in cms:
            sub = sorted(((int(r["threads"]), r) for r in rows if r["cm"] == cm), key=lambda p: p[0])
            if not sub:
                continue
            c, m, _ls = st(cm)
            axes[0].plot([t for t, _ in sub], [num(r["oracle_inv_pct"]) for _, r in sub], color=c,
                         marker=m, lw=1.6, label=cm)
            axes[1].plot([t for t, _ in sub], [num(r["mtx_per_s"]) for _, r in sub], color=c,
                         marker=m, lw=1.6, label=cm)
        ts = [int(r["threads"]) for r in rows]
        for ax in axes:
            thread_axis(ax, ts, os.cpu_count())
            ax.grid(True, alpha=0.3)
        axes[0].set_ylabel("inversions / cross-priority conflicts, % (oracle)")
        axes[0].set_ylim(bottom=0)
        axes[1].set_ylabel("throughput, Mtx/s (median)")
        value_axis(axes[1], [num(r["mtx_per_s"]) for r in rows])
        legend_outside(axes[1])
        title(fig, "inversion: threads at nice 0/5/10/15, per contention manager (stm)", args, rows)
        save(fig, os.path.join(base, "inversion.png"))
    if os.path.exists(hot):
        rows = read_csv(hot)
        fig, axes = subplots(1, 3, figsize=(15, 4.4))
        for cm in cms:
            for sch in ("off", "on"):
                sub = sorted(((int(r["threads"]), r) for r in rows
                              if r["cm"] == cm and r["sched"] == sch), key=lambda p: p[0])
                if not sub:
                    continue
                c, m, _ls = st(cm)
                ls = "-" if sch == "off" else "--"
                lab = "%s, sched %s" % (cm, sch)
                xs = [t for t, _ in sub]
                axes[0].plot(xs, [num(r["p99_ns"]) / 1e3 for _, r in sub], color=c, marker=m, ls=ls,
                             label=lab)
                axes[1].plot(xs, [num(r["min_max_ratio"]) for _, r in sub], color=c, marker=m,
                             ls=ls, label=lab)
                axes[2].plot(xs, [num(r["max_ns"]) / 1e6 for _, r in sub], color=c, marker=m,
                             ls=ls, label=lab)
        ts = [int(r["threads"]) for r in rows]
        for ax in axes:
            thread_axis(ax, ts, os.cpu_count())
            ax.grid(True, alpha=0.3)
        axes[0].set_ylabel("p99 latency, us")
        value_axis(axes[0], [num(r["p99_ns"]) / 1e3 for r in rows])
        axes[1].set_ylabel("commits, fewest / most over threads")
        axes[1].set_ylim(0, 1.05)
        axes[2].set_ylabel("max latency, ms (includes preemption)")
        value_axis(axes[2], [num(r["max_ns"]) / 1e6 for r in rows])
        legend_outside(axes[2])
        title(fig, "hot counter: one word, every thread (stm)", args, rows)
        save(fig, os.path.join(base, "hotcounter.png"))
    if os.path.exists(pipe):
        rows = read_csv(pipe)
        groups = []
        for r in rows:
            if r["cm"] not in groups:
                groups.append(r["cm"])
        fig, axes = subplots(1, 2, figsize=(11.5, 4.2))
        for ax, field, lab in ((axes[0], "secs", "execution time, s (median)"),
                               (axes[1], "restarts", "restarts (aborted attempts)")):
            for k, sch in enumerate(("off", "on")):
                xs, ys = [], []
                for g, cm in enumerate(groups):
                    r = next((r for r in rows if r["cm"] == cm and r["sched"] == sch), None)
                    if r and num(r[field]) is not None:
                        xs.append(g - 0.2 + 0.4 * k)
                        ys.append(num(r[field]))
                ax.bar(xs, ys, width=0.4, color=("#1f77b4", "#ff7f0e")[k], edgecolor="black",
                       lw=0.5, label="sched " + sch)
            ax.set_xticks(range(len(groups)))
            ax.set_xticklabels(groups)
            ax.set_ylabel(lab)
            ax.grid(True, axis="y", alpha=0.3)
        legend_outside(axes[1])
        t = rows[0].get("threads", "?") if rows else "?"
        title(fig, "pipeline: %s threads (%s), 8 phases (stm)" % (t, "oversubscribed"
              if (num(t) or 0) > (os.cpu_count() or 1) else "not oversubscribed"), args, rows)
        save(fig, os.path.join(base, "pipeline.png"))


# ------------------------------------------------------------------ locks


def plot_locks(args):
    rows = read_csv(args.inputs[0])
    if not rows:
        die("locks: no lock rows in " + args.inputs[0])
    progs = []
    for r in rows:
        if r["program"] not in progs:
            progs.append(r["program"])
    # (a) time lost per program: the process of the program that lost most
    lost = {}
    for p in progs:
        per_pid = defaultdict(float)
        for r in rows:
            if r["program"] == p:
                per_pid[r["pid"]] += num(r["lost_pct"]) or 0.0
        lost[p] = max(per_pid.values()) if per_pid else 0.0
    # the top locks: the 3 first ranks of each program's busiest process
    top = []
    for p in progs:
        sub = [r for r in rows if r["program"] == p]
        acq = defaultdict(float)
        for r in sub:
            acq[r["pid"]] += num(r["acquired"]) or 0
        pid = max(acq, key=acq.get)
        best = sorted((r for r in sub if r["pid"] == pid), key=lambda r: int(r["rank"]))[:3]
        top += best
    rtm = any(r.get("rtm") == "1" for r in rows)
    fig, axes = subplots(1, 4, figsize=(19, 5.2), gridspec_kw={"width_ratios": [1, 2.2, 1.6, 1.6]})
    ax = axes[0]
    ax.bar(range(len(progs)), [lost[p] for p in progs], color="#d62728", edgecolor="black", lw=0.5)
    for i, p in enumerate(progs):
        ax.annotate("%.2f%%" % lost[p], (i, lost[p]), textcoords="offset points", xytext=(0, 2),
                    ha="center", fontsize=7)
    ax.set_xticks(range(len(progs)))
    ax.set_xticklabels(progs, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("time waiting for locks, % of thread time")
    ax.set_title("(a) time lost to synchronization\n(cf. TxLinux Fig. 4)", fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    labels = ["%s: %s\n%s" % (r["program"], r.get("lock_name") or r["kind"], r["top_site"][:28])
              for r in top]
    x = range(len(top))
    ax = axes[1]
    ax.bar([i - 0.2 for i in x], [num(r["acquired"]) or 0 for r in top], width=0.4,
           color="#1f77b4", edgecolor="black", lw=0.5, label="acquisitions")
    ax.bar([i + 0.2 for i in x], [max(num(r["contended"]) or 0, 0) for r in top], width=0.4,
           color="#ff7f0e", edgecolor="black", lw=0.5, label="contended")
    ax.set_yscale("symlog", linthresh=1)
    ax.yaxis.set_major_formatter(FuncFormatter(plain))
    ax.set_ylim(bottom=0)
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels, rotation=60, ha="right", fontsize=6)
    ax.set_ylabel("count (log)")
    ax.set_title("(b) acquisitions and contended acquisitions,\ntop 3 locks per program "
                 "(cf. TxLinux Table 6)", fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7, loc="upper right")
    ax = axes[2]
    inside = rtm and any(num(r.get("max_inside")) for r in top)
    wd = 0.4 if inside else 0.8
    ax.bar([i - (0.2 if inside else 0) for i in x], [num(r["max_waiting"]) or 0 for r in top],
           width=wd, color="#9467bd", edgecolor="black", lw=0.5, label="waiting for it")
    if inside:
        ax.bar([i + 0.2 for i in x], [num(r.get("max_inside")) or 0 for r in top], width=wd,
               color="#17becf", edgecolor="black", lw=0.5, label="inside its sections (elided)")
        ax.legend(fontsize=7, loc="upper right")
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels, rotation=60, ha="right", fontsize=6)
    ax.set_ylabel("threads at once (max)")
    ax.set_title("(c) most threads at once: waiting%s\n(cf. TxLinux Fig. 5)"
                 % (", and inside (RTM)" if inside else ""), fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    ax = axes[3]
    excl = [100.0 * (1 - (num(r["elided"]) or 0) / (num(r["acquired"]) or 1)) for r in top]
    ax.bar(list(x), excl, color="#7f7f7f", edgecolor="black", lw=0.5)
    ax.set_ylim(0, 105)
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels, rotation=60, ha="right", fontsize=6)
    ax.set_ylabel("sections run holding the lock, %")
    ax.set_title("(d) exclusive share (100%% - elided)%s\n(cf. TxLinux Fig. 6)"
                 % ("" if rtm else ": no RTM, all"), fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    title(fig, "Locks of unmodified Debian programs under txkit run --report", args, rows)
    save(fig, args.out)


KINDS = {"locks": plot_locks, "intset": plot_intset, "cache": plot_cache, "apache": plot_apache, "abi": plot_abi,
         "apps": plot_apps, "cx": plot_cx, "cm": plot_cm}


def main(argv):
    ap = argparse.ArgumentParser(prog="plot.py", description="txkit benchmark figures from CSV")
    ap.add_argument("kind", choices=sorted(KINDS))
    ap.add_argument("inputs", nargs="+", help="CSV files (cache: NAME=CSV; cm: a directory)")
    ap.add_argument("--out", help="the PNG to write (cm: the directory)")
    ap.add_argument("--about", help="the machine line of the title (default: host, CPUs)")
    ap.add_argument("--scale", help="the scale of the run, for the title")
    ap.add_argument("--cpus", type=int, help="CPUs of the measured machine (oversubscription)")
    args = ap.parse_args(argv)
    if plt is None:
        print("plot: matplotlib is not installed: no PNG (apt-get install python3-matplotlib); "
              "the CSV files are the results")
        return 0
    if not args.out and args.kind != "cm":
        args.out = os.path.splitext(args.inputs[-1].rpartition("=")[2])[0] + ".png"
    try:
        KINDS[args.kind](args)
    except KeyError as e:
        die("%s: no column %s: not a CSV of this kind (see --help)" % (args.kind, e))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
