#!/usr/bin/env python3
"""history-check.py - check a merged lock history for overlaps and tokens.

Usage: history-check.py [--allow-open] [--quiet] LOG [LOG...]
       history-check.py --nemesis [--quiet] [--strict-margins] HISTORY   (see "Nemesis" below)
       history-check.py --self-test         (both checkers on made-up logs)

Reads the lines that zkl's fault worker (tests/faults/fault-worker.c), the
Curator worker (tests/interop/CuratorWorker.java) and the fault tests write:

    ACQ  <kind> <id> <realtime-ns> <token|->   a holder got the lock
    REL  <kind> <id> <realtime-ns> <token|->   ... and is about to release it
    LOST <kind> <id> <realtime-ns> <token|->   ... learnt that its hold was lost
    KILL - <pid> <realtime-ns>                 the test killed process <pid>
                                               (logged after it was reaped)

Other lines are ignored. <kind> is mutex, write (exclusive) or read (shared);
<id> is "<pid>/<thread>". Times are CLOCK_REALTIME nanoseconds of one
machine, so lines of different processes compare.

A holder's interval runs from its ACQ to its REL or LOST, or to the KILL of
its process. The check fails (exit 1) on:
  - any two intervals that overlap, unless both are read holds;
  - a token that does not increase from one exclusive holder to the next,
    in the order they acquired (a "-" token is skipped);
  - an ACQ of an id that already holds, or a REL/LOST without an ACQ;
  - an interval never closed (unless --allow-open: a holder that was still
    running when the log was read).
It prints one summary line:
    history-check: N acquisitions, P processes, K kills, V violations
and, for each violation, one line saying what and where.
"""
import os
import sys


def main(argv):
    if "--self-test" in argv:
        return self_test()
    if "--nemesis" in argv:
        return nemesis_main([a for a in argv[1:] if a != "--nemesis"])
    allow_open = "--allow-open" in argv
    quiet = "--quiet" in argv
    files = [a for a in argv[1:] if not a.startswith("--")]
    if not files:
        print(__doc__, file=sys.stderr)
        return 2
    events = []
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            for no, line in enumerate(fh, 1):
                p = line.split()
                if len(p) >= 4 and p[0] == "KILL":
                    events.append((int(p[3]), 0, "KILL", "-", p[2], None, f"{f}:{no}"))
                elif len(p) >= 5 and p[0] in ("ACQ", "REL", "LOST"):
                    tok = None if p[4] == "-" else int(p[4])
                    # At one instant, closings sort before openings.
                    order = 1 if p[0] == "ACQ" else 0
                    events.append((int(p[3]), order, p[0], p[1], p[2], tok, f"{f}:{no}"))
    events.sort(key=lambda e: (e[0], e[1]))

    violations = []
    open_ = {}  # id -> (start, kind, token, where)
    intervals = []  # (start, end, kind, id, token)
    pids, kills, acqs = set(), 0, 0
    for t, _, ev, kind, who, tok, where in events:
        if ev == "KILL":
            kills += 1
            for i in [i for i in open_ if i.split("/")[0] == who]:
                s, k, tk, _ = open_.pop(i)
                intervals.append((s, t, k, i, tk))
            continue
        pids.add(who.split("/")[0])
        if ev == "ACQ":
            acqs += 1
            if who in open_:
                violations.append(f"{where}: {who} acquired again while holding")
            open_[who] = (t, kind, tok, where)
        else:
            if who not in open_:
                violations.append(f"{where}: {ev} of {who} without an ACQ")
                continue
            s, k, tk, _ = open_.pop(who)
            intervals.append((s, t, k, who, tk))
    for who, (s, k, tk, where) in open_.items():
        if allow_open:
            intervals.append((s, float("inf"), k, who, tk))
        else:
            violations.append(f"{where}: {who} never released (no REL, LOST or KILL)")

    intervals.sort()
    # Overlaps: sweep in start order, keep the exclusive and shared holders
    # that are still inside.
    active = []
    for s, e, k, who, tk in intervals:
        active = [a for a in active if a[1] > s]
        shared = k == "read"
        for a in active:
            if not (shared and a[2] == "read"):
                violations.append(
                    f"overlap: {a[3]} ({a[2]}, token {a[4]}) held [{a[0]}, {a[1]}] "
                    f"and {who} ({k}, token {tk}) acquired at {s}")
        active.append((s, e, k, who, tk))
    # Tokens: strictly increasing over exclusive holders in acquisition order.
    last = None
    for s, e, k, who, tk in intervals:
        if k == "read" or tk is None:
            continue
        if last is not None and tk <= last[0]:
            violations.append(f"token: {who} got {tk} at {s} after {last[1]} got {last[0]}")
        last = (tk, who)

    print(f"history-check: {acqs} acquisitions, {len(pids)} processes, {kills} kills, "
          f"{len(violations)} violations")
    if not quiet or violations:
        for v in violations[:50]:
            print("  " + v)
    return 1 if violations else 0


