#!/usr/bin/python3
"""summarize.py - medians of bench/compare.sh runs as a Markdown report.

    summarize.py [--nodes N] [--passes N] --md OUT.md [--chart OUT.svg] RUNS.jsonl

RUNS.jsonl holds one benchmark JSON line per run, each with "impl" (zkl,
zkl-prefetch, curator, kazoo), "case" and "pass" added by compare.sh. For
every (case, impl) the median over the passes of each number is taken; the
report gives throughput side by side with the ratios zkl/Curator and
zkl/kazoo, latencies, requests per operation, memory, the herd's wake-ups
per handoff, and whether each target is met. The chart (gnuplot, SVG) is the
contended throughput against the number of clients.
"""

import argparse
import collections
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile

IMPLS = ["zkl", "zkl-prefetch", "curator", "kazoo"]
LABEL = {"zkl": "zkl", "zkl-prefetch": "zkl prefetch", "curator": "Curator 5.4",
         "kazoo": "kazoo 2.8", "zkl-async": "zkl async", "protocol": "protocol on the bare client"}
MAIN_CASES = ["uncontended", "contended-8", "contended-32", "many"]
POINTS = [1, 2, 4, 8, 16, 32]


def load(path):
    runs = collections.defaultdict(list)
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                d = json.loads(line)
                runs[(d["case"], d["impl"])].append(d)
    return runs


class Medians:
    def __init__(self, runs):
        self.runs = runs

    def get(self, case, impl, key):
        vals = [r[key] for r in self.runs.get((case, impl), [])
                if isinstance(r.get(key), (int, float)) and not isinstance(r.get(key), bool)]
        return statistics.median(vals) if vals else None

    def count(self, case, impl):
        return len(self.runs.get((case, impl), []))

    def ratio(self, case, a, b, key="ops_per_sec", case_b=None):
        x, y = self.get(case, a, key), self.get(case_b or case, b, key)
        if x is None or not y:
            return None
        return x / y

    def paired(self, case, a, b, key="ops_per_sec"):
        """The median over the passes of a's figure over b's in that pass."""
        by = {}
        for impl in (a, b):
            for r in self.runs.get((case, impl), []):
                by.setdefault(r["pass"], {})[impl] = r.get(key)
        rs = [d[a] / d[b] for d in by.values() if d.get(a) and d.get(b)]
        return statistics.median(rs) if rs else None


def fmt(v, digits=0, suffix=""):
    if v is None:
        return "–"
    if digits == 0:
        return "%d%s" % (round(v), suffix)
    return "%.*f%s" % (digits, v, suffix)


def fmt_ratio(v):
    return "–" if v is None else "%.2f×" % v


def verdict(ok):
    return "–" if ok is None else ("met" if ok else "**missed**")


def check(value, test):
    return None if value is None else test(value)


