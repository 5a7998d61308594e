#!/usr/bin/env python3
"""follower-cut.py - a holder whose only server is a follower cut off from
the other servers, its client link intact (docs/nemesis.md).

Run by tests/nemesis/run.sh --scenario follower-cut, in the nemesis's
private network namespace, with its ensemble and nftables rules
(tests/nemesis/nemesis.py). Options: --build DIR, --trials N (default 2),
--keep.

The follower goes on answering its clients' reads until it notices that the
leader is gone (syncLimit ticks: 5 s here, more than the 4 s session
timeout), while the leader, hearing nothing from it, expires the holder's
session one timeout after the cut. The holder's `zkl lock` must have
stopped its command before the waiter's (on the other two servers) starts.
Both commands write realtime timestamps (ms) into files; each trial prints
the margin. Ends with "N passed, M failed"; exit status 0 when all passed.
"""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nemesis  # noqa: E402

SESSION_MS = 4000


def now_ms():
    return time.time_ns() // 1000000


def wait_for(seconds, cond):
    end = time.monotonic() + seconds
    while not cond():
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


def stamp(path):
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def trial(run, zkl, t):
    lead = run.leader()
    if lead is None:
        return False, "no leader"
    f = next(i for i in range(1, run.nodes + 1) if i != lead)
    others = [i for i in range(1, run.nodes + 1) if i != f]
    host = lambda i: "127.0.0.1:%d" % run.ports[i][0]  # noqa: E731
    path = "%s/cut-%d" % (run.root, t)
    d = os.path.join(run.work, "trial%d" % t)
    os.makedirs(d)
    hs, he, ws = (os.path.join(d, n) for n in ("holder.start", "holder.stop", "waiter.start"))
    holder = subprocess.Popen(
        [zkl, "lock", "--session-timeout", str(SESSION_MS), "-S", host(f), path, "-c",
         "trap 'date +%%s%%3N >%s; exit 0' TERM; date +%%s%%3N >%s; while :; do sleep 0.02; done"
         % (he, hs)], stderr=open(os.path.join(d, "holder.err"), "w"))
    waiter = None
    try:
        if not wait_for(30, lambda: stamp(hs) is not None):
            return False, "the holder never started"
        waiter = subprocess.Popen(
            [zkl, "lock", "--session-timeout", str(SESSION_MS), "-S",
             ",".join(host(i) for i in others), path, "-c", "date +%%s%%3N >%s" % ws],
            stderr=open(os.path.join(d, "waiter.err"), "w"))

        def queued():
            r = subprocess.run([zkl, "holders", "-S", host(others[0]), "--json", path],
                               capture_output=True, text=True)
            try:
                return len(json.loads(r.stdout)["contenders"]) == 2
            except (ValueError, KeyError):
                return False
        if not wait_for(30, queued):
            return False, "the waiter never queued"
        with run.lock:
            run.rules[0] = [r for b in others for r in run.server_cut(f, b)]
        run.apply_rules()
        cut = now_ms()
        ok = wait_for(30, lambda: stamp(ws) is not None)
        wait_for(20, lambda: holder.poll() is not None)
        hrc = holder.poll()
        wrc = waiter.wait(30) if ok else None
    finally:
        with run.lock:
            run.rules.clear()
        run.apply_rules()
        for p in (holder, waiter):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    stop, start = stamp(he), stamp(ws)
    if stop is None or start is None:
        return False, "holder stop %s, waiter start %s, holder exit %s" % (stop, start, hrc)
    msg = ("follower %d cut from leader %d: holder stopped %d ms after the cut, waiter started "
           "%d ms after, margin %d ms" % (f, lead, stop - cut, start - cut, start - stop))
    return stop < start and hrc == 75 and wrc == 0, msg + "; holder exit %s, waiter exit %s" % (
        hrc, wrc)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    # what nemesis.Run looks at
    a.nodes, a.session_ms, a.seed, a.seconds, a.settle, a.only, a.strict_margins = (
        3, SESSION_MS, 0, 0, 0, [], False)
    run = nemesis.Run(a)
    run.cli_thread = None
    zkl = os.path.join(a.build, "tools", "zkl")
    passed = failed = 0
    try:
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        run.apply_rules()
        run.start_ensemble()
        for t in range(1, a.trials + 1):
            run.harness("wait-ready", run.zkdir, "60")
            ok, msg = trial(run, zkl, t)
            print("%s - trial %d: %s" % ("ok" if ok else "not ok", t, msg), flush=True)
            passed, failed = passed + ok, failed + (not ok)
    except Exception as e:  # setup failed: say so
        print("not ok - follower-cut: %s" % e, flush=True)
        failed += 1
        a.keep = True
    finally:
        run.cleanup()
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