# ---- Nemesis ----------------------------------------------------------------
#
# history-check.py --nemesis HISTORY checks the JSON-lines history written by
# tests/nemesis/nemesis.py and its workers (tests/nemesis/nemesis-worker.c,
# which documents the worker lines). The driver adds: run (seed, workers,
# lock paths, store directory, semaphore limit), spawn, ended (a worker's
# exit status once it stopped), kill (a worker's
# process was SIGKILLed and reaped), cli-exit (status of one `zkl lock`),
# fault / heal, healed (every fault is over), stop (workers told to stop),
# stuck (a worker did not stop), orphan (a contender node left once the run
# settled), settled.
#
# A hold is one acquisition: (worker, token). It ends at its rel (time taken
# just before the release call), at its lost, or at the kill of its worker.
# It is CONFIRMED when the release returned 0 (for `zkl lock`: zkl exited 0,
# which it does only when the lock was held throughout): the holder's node
# existed in its session until the delete, so per the server's own order
# nobody else held in between. Any other hold (lost callback, release
# ZKL_ELOST, zkl exit 75, killed) is UNCONFIRMED: the server may have ended it
# at any time before its end, so an unconfirmed hold that overlaps a later
# holder is not a violation but a loss-presumption margin (below).
#
# Violations:
#   holders    two confirmed holds of one path overlap where the recipe
#              forbids it (exclusive kinds; a writer and anyone on the
#              read-write path; more than the limit on the semaphore path)
#   token      confirmed exclusive holds of one path, in acquisition order,
#              whose tokens do not strictly increase
#   leaders    (elections, kind "elect") confirmed leaderships of one path,
#              taken in the order of their tokens, that do not each begin
#              after the one before ended: two leaders at once, or a
#              leadership with a smaller token than an earlier one's. A
#              leadership is confirmed when, after its last write, a sync
#              and a listing still showed its node (by its token) leading;
#              an unconfirmed one that overlaps the next is a margin (the
#              loss window), as for locks
#   stale      a store's journal of accepted writes (examples/fenced_store.h)
#              with a token lower than one accepted before it, or one token
#              accepted from two holders: a stale write was accepted
#   store      a fenced write that failed with an error (not a refusal)
#   reader     a confirmed reader that saw the store's fence above its own
#              token: a later writer wrote while it held
#   orphan     a contender node still there after the workers stopped and
#              sessions had time to expire
#   progress   a worker with no acquisition between the last heal and stop
#   stuck      a worker that did not stop when told to
#   exit       a worker process that ended on its own (crash, failed open),
#              or a `zkl lock` that died of a signal other than SIGKILL
# Margins: for an unconfirmed, not killed hold, P = when the holder stopped
# acting as one: its release call, or the loss report (lost callback, zkl
# stopping its command), whichever came first; N = the next conflicting
# acquisition of the same path: margin = N - P. Positive: the holder knew before anyone else
# got the lock. Negative: for -margin the old holder still believed it held
# while the new one did; only the fenced store stands between them then. A
# holder under a pause-client fault between its acquisition and the next
# one is marked paused: stopped, it could not tell in time (by design).
#   margin     (--strict-margins only) a negative margin of a holder that
#              was not paused
#   harness    the nemesis could not start a `zkl lock` (fork failed, ...):
#              the run did not test what it claims
#   tell       (--strict-margins only) a lost callback more than 1 s after its
#              process's client reported ZKL_STATE_LOST


def _pct(xs, q):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    i = min(len(xs) - 1, max(0, int(round(q / 100.0 * (len(xs) - 1)))))
    return xs[i]


def _excl(kind):
    return kind not in ("read", "sem")