def report(m, args):
    out = []
    w = out.append
    git = ""
    try:
        git = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)),
                              "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    w("# zkl beside Curator and kazoo")
    w("")
    w("Medians of %d pass(es), implementations in rotated order; ZooKeeper 3.8 %s on "
      "127.0.0.1, warmed up first; %s, %d cores; %s%s." % (
          args.passes, "standalone" if args.nodes == 1 else "%d-node ensemble" % args.nodes,
          platform.machine(), os.cpu_count() or 0,
          datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
          ", commit " + git if git else ""))
    w("Produced by `bench/compare.sh` (`make bench`); every number comes from "
      "`tools/zkl-bench`, `bench/run-curator.sh` and `bench/kazoo_bench.py` run with "
      "the same command line. ops/s is acquisitions (uncontended: acquire+release "
      "cycles) per second; requests/op is the server's zk_packets_received per op.")
    w("")

    # ---- throughput
    w("## Throughput (ops/s, higher is better)")
    w("")
    w("| case | zkl | zkl prefetch | Curator | kazoo | zkl/Curator | zkl prefetch/Curator | zkl/kazoo |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|")
    for case in MAIN_CASES + ["floor"]:
        if not any(m.count(case, i) for i in IMPLS):
            continue
        w("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            case, fmt(m.get(case, "zkl", "ops_per_sec")),
            fmt(m.get(case, "zkl-prefetch", "ops_per_sec")),
            fmt(m.get(case, "curator", "ops_per_sec")),
            fmt(m.get(case, "kazoo", "ops_per_sec")),
            fmt_ratio(m.ratio(case, "zkl", "curator")),
            fmt_ratio(m.ratio(case, "zkl-prefetch", "curator")),
            fmt_ratio(m.ratio(case, "zkl", "kazoo"))))
    unc_floor = m.ratio("uncontended", "zkl", "zkl", case_b="floor")
    w("")
    w("floor = a bare zoo_acreate + zoo_adelete cycle with the ZooKeeper C client "
      "(asynchronous, each reply waited for): the two writes every cycle needs. "
      "zkl uncontended / floor: %s." % fmt_ratio(unc_floor))
    w("")

    # ---- the chain floor
    if any(m.count("chain-%d" % n, "zkl") for n in (8, 32)):
        w("## Share of the chain floor (the headline)")
        w("")
        w("chain = the ideal contended lock on the bare ZooKeeper C client, measured in "
          "the same run: each contender creates `lock-<seq>`, waits with a data watch on "
          "`lock-<seq-1>` (no listing) and deletes its node; 3 requests and 2 writes per "
          "acquisition. A handoff chain cannot run faster on this server.")
        w("")
        w("| case | chain ops/s | protocol | zkl | zkl prefetch | Curator | kazoo |")
        w("|---|---:|---:|---:|---:|---:|---:|")
        for n in (8, 32):
            case, chain = "contended-%d" % n, "chain-%d" % n
            w("| %s | %s | %s | %s |" % (
                case, fmt(m.get(chain, "zkl", "ops_per_sec")),
                fmt_ratio(m.ratio("versus-%d" % n, "protocol", "zkl", case_b=chain)),
                " | ".join(fmt_ratio(m.ratio(case, i, "zkl", case_b=chain))
                           for i in ("zkl", "zkl-prefetch", "curator", "kazoo"))))
        w("")
        w("protocol: zkl's own requests (Curator's names, the listing, the "
          "watch on the own node and on the one ahead) written directly on the bare client; "
          "its share of the chain is what the protocol costs, zkl's share of it (below) "
          "what the library costs.")
        w("")

    # ---- the library against its protocol
    if any(m.count("versus-%d" % n, "protocol") for n in (8, 32)):
        w("## What the library costs over its protocol")
        w("")
        w("zkl's contended mutex and the same protocol on the bare ZooKeeper C client "
          "(`zkl-bench --workload protocol`), run in back-to-back pairs that alternate "
          "which goes first, medians over the pairs.")
        w("")
        w("| clients | protocol ops/s | zkl ops/s | zkl / protocol (medians) | zkl / protocol "
          "(median of the pairs) | handoff µs protocol / zkl | requests/op protocol / zkl |")
        w("|---:|---:|---:|---:|---:|---:|---:|")
        for n in (8, 32):
            c = "versus-%d" % n
            w("| %d | %s | %s | %s | %s | %s / %s | %s / %s |" % (
                n, fmt(m.get(c, "protocol", "ops_per_sec")), fmt(m.get(c, "zkl", "ops_per_sec")),
                fmt_ratio(m.ratio(c, "zkl", "protocol")), fmt_ratio(m.paired(c, "zkl", "protocol")),
                fmt(m.get(c, "protocol", "handoff_us")), fmt(m.get(c, "zkl", "handoff_us")),
                fmt(m.get(c, "protocol", "zk_requests_per_op"), 2),
                fmt(m.get(c, "zkl", "zk_requests_per_op"), 2)))
        w("")

    # ---- where a handoff's time goes
    if any(m.get("chain-%d" % n, "zkl", "handoff_us") is not None for n in (8, 32)):
        w("## Handoff timeline (µs, means over a run)")
        w("")
        w("handoff = from a holder calling release to the next one holding; release = "
          "the release call (the delete's round trip); hold = from holding to calling "
          "release (the benchmark's own work). One turn of the lock is handoff + hold.")
        w("")
        w("| case | impl | handoff | release | hold | handoff − chain's |")
        w("|---|---|---:|---:|---:|---:|")
        for n in (8, 32):
            chain = m.get("chain-%d" % n, "zkl", "handoff_us")
            for label, case, impl in (("chain", "chain-%d" % n, "zkl"),
                                      ("protocol", "versus-%d" % n, "protocol"),
                                      ("zkl", "contended-%d" % n, "zkl"),
                                      ("zkl prefetch", "contended-%d" % n, "zkl-prefetch")):
                h = m.get(case, impl, "handoff_us")
                if h is None:
                    continue
                w("| %d clients | %s | %s | %s | %s | %s |" % (
                    n, label, fmt(h), fmt(m.get(case, impl, "release_us")),
                    fmt(m.get(case, impl, "hold_us")),
                    "–" if chain is None or label == "chain" else "%+.0f" % (h - chain)))
        w("")

    # ---- latency and requests
    w("## Latency (µs, p50 / p99) and server requests per op")
    w("")
    w("| case | zkl | zkl prefetch | Curator | kazoo | requests/op zkl / prefetch / Curator / kazoo | writes/op zkl |")
    w("|---|---:|---:|---:|---:|---:|---:|")

    def lat(case, impl):
        p50, p99 = m.get(case, impl, "p50_us"), m.get(case, impl, "p99_us")
        return "–" if p50 is None else "%d / %d" % (p50, p99)

    for case in MAIN_CASES + ["floor"]:
        if not any(m.count(case, i) for i in IMPLS):
            continue
        req = " / ".join(fmt(m.get(case, i, "zk_requests_per_op"), 2) for i in IMPLS)
        w("| %s | %s | %s | %s | %s | %s | %s |" % (
            case, lat(case, "zkl"), lat(case, "zkl-prefetch"), lat(case, "curator"),
            lat(case, "kazoo"), req, fmt(m.get(case, "zkl", "zk_writes_per_op"), 2)))
    w("")
    w("Latency: uncontended = one acquire+release cycle; contended = from calling "
      "acquire to holding; many = one acquire. In many, every implementation makes "
      "the lock paths before the timed part, so all of them time the same work: "
      "the acquires and releases.")
    w("")

    # ---- herd
    if any(m.count("herd-100", i) for i in IMPLS):
        w("## Herd: 100 waiters on one lock")
        w("")
        w("| | wake-ups per handoff | handoffs/s | handoff p50 / p99 µs | requests/op |")
        w("|---|---:|---:|---:|---:|")
        for i in IMPLS:
            if m.count("herd-100", i):
                w("| %s | %s | %s | %s | %s |" % (
                    LABEL[i], fmt(m.get("herd-100", i, "wakeups_per_handoff"), 3),
                    fmt(m.get("herd-100", i, "ops_per_sec")), lat("herd-100", i),
                    fmt(m.get("herd-100", i, "zk_requests_per_op"), 2)))
        w("")
        w("zkl counts the watch events that reached a waiting contender; Curator and "
          "kazoo count the listings after the first one of each acquisition.")
        w("")

    # ---- long queues
    qs = sorted({int(c.split("-")[1]) for (c, i) in m.runs if c.startswith("queue-")})
    if qs:
        w("## Long queues: N waiters on one lock, 16 sessions")
        w("")
        w("Handoffs per second once every waiter joined, and the time to join per waiter "
          "(µs); \"failed\" where the implementation could not serve that length.")
        w("")
        w("| waiters | zkl handoffs/s | zkl async | Curator | kazoo | zkl join µs | Curator | "
          "kazoo | zkl wake-ups/handoff | zkl heap per waiter (B) | zkl async | one listing "
          "(bytes) |")
        w("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        ran = {i for (c, i) in m.runs if c.startswith("queue-")}

        def q(n, i, key, digits=0):
            c = "queue-%d" % n
            if not m.count(c, i):
                return "failed" if i in ran and any(
                    m.count("queue-%d" % k, i) for k in qs if k < n) else "–"
            return fmt(m.get(c, i, key), digits)

        for n in qs:
            w("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                n, q(n, "zkl", "ops_per_sec"), q(n, "zkl-async", "ops_per_sec"),
                q(n, "curator", "ops_per_sec"),
                q(n, "kazoo", "ops_per_sec"), q(n, "zkl", "join_us_per_waiter"),
                q(n, "curator", "join_us_per_waiter"), q(n, "kazoo", "join_us_per_waiter"),
                q(n, "zkl", "wakeups_per_handoff", 3), q(n, "zkl", "bytes_per_waiter"),
                q(n, "zkl-async", "bytes_per_waiter"), q(n, "zkl", "listing_bytes")))
        w("")
        w("zkl runs its waiters as threads, as Curator and kazoo do, and as asynchronous "
          "requests (zkl async: no thread per waiter). Heap per waiter: zkl's heap in use "
          "while the queue stands, per waiting contender beyond each session's first (what "
          "a lock path costs a session once is not the waiters'), counted at malloc and "
          "free: with threads, each waiter's own mutex object is in it, thread stacks "
          "not; async, only the request and its node.")
        w("")
        w("Every handoff deep in a queue costs one listing of the whole queue (the last "
          "column, served by the server and parsed by the client each time): the waiter "
          "whose predecessor vanished cannot tell a release from a waiter that gave up "
          "(Curator's, say, which leaves no trace) without learning that every older node "
          "is gone. Curator and kazoo list on every wake-up too.")
        w("")

    # ---- memory
    w("## Memory")
    w("")
    w("| | bytes per held lock (many, %s locks) | peak RSS, contended-32 (KiB) |" % fmt(
        m.get("many", "zkl", "ops")))
    w("|---|---:|---:|")
    for i in ["zkl", "curator", "kazoo"]:
        if m.count("many", i) or m.count("contended-32", i):
            w("| %s | %s | %s |" % (LABEL[i], fmt(m.get("many", i, "bytes_per_lock")),
                                   fmt(m.get("contended-32", i, "peak_rss_kb"))))
    big = m.get("many-10000", "zkl", "bytes_per_lock")
    big_rss = m.get("many-10000", "zkl", "rss_bytes_per_lock")
    w("")
    w("zkl with 10,000 locks held by one client: %s bytes per lock in use on the heap "
      "(mutex objects included), %s bytes per lock of RSS growth. zkl: heap in use "
      "(live chunks, counted at malloc and free, so glibc's per-thread caches of "
      "freed chunks are not counted); Curator: JVM heap after GC; kazoo: RSS "
      "growth." % (
          fmt(big), fmt(big_rss)))
    w("")
    scale = [(c, m.get(c, "zkl", "ops")) for c in ("many-10000", "many-100000")
             if m.count(c, "zkl")]
    if m.count("many-100000", "zkl") or m.count("sessions-500", "zkl"):
        w("### Scale")
        w("")
        w("| zkl | count | acquires/s | p50 (us) | first tenth p50 (us) | last tenth p50 (us) "
          "| heap per item (B) | RSS per item (B) |")
        w("|---|---:|---:|---:|---:|---:|---:|---:|")
        for c, n in scale:
            w("| locks held by one client | %s | %s | %s | %s | %s | %s | %s |" % (
                fmt(n), fmt(m.get(c, "zkl", "ops_per_sec")), fmt(m.get(c, "zkl", "p50_us")),
                fmt(m.get(c, "zkl", "first_tenth_p50_us")),
                fmt(m.get(c, "zkl", "last_tenth_p50_us")),
                fmt(m.get(c, "zkl", "bytes_per_lock")),
                fmt(m.get(c, "zkl", "rss_bytes_per_lock"))))
        if m.count("sessions-500", "zkl"):
            c = "sessions-500"
            w("| sessions in one process | %s | %s | %s | %s | %s | %s | %s |" % (
                fmt(m.get(c, "zkl", "ops")), fmt(m.get(c, "zkl", "ops_per_sec")),
                fmt(m.get(c, "zkl", "p50_us")), fmt(m.get(c, "zkl", "first_tenth_p50_us")),
                fmt(m.get(c, "zkl", "last_tenth_p50_us")),
                fmt(m.get(c, "zkl", "bytes_per_session")),
                fmt(m.get(c, "zkl", "rss_bytes_per_session"))))
            w("")
            w("Opening 500 sessions took %s s; %s threads per session (the ZooKeeper "
              "client's two and zkl's keeper)." % (fmt(m.get(c, "zkl", "open_seconds")),
                                                   fmt(m.get(c, "zkl", "threads_per_session"))))
        w("")
        w("First and last tenth: the median acquire latency with few and with almost all "
          "of the locks (sessions) already held; equal medians mean an acquire costs the same "
          "whatever is held.")
        w("")

    # ---- targets
    w("## Targets")
    w("")
    if args.nodes != 1:
        w("The targets are set for a standalone server; on %d nodes, which here share the "
          "same 2 cores, they are shown for information only." % args.nodes)
        w("")
    w("| target | measured | |")
    w("|---|---|---|")

    def row(name, shown, ok):
        w("| %s | %s | %s |" % (name, shown, verdict(ok)))

    for n in (8, 32):
        case = "contended-%d" % n
        r = m.ratio(case, "zkl", "curator")
        row("contended %d: zkl ≥ 1.3× Curator" % n, fmt_ratio(r), check(r, lambda v: v >= 1.3))
        # 5 (create, listing, predecessor watch, listing when it goes,
        # delete), and the watch on the own node that a lock deleted by
        # someone else needs (PITFALLS: a handoff trusted without one's own
        # node); prefetch adds the listing when the node two ahead goes.
        q = m.get(case, "zkl", "zk_requests_per_op")
        row("contended %d: ≤ 6 requests per acquisition (5 and the own-node watch)" % n,
            fmt(q, 2), check(q, lambda v: v <= 6.0 + 0.05))
        r = m.ratio(case, "zkl-prefetch", "curator")
        row("contended %d prefetch: ≥ 1.6× Curator" % n, fmt_ratio(r), check(r, lambda v: v >= 1.6))
        q = m.get(case, "zkl-prefetch", "zk_requests_per_op")
        row("contended %d prefetch: ≤ 7 requests per acquisition (6 and the own-node watch)" % n,
            fmt(q, 2), check(q, lambda v: v <= 7.0 + 0.05))
    h = m.get("herd-100", "zkl", "wakeups_per_handoff")
    row("herd 100: wake-ups per handoff ≤ 1.05", fmt(h, 3), check(h, lambda v: v <= 1.05))
    h = m.get("herd-100", "zkl-prefetch", "wakeups_per_handoff")
    row("herd 100 prefetch: wake-ups per handoff ≤ 2", fmt(h, 3), check(h, lambda v: v <= 2.0))
    r = m.ratio("uncontended", "zkl", "curator")
    row("uncontended: zkl ≥ 1.05× Curator", fmt_ratio(r), check(r, lambda v: v >= 1.05))
    row("uncontended: zkl ≥ 0.95× floor", fmt_ratio(unc_floor), check(unc_floor, lambda v: v >= 0.95))
    r = m.ratio("many", "zkl", "curator")
    row("many: zkl ≥ 1.3× Curator", fmt_ratio(r), check(r, lambda v: v >= 1.3))
    writes = [m.get(c, i, "zk_writes_per_op") for c in ("uncontended", "contended-8", "contended-32")
              for i in ("zkl", "zkl-prefetch")]
    writes = [x for x in writes if x is not None]
    if writes:
        row("2 writes per acquisition (uncontended, contended 8 and 32)",
            "%.3f – %.3f" % (min(writes), max(writes)),
            all(abs(x - 2.0) <= 0.01 for x in writes))
    mw = m.get("many", "zkl", "zk_writes_per_op")
    if mw is not None:
        w("| (many: writes per acquisition, the lock path's own creation included) | %s | |" % fmt(mw, 2))
    row("10,000 locks held: < 1 KiB per lock", fmt(big, 0, " B"), check(big, lambda v: v < 1024))
    for n in (8, 32):
        for i, goal in (("zkl", 0.8), ("zkl-prefetch", 0.9)):
            r = m.ratio("contended-%d" % n, i, "zkl", case_b="chain-%d" % n)
            if r is not None:
                row("contended %d %s: ≥ %.1f× the chain floor" % (n, LABEL[i], goal), fmt_ratio(r),
                    check(r, lambda v, g=goal: v >= g))
    for n in (8, 32):
        r = m.ratio("versus-%d" % n, "zkl", "protocol")
        if r is not None:
            row("contended %d: zkl ≥ 0.95× its protocol on the bare client (alternating pairs)" % n,
                "%s (pairs: %s)" % (fmt_ratio(r), fmt_ratio(m.paired("versus-%d" % n, "zkl", "protocol"))),
                check(r, lambda v: v >= 0.95))
    qs = sorted({int(c.split("-")[1]) for (c, i) in m.runs if c.startswith("queue-")})
    if len(qs) > 1:
        for i in ("zkl", "zkl-async"):
            lo = m.get("queue-%d" % qs[0], i, "ops_per_sec")
            hi = m.get("queue-%d" % qs[-1], i, "ops_per_sec")
            r = hi / lo if lo and hi else None
            row("queue of %d, %s: ≥ 0.8× the handoffs/s at %d" % (qs[-1], LABEL[i], qs[0]),
                fmt_ratio(r), check(r, lambda v: v >= 0.8))
        per = [(n, m.get("queue-%d" % n, "zkl-async", "bytes_per_waiter")) for n in qs]
        per = [(n, v) for n, v in per if v is not None]
        if per:
            row("queue, zkl async: < 2 KiB per waiting contender",
                ", ".join("%s B at %d" % (fmt(v), n) for n, v in per),
                all(v < 2048 for n, v in per))
    for c in ("metrics-uncontended", "metrics-contended-8"):
        r = m.get(c, "zkl", "paired_throughput_ratio_median")
        cpu = m.get(c, "zkl", "cpu_ratio_on_off")
        if r is None:
            continue
        shown = "%.2f%% (throughput on/off %.4f; client CPU per op on/off %s)" % (
            (1 - r) * 100, r, fmt(cpu, 4))
        row("%s: collecting metrics costs < 2%%" % c.replace("metrics-", ""), shown,
            check(r, lambda v: v >= 0.98))
    w("")
    w("Ratios compare medians of the same run on the same server. The machine is shared "
      "and small (2 cores run the server and the clients), so single runs vary by "
      "10–30%; read the ratios, not the absolute numbers.")
    w("")
    return "\n".join(out)


