#!/usr/bin/env python3
"""history-check.py - check a merged lock history for overlaps and tokens.

Usage: history-check.py [--allow-open] [--quiet] LOG [LOG...]

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
import sys


def main(argv):
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


if __name__ == "__main__":
    sys.exit(main(sys.argv))