def nemesis_analyse(events, stores=None):
    """Analyse a nemesis history (list of dicts). Returns a dict report."""
    import glob
    run = next((e for e in events if e.get("ev") == "run"), {})
    sem_max = run.get("sem_max", 3)
    stores = stores or run.get("stores")
    events = sorted(events, key=lambda e: e.get("t", 0))
    holds, by_worker, violations = {}, {}, []
    faults, orphans, stuck = [], [], []
    heals = {}
    lost_state, tell_ms = {}, []  # when each process's client reported LOST; lost callbacks after
    healed_t = stop_t = None
    ops = 0
    for e in events:
        ev, w, t = e.get("ev"), e.get("w"), e.get("t", 0)
        key = (w, e.get("tok"))
        if ev == "acq":
            ops += 1
            h = {"w": w, "kind": e["kind"], "path": e["path"], "tok": e["tok"], "acq": t,
                 "end": None, "how": None, "lost": None, "cli_rc": None, "reads": [],
                 "writes": []}
            holds[key] = h
            by_worker.setdefault(w, []).append(h)
        elif ev in ("write", "read"):
            ops += 1
            if key in holds:
                holds[key][ev + "s"].append(e)
        elif ev == "rel":
            h = holds.get(key)
            if h and h["end"] is None:
                h["end"] = t
                h["how"] = "released" if e["rc"] == 0 else "release-rc%d" % e["rc"]
                if e["rc"] != 0:
                    # The worker learnt of the loss when the release returned.
                    h["rel_done"] = e.get("done", t)
        elif ev == "state" and e.get("state") == 4:
            lost_state[(w, e.get("pid"))] = t  # ZKL_STATE_LOST
        elif ev == "lost":
            if (w, e.get("pid")) in lost_state:
                tell_ms.append((t - lost_state[(w, e.get("pid"))]) / 1e6)
            h = holds.get(key)
            if h:
                h["lost"] = t if h["lost"] is None else min(h["lost"], t)
                if h["end"] is None:
                    h["end"], h["how"] = t, "lost"
        elif ev == "kill":
            for h in by_worker.get(w, []):
                if h["end"] is None:
                    h["end"], h["how"] = t, "killed"
        elif ev == "cli-error":
            violations.append("harness: could not start `zkl lock` for worker %s: %s" %
                              (w, e.get("err")))
        elif ev == "cli-exit":
            # SIGKILL is the nemesis's (kill-client); any other signal is a crash
            if isinstance(e.get("rc"), int) and e["rc"] < 0 and e["rc"] != -9:
                violations.append("exit: a `zkl lock` of worker %s died of signal %d" %
                                  (w, -e["rc"]))
            for h in reversed(by_worker.get(w, [])):
                if h["cli_rc"] is None and h["acq"] <= t:
                    h["cli_rc"] = e["rc"]
                    if h["end"] is None:
                        h["end"], h["how"] = t, "cli-exit"
                    break
        elif ev == "fault":
            faults.append(e)
        elif ev == "heal":
            heals[e.get("id")] = t
        elif ev == "healed":
            healed_t = t
        elif ev == "stop":
            stop_t = t
        elif ev == "orphan":
            orphans.append(e)
        elif ev == "stuck":
            stuck.append(e)
        elif ev == "ended" and e.get("rc") != 0:
            violations.append("exit: worker %s (pid %s) ended with status %s before it was "
                              "told to stop" % (w, e.get("pid"), e.get("rc")))
    hl = sorted(holds.values(), key=lambda h: h["acq"])
    inf = float("inf")

    def confirmed(h):
        if h["kind"] == "cli-hold":
            return h["cli_rc"] == 0 and h["how"] in ("released", "cli-exit")
        return h["how"] == "released"

    def conflict(a, b):
        if a["kind"] == "sem" or b["kind"] == "sem":
            return False
        return _excl(a["kind"]) or _excl(b["kind"])

    paths = sorted({h["path"] for h in hl})
    for p in paths:
        ph = [h for h in hl if h["path"] == p]
        ch = [h for h in ph if confirmed(h)]
        # holders: sweep the confirmed holds in acquisition order.
        active = []
        for h in ch:
            active = [a for a in active if a["end"] > h["acq"]]
            for a in active:
                if conflict(a, h):
                    violations.append(
                        "holders: %s: %s (%s, token %s) held [%d, %d] and %s (%s, token %s) "
                        "acquired at %d" % (p, a["w"], a["kind"], a["tok"], a["acq"], a["end"],
                                            h["w"], h["kind"], h["tok"], h["acq"]))
            if h["kind"] == "sem":
                n = 1 + sum(1 for a in active if a["kind"] == "sem")
                if n > sem_max:
                    violations.append("holders: %s: %d leases held at %d (limit %d)"
                                      % (p, n, h["acq"], sem_max))
            active.append(h)
        # token: strictly increasing over confirmed exclusive holds.
        last = None
        for h in ch:
            if not _excl(h["kind"]):
                continue
            if last is not None and h["tok"] <= last["tok"]:
                violations.append("token: %s: %s got %s at %d after %s got %s" % (
                    p, h["w"], h["tok"], h["acq"], last["w"], last["tok"]))
            last = h
        # leaders: an election's leaderships, in token order, one after
        # another in time.
        led = sorted((h for h in ch if h["kind"] == "elect"), key=lambda h: h["tok"])
        for a, b in zip(led, led[1:]):
            if b["acq"] < a["end"]:
                violations.append(
                    "leaders: %s: %s led with token %s over [%d, %d] and %s with token %s "
                    "from %d" % (p, a["w"], a["tok"], a["acq"], a["end"], b["w"], b["tok"],
                                 b["acq"]))
        # store: a write that failed for another reason than a stale token
        # means the run could not test what it claims to.
        for h in ph:
            for wr in h["writes"]:
                if wr.get("rc", 0) < 0:
                    violations.append("store: %s: %s (token %s) could not write: error %d" % (
                        p, h["w"], h["tok"], wr["rc"]))
        # reader: a confirmed reader saw a later writer's fence.
        for h in ch:
            for r in h["reads"]:
                if r.get("fence", 0) > h["tok"]:
                    violations.append("reader: %s: %s (token %s) saw fence %s at %d" % (
                        p, h["w"], h["tok"], r["fence"], r["t"]))
    # stale: the stores' journals.
    store_stats = {}
    for f in sorted(glob.glob(os.path.join(stores, "*.store"))) if stores else []:
        with open(f, errors="replace") as fh:
            lines = fh.read().splitlines()[1:]
        best, who_of, n = None, {}, 0
        for no, line in enumerate(lines, 2):
            parts = line.split()
            if len(parts) < 2 or not parts[0].lstrip("-").isdigit():
                continue
            n += 1
            tok, who = int(parts[0]), parts[1]
            if best is not None and tok < best:
                violations.append("stale: %s:%d: token %d accepted after %d" % (
                    os.path.basename(f), no, tok, best))
            if tok in who_of and who_of[tok] != who:
                violations.append("stale: %s:%d: token %d accepted from %s and %s" % (
                    os.path.basename(f), no, tok, who_of[tok], who))
            who_of.setdefault(tok, who)
            best = tok if best is None else max(best, tok)
        store_stats[os.path.basename(f)] = n
    for o in orphans:
        violations.append("orphan: %s (session 0x%x)" % (o["node"], o.get("owner") or 0))
    for s in stuck:
        violations.append("stuck: worker %s (pid %s) did not stop" % (s["w"], s.get("pid")))
    # progress after the last heal.
    recovery = {}
    if healed_t is not None:
        end = stop_t or inf
        for w in run.get("workers", sorted(by_worker)):
            first = next((h["acq"] for h in by_worker.get(w, []) if healed_t <= h["acq"] < end),
                         None)
            if first is None:
                # What it did instead: its failed acquires by code, its
                # client's state changes.
                after = [e for e in events if e.get("w") == w and healed_t <= e.get("t", 0) < end]
                fails = {}
                for e in after:
                    if e.get("ev") == "fail":
                        fails[e.get("rc")] = fails.get(e.get("rc"), 0) + 1
                states = [str(e.get("state")) for e in after if e.get("ev") == "state"]
                violations.append("progress: worker %s made no acquisition after the last "
                                  "heal (failed acquires by code: %s; states: %s)" % (
                                      w, ", ".join("%s x%d" % kv for kv in sorted(fails.items()))
                                      or "none", " ".join(states) or "none"))
            else:
                recovery[w] = (first - healed_t) / 1e6
    # margins.
    inf_t = float("inf")
    pauses = [(f.get("worker"), f["t"], heals.get(f.get("id"), inf_t)) for f in faults
              if f.get("kind") == "pause-client"]
    margins = []
    for h in hl:
        if confirmed(h) or h["how"] == "killed" or h["end"] is None:
            continue
        if h["kind"] == "sem":
            continue
        if h["kind"] == "cli-hold" and h["cli_rc"] not in (75, None) and h["lost"] is None:
            continue
        # The holder stopped acting as one at its release call or at the
        # loss report, whichever came first: that is h["end"]. (A release
        # whose delete was applied but whose answer never came returns
        # ZKL_ELOST much later; the holder was done with the lock already.)
        presumed = h["end"]
        nxt = next((g for g in hl if g is not h and g["path"] == h["path"] and
                    g["acq"] > h["acq"] and conflict(g, h)), None)
        if nxt is None:
            continue
        # A holder stopped (SIGSTOP) between its acquisition and the next
        # one could not have told in time: negative by design.
        paused = any(pw == h["w"] and a < nxt["acq"] and b > h["acq"] for pw, a, b in pauses)
        margins.append({"w": h["w"], "kind": h["kind"], "path": h["path"], "tok": h["tok"],
                        "how": h["how"], "next": nxt["w"], "paused": paused, "margin_ms":
                        (nxt["acq"] - presumed) / 1e6})
    confirmed_n = sum(1 for h in hl if confirmed(h))
    return {"run": run, "holds": hl, "confirmed": confirmed_n, "faults": faults,
            "violations": violations, "ops": ops, "recovery": recovery, "margins": margins,
            "stores": store_stats, "open": sum(1 for h in hl if h["end"] is None),
            "tell_ms": tell_ms}