def chart(m, path):
    gnuplot = shutil.which("gnuplot")
    if gnuplot is None:
        print("summarize.py: no gnuplot, no chart", file=sys.stderr)
        return
    series = []
    for i in IMPLS:
        pts = [(n, m.get("contended-%d" % n, i, "ops_per_sec")) for n in POINTS]
        pts = [(n, v) for n, v in pts if v is not None]
        if pts:
            series.append((i, pts))
    if not series:
        return
    with tempfile.TemporaryDirectory() as tmp:
        plots = []
        for i, pts in series:
            dat = os.path.join(tmp, i + ".dat")
            with open(dat, "w") as f:
                for n, v in pts:
                    f.write("%d %f\n" % (n, v))
            plots.append("'%s' using 1:2 with linespoints lw 2 title '%s'" % (dat, LABEL[i]))
        script = "\n".join([
            "set terminal svg size 720,440 dynamic font 'sans,12'",
            "set output '%s'" % path,
            "set title 'Contended mutex: throughput against clients (medians)'",
            "set xlabel 'clients (one session and thread each)'",
            "set ylabel 'acquisitions per second'",
            "set logscale x 2",
            "set xtics (%s)" % ", ".join(str(n) for n in POINTS),
            "set yrange [0:*]",
            "set grid",
            "set key outside right",
            "plot " + ", ".join(plots),
        ])
        subprocess.run([gnuplot], input=script, text=True, check=True)