def nemesis_main(args):
    import collections
    import json
    quiet = "--quiet" in args
    strict = "--strict-margins" in args
    files = [a for a in args if not a.startswith("--")]
    if len(files) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    events = []
    with open(files[0], encoding="utf-8", errors="replace") as fh:
        for line in fh:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if isinstance(e, dict):
                events.append(e)
    r = nemesis_analyse(events)
    run = r["run"]
    kinds = collections.Counter(f["kind"] for f in r["faults"])
    hows = collections.Counter(h["how"] for h in r["holds"])
    writes = [w for h in r["holds"] for w in h["writes"]]
    refused = sum(1 for w in writes if w.get("rc") == 1)
    print("history-check: faults by kind: " +
          (", ".join("%s %d" % kv for kv in sorted(kinds.items())) or "none"))
    print("history-check: %d holds (%d confirmed; %s), %d fenced writes (%d refused as "
          "stale), %d still open" % (len(r["holds"]), r["confirmed"],
                                    ", ".join("%s %d" % (k, v) for k, v in sorted(
                                        hows.items(), key=lambda kv: str(kv[0]))),
                                    len(writes), refused, r["open"]))
    led = [h for h in r["holds"] if h["kind"] == "elect"]
    if led:
        print("history-check: elections: %d leaderships, %d proven to the end (sync and "
              "listing), checked one after another in token order" % (
                  len(led), sum(1 for h in led if h["how"] == "released")))
    print("history-check: store journals: " +
          ", ".join("%s %d" % kv for kv in sorted(r["stores"].items())))
    rec = list(r["recovery"].values())
    if rec:
        print("history-check: recovery after the last heal (ms, %d workers): p50 %.0f, "
              "p90 %.0f, max %.0f" % (len(rec), _pct(rec, 50), _pct(rec, 90), max(rec)))
    if r["tell_ms"]:
        print("history-check: lost callbacks after the client's LOST state (ms, %d): p50 %.0f, "
              "max %.0f" % (len(r["tell_ms"]), _pct(r["tell_ms"], 50), max(r["tell_ms"])))
        late = [d for d in r["tell_ms"] if d > 1000]
        if strict and late:
            r["violations"].append("tell: %d lost callbacks came more than 1 s after their "
                                   "client's LOST state (the latest after %.0f ms)" %
                                   (len(late), max(late)))
    ms = [m["margin_ms"] for m in r["margins"]]
    if ms:
        neg = [m for m in r["margins"] if m["margin_ms"] < 0]
        print("history-check: loss-presumption margins (ms, %d lost holds followed by another "
              "holder): min %.0f, p50 %.0f, max %.0f; %d negative (%d of a paused holder)" % (
                  len(ms), min(ms), _pct(ms, 50), max(ms), len(neg),
                  sum(1 for m in neg if m["paused"])))
        if not quiet:
            for m in sorted(r["margins"], key=lambda m: m["margin_ms"])[:5]:
                print("  margin %.0f ms: %s (%s, token %s, %s%s) then %s on %s" % (
                    m["margin_ms"], m["w"], m["kind"], m["tok"], m["how"],
                    ", paused" if m["paused"] else "", m["next"], m["path"]))
        if strict:
            for m in neg:
                if not m["paused"]:
                    r["violations"].append(
                        "margin: %s (%s, token %s) presumed its hold lost %.0f ms after %s "
                        "acquired %s" % (m["w"], m["kind"], m["tok"], -m["margin_ms"],
                                         m["next"], m["path"]))
    else:
        print("history-check: loss-presumption margins: no lost hold was followed by "
              "another holder")
    for v in r["violations"][:50]:
        print("  VIOLATION " + v)
    print("nemesis: seed %s, %d faults, %d operations, %d violations" % (
        run.get("seed", "?"), len(r["faults"]), r["ops"], len(r["violations"])))
    return 1 if r["violations"] else 0