def line_chart(path, title, xlabel, ylabel, series, xtics, logx=True):
    """A line chart (gnuplot, SVG) of series [(label, [(x, y), ...]), ...]."""
    gnuplot = shutil.which("gnuplot")
    series = [(label, pts) for label, pts in series if pts]
    if gnuplot is None or not series:
        return False
    with tempfile.TemporaryDirectory() as tmp:
        plots = []
        for k, (label, pts) in enumerate(series):
            dat = os.path.join(tmp, "%d.dat" % k)
            with open(dat, "w") as f:
                for x, y in pts:
                    f.write("%f %f\n" % (x, y))
            plots.append("'%s' using 1:2 with linespoints lw 2 title '%s'" % (dat, label))
        script = "\n".join([
            "set terminal svg size 720,440 dynamic font 'sans,12'",
            "set output '%s'" % path,
            "set title '%s'" % title,
            "set xlabel '%s'" % xlabel,
            "set ylabel '%s'" % ylabel,
            "set logscale x 10" if logx else "unset logscale x",
            "set xtics (%s)" % ", ".join(str(x) for x in xtics),
            # a margin, so that the first and last points and their labels show
            "set xrange [%g:%g]" % ((min(xtics) / 1.4, max(xtics) * 1.4) if logx else
                                   (min(xtics) - 2, max(xtics) + 2)),
            "set yrange [0:*]",
            "set grid",
            "set key outside right",
            "plot " + ", ".join(plots),
        ])
        subprocess.run([gnuplot], input=script, text=True, check=True)
    return True


def extra_charts(m, outdir):
    """Share of the chain floor against clients, and handoffs/s against the
    queue's length. Returns the Markdown lines that show them."""
    out = []
    share = []
    pts = [(n, m.ratio("versus-%d" % n, "protocol", "zkl", case_b="chain-%d" % n)) for n in (8, 32)]
    share.append((LABEL["protocol"], [(n, v) for n, v in pts if v is not None]))
    for i in IMPLS:
        pts = [(n, m.ratio("contended-%d" % n, i, "zkl", case_b="chain-%d" % n)) for n in (8, 32)]
        share.append((LABEL[i], [(n, v) for n, v in pts if v is not None]))
    path = os.path.join(outdir, "chain-share.svg")
    if line_chart(path, "Contended mutex: share of the chain floor (medians)",
                  "clients (one session and thread each)", "throughput / chain floor",
                  share, [8, 32], logx=False):
        out.append("![share of the chain floor](%s)" % os.path.basename(path))
    qs = sorted({int(c.split("-")[1]) for (c, i) in m.runs if c.startswith("queue-")})
    queue = [(LABEL[i], [(n, m.get("queue-%d" % n, i, "ops_per_sec")) for n in qs
                         if m.get("queue-%d" % n, i, "ops_per_sec") is not None])
             for i in ("zkl", "zkl-async", "curator", "kazoo")]
    path = os.path.join(outdir, "queue.svg")
    if qs and line_chart(path, "Handoffs per second against the queue length",
                         "waiters on one lock", "handoffs per second", queue, qs):
        out.append("![handoffs per second against the queue length](%s)" %
                   os.path.basename(path))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=1)
    ap.add_argument("--passes", type=int, default=1)
    ap.add_argument("--md", required=True)
    ap.add_argument("--chart")
    ap.add_argument("runs")
    args = ap.parse_args()
    m = Medians(load(args.runs))
    text = report(m, args)
    if args.chart:
        chart(m, args.chart)
        text += "\n![throughput against clients](%s)\n" % os.path.basename(args.chart)
        for line in extra_charts(m, os.path.dirname(os.path.abspath(args.chart))):
            text += "\n%s\n" % line
    with open(args.md, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