def nemesis_self_test(run):
    """Planted histories for --nemesis; `run(text, args, want)` counts misses."""
    import json
    import tempfile
    before = 0

    def hist(*evs, store=None):
        d = tempfile.mkdtemp()
        if store is not None:
            with open(os.path.join(d, "_p.store"), "w") as f:
                f.write("fence 0\n" + "".join("%d %s w\n" % x for x in store))
        lines = [{"ev": "run", "seed": 1, "workers": ["a", "b"], "sem_max": 3,
                  "stores": d, "t": 0}]
        for ev in evs:
            lines.append(ev)
        return "".join(json.dumps(x) + "\n" for x in lines)

    def acq(w, t, tok, kind="mutex", path="/p"):
        return {"ev": "acq", "w": w, "t": t, "tok": tok, "kind": kind, "path": path}

    def rel(w, t, tok, rc=0):
        return {"ev": "rel", "w": w, "t": t, "tok": tok, "rc": rc}
    healed = [{"ev": "healed", "t": 5}, acq("a", 60, 9), rel("a", 61, 9),
              acq("b", 62, 10), rel("b", 63, 10), {"ev": "stop", "t": 70}]
    # sequential holds, then progress: clean
    run(hist(acq("a", 1, 1), rel("a", 2, 1), acq("b", 3, 2), rel("b", 4, 2), *healed,
             store=[(1, "a/0"), (2, "b/0")]), ["--nemesis"], 0)
    # two confirmed holders at once
    run(hist(acq("a", 1, 1), acq("b", 2, 2), rel("a", 3, 1), rel("b", 4, 2), *healed),
        ["--nemesis"], 1)
    # a lost hold overlapping the next holder: a margin, not a violation
    run(hist(acq("a", 1, 1), acq("b", 2, 2), {"ev": "lost", "w": "a", "t": 3, "tok": 1},
             rel("a", 4, 1, -5), rel("b", 5, 2), *healed), ["--nemesis"], 0)
    # ... which --strict-margins counts, unless the holder was paused then
    lost_overlap = (acq("a", 1, 1), acq("b", 2, 2), {"ev": "lost", "w": "a", "t": 3, "tok": 1},
                    rel("a", 4, 1, -5), rel("b", 5, 2))
    run(hist(*lost_overlap, *healed), ["--nemesis", "--strict-margins"], 1)
    run(hist({"ev": "fault", "id": 0, "kind": "pause-client", "worker": "a", "t": 1},
             *lost_overlap, {"ev": "heal", "id": 0, "t": 3}, *healed),
        ["--nemesis", "--strict-margins"], 0)
    # a lost callback 1.5 s after its client's LOST state
    late = (acq("a", 1, 1), {"ev": "state", "w": "a", "pid": 7, "state": 4, "t": 10**9},
            {"ev": "lost", "w": "a", "pid": 7, "tok": 1, "t": 25 * 10**8})
    run(hist(*late, *healed), ["--nemesis"], 0)
    run(hist(*late, *healed), ["--nemesis", "--strict-margins"], 1)
    # a stale write accepted by the store
    run(hist(acq("a", 1, 1), rel("a", 2, 1), *healed, store=[(2, "b/0"), (1, "a/0")]),
        ["--nemesis"], 1)
    # readers together: fine; a writer with a reader: not
    run(hist(acq("a", 1, 1, "read"), acq("b", 2, 2, "read"), rel("a", 3, 1), rel("b", 4, 2),
             *healed), ["--nemesis"], 0)
    run(hist(acq("a", 1, 1, "read"), acq("b", 2, 2, "write"), rel("a", 3, 1), rel("b", 4, 2),
             *healed), ["--nemesis"], 1)
    # four leases of a semaphore of three
    run(hist(*[acq("a%d" % i, i, i, "sem") for i in range(1, 5)],
             *[rel("a%d" % i, 10 + i, i) for i in range(1, 5)], *healed), ["--nemesis"], 1)
    # a store that could not be written
    run(hist(acq("a", 1, 1), {"ev": "write", "w": "a", "t": 2, "tok": 1, "path": "/p", "rc": -13},
             rel("a", 3, 1), *healed), ["--nemesis"], 1)
    # the nemesis could not start zkl
    run(hist({"ev": "cli-error", "w": "a", "err": "EAGAIN", "t": 3}, *healed), ["--nemesis"], 1)
    # a worker that died on its own; a zkl lock that crashed, or was killed
    run(hist(*healed, {"ev": "ended", "w": "a", "pid": 9, "rc": -11, "t": 71}), ["--nemesis"], 1)
    run(hist({"ev": "cli-exit", "w": "a", "rc": -11, "t": 3}, *healed), ["--nemesis"], 1)
    run(hist({"ev": "cli-exit", "w": "a", "rc": -9, "t": 3}, *healed), ["--nemesis"], 0)
    # an election: leaderships one after another, or two at once, or a
    # later leadership with a smaller token; a lost leader overlapping the
    # next is a margin
    def led(w, t0, t1, tok, rc=0):
        return (acq(w, t0, tok, "elect"), rel(w, t1, tok, rc))
    run(hist(*led("a", 1, 2, 5), *led("b", 3, 4, 7), *healed), ["--nemesis"], 0)
    run(hist(*led("a", 1, 3, 5), *led("b", 2, 4, 7), *healed), ["--nemesis"], 1)
    run(hist(*led("a", 1, 2, 7), *led("b", 3, 4, 5), *healed), ["--nemesis"], 1)
    run(hist(acq("a", 1, 5, "elect"), acq("b", 2, 7, "elect"),
             {"ev": "lost", "w": "a", "t": 3, "tok": 5}, rel("a", 4, 5, -5), rel("b", 5, 7),
             *healed), ["--nemesis"], 0)
    # an orphan node; a worker that never came back
    run(hist(*healed, {"ev": "orphan", "node": "/p/x", "owner": 1, "t": 80}), ["--nemesis"], 1)
    run(hist({"ev": "healed", "t": 5}, acq("a", 60, 9), rel("a", 61, 9), {"ev": "stop", "t": 70}),
        ["--nemesis"], 1)
    return before


def self_test():
    """Both checkers on small made-up histories: each must find exactly what
    was planted. Returns 0 when they do."""
    import tempfile
    fails = 0

    def run(text, args, want):
        nonlocal fails
        with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
            f.write(text)
        try:
            import contextlib
            import io
            with contextlib.redirect_stdout(io.StringIO()):
                rc = main(["history-check.py"] + args + [f.name])
        finally:
            os.unlink(f.name)
        if rc != want:
            print(f"self-test: {args} on {text!r}: status {rc}, expected {want}")
            fails += 1

    ok = "ACQ mutex 1/1 10 5\nREL mutex 1/1 20 5\nACQ mutex 2/1 30 7\nREL mutex 2/1 40 7\n"
    run(ok, [], 0)
    run("ACQ mutex 1/1 10 5\nACQ mutex 2/1 15 7\nREL mutex 1/1 20 5\nREL mutex 2/1 40 7\n", [], 1)
    run("ACQ mutex 1/1 10 7\nREL mutex 1/1 20 7\nACQ mutex 2/1 30 5\nREL mutex 2/1 40 5\n", [], 1)
    run("ACQ read 1/1 10 5\nACQ read 2/1 15 7\nREL read 1/1 20 5\nREL read 2/1 40 7\n", [], 0)
    run("ACQ mutex 1/1 10 5\n", [], 1)
    run("ACQ mutex 1/1 10 5\n", ["--allow-open"], 0)
    fails += nemesis_self_test(run)
    print(f"history-check self-test: {'passed' if fails == 0 else f'{fails} failed'}")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
