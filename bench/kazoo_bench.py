#!/usr/bin/python3
"""kazoo_bench.py - lock benchmark for Python kazoo (kazoo.recipe.lock.Lock).

Same command line and output as bench/CuratorBench.java, so the two can be
compared with the C benchmark:

    kazoo_bench.py --servers HOST:PORT[,...]
                   --workload uncontended|contended|many|herd|queue
                   --clients N --ops N [--warmup N] [--path /bench/x]
                   [--prefetch]

Stdout receives exactly one JSON line, e.g.

    {"impl":"kazoo","workload":"contended","clients":8,"ops":2000,
     "seconds":2.1,"ops_per_sec":952.4,"p50_us":7281,"p99_us":17640,
     "zk_requests_per_op":4.0,"peak_rss_kb":123456}

The shebang names /usr/bin/python3 because that is where Debian's
python3-kazoo is installed.

Workloads (every session is its own KazooClient):
  uncontended  one session, one thread: `ops` acquire+release cycles of one
               lock.  Latency = one whole cycle.
  contended    `clients` sessions, one thread each, on one lock path.  The
               threads draw tickets from a shared counter until `ops`
               acquisitions have been made; every acquire is followed at once
               by a release.  Latency = from calling acquire() until it
               returns holding the lock.
  many         one session acquires `ops` distinct locks (PATH/0, PATH/1,
               ...), keeps them all, then releases them all.  Latency = one
               acquire.  Adds "bytes_per_lock": growth of the process RSS
               (VmRSS, after gc.collect()) from before the first acquire to
               the moment all locks are held, divided by `ops`.
  herd         one session holds the lock while `clients` waiters (default
               100), each with its own session and thread, queue behind it.
               Once all waiter nodes exist (plus a 200 ms pause so that every
               waiter has set its watch) the holder releases and the lock is
               handed through all waiters, each releasing at once.  One round
               gives `clients` handoffs; ceil(ops / clients) rounds are run
               and "ops" in the output is the number of handoffs.  Latency =
               from the previous owner calling release() until the next
               owner's acquire() returns.  "seconds" sums the handoff phases
               only.  Adds "wakeups_per_handoff": every waiter lock counts
               its calls of Lock._get_predecessor(), which lists the
               children once after the node is created and once more each
               time the waiter wakes (its predecessor watch fired) or finds
               the predecessor already gone; wake-ups = listings -
               acquisitions.

  queue        --waiters N threads queue on one lock behind a holder over
               `clients` (<= 16) sessions; then the lock passes through all
               of them: ops = N handoffs (as tools/zkl-bench).

The Lock objects are reused across cycles, as an application would.  Note
that kazoo 2.8 then lists the children once more before each create (it
looks for a node left by an earlier attempt), which shows up in
zk_requests_per_op.

--warmup N runs the same workload with N operations, untimed, on PATH/warmup
before the timed run on PATH/timed.  --prefetch is accepted for
compatibility with the C benchmark and ignored.

zk_requests_per_op: zk_packets_received is read with the "mntr" four letter
word from every server in --servers just before and just after the timed
part; (after - before - number of servers) / ops (the second mntr counts
itself).  Session pings falling into the timed part are included.  null if
mntr is unavailable.  For herd the bracket covers the queueing too.

peak_rss_kb is VmHWM from /proc/self/status.

PATH (default /bench/kazoo) is deleted recursively before and after the
run.  Exit status: 0 success, 1 error, 2 bad usage.
"""

import argparse
import gc
import json
import logging
import math
import socket
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError
from kazoo.recipe.lock import Lock

SESSION_TIMEOUT_S = 30.0
CONNECT_TIMEOUT_S = 15.0
HERD_SETTLE_S = 0.2


# ----------------------------------------------------------------------
# ZooKeeper server statistics ("mntr")

def server_list(servers):
    """host:port pairs of --servers, without a chroot suffix."""
    return [hp.strip() for hp in servers.split("/", 1)[0].split(",")
            if hp.strip()]


def four_letter_word(host_port, word):
    """Send a four letter word and return the whole reply."""
    host, _, port = host_port.rpartition(":")
    if not host:
        host, port = host_port, "2181"
    host = host.strip("[]")
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(word.encode("ascii"))
        chunks = []
        while True:                 # the server closes after replying
            b = s.recv(8192)
            if not b:
                break
            chunks.append(b)
    return b"".join(chunks).decode("utf-8", "replace")


def packets_received(servers):
    """Sum of zk_packets_received over all servers, or None."""
    total = 0
    for hp in servers:
        value = None
        try:
            for line in four_letter_word(hp, "mntr").splitlines():
                kv = line.split()
                if len(kv) == 2 and kv[0] == "zk_packets_received":
                    value = int(kv[1])
        except (OSError, ValueError):
            value = None
        if value is None:
            print("kazoo_bench: no zk_packets_received from %s "
                  "(is mntr whitelisted?)" % hp, file=sys.stderr)
            return None
        total += value
    return total


class Meter:
    """Brackets the timed part of a run with two mntr readings."""

    def __init__(self, servers, enabled):
        self.servers = servers
        self.enabled = enabled
        self.before = self.after = None

    def begin(self):
        if self.enabled:
            self.before = packets_received(self.servers)

    def end(self):
        if self.enabled:
            self.after = packets_received(self.servers)

    def per_op(self, ops):
        if self.before is None or self.after is None:
            return None
        # The second mntr counts itself once on every server.
        return (self.after - self.before - len(self.servers)) / ops


# ----------------------------------------------------------------------
# Helpers

def connect(servers):
    c = KazooClient(hosts=servers, timeout=SESSION_TIMEOUT_S)
    c.start(timeout=CONNECT_TIMEOUT_S)
    return c


def ensure_path(client, path):
    try:
        client.ensure_path(path)
    except NodeExistsError:
        pass


def delete_tree(client, path):
    try:
        client.delete(path, recursive=True)
    except NoNodeError:
        pass


def proc_status_kb(field):
    """A "kB" field of /proc/self/status (VmRSS, VmHWM), or -1."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return -1


class CountingLock(Lock):
    """A kazoo Lock that counts how often it lists the contenders."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.listings = 0

    def _get_predecessor(self, node):
        self.listings += 1
        return super()._get_predecessor(node)


class Workers:
    """Runs functions on threads, keeping the first failure."""

    def __init__(self):
        self.threads = []
        self.failure = None

    def start(self, name, fn):
        def body():
            try:
                fn()
            except BaseException as e:      # reported by join_all()
                if self.failure is None:
                    self.failure = e
        t = threading.Thread(target=body, name=name, daemon=True)
        self.threads.append(t)
        t.start()

    def join_all(self):
        for t in self.threads:
            t.join()
        self.check()

    def check(self):
        if self.failure is not None:
            raise self.failure


class Result:
    def __init__(self, ops, elapsed_ns, latencies_ns):
        self.ops = ops
        self.elapsed_ns = elapsed_ns
        self.latencies_ns = latencies_ns
        self.bytes_per_lock = None
        self.wakeups_per_handoff = None
        self.join_seconds = None


# ----------------------------------------------------------------------
# Workloads

now_ns = time.monotonic_ns


def uncontended(client, lock_path, ops, meter):
    ensure_path(client, lock_path)
    lock = Lock(client, lock_path)
    lat = [0] * ops
    meter.begin()
    t0 = now_ns()
    for i in range(ops):
        a = now_ns()
        lock.acquire()
        lock.release()
        lat[i] = now_ns() - a
    t1 = now_ns()
    meter.end()
    return Result(ops, t1 - t0, lat)


def contended(sessions, lock_path, ops, meter):
    ensure_path(sessions[0], lock_path)
    # Ticket t (0 <= t < ops) is one acquisition; its latency goes to lat[t].
    lat = [0] * ops
    tickets = [0]
    ticket_mutex = threading.Lock()
    ready = threading.Barrier(len(sessions) + 1)
    go = threading.Event()

    def take_ticket():
        with ticket_mutex:
            t = tickets[0]
            tickets[0] += 1
            return t

    def contender(client):
        lock = Lock(client, lock_path)
        ready.wait()
        go.wait()
        try:
            while True:
                t = take_ticket()
                if t >= ops:
                    break
                a = now_ns()
                lock.acquire()
                lat[t] = now_ns() - a
                lock.release()
        except BaseException:
            with ticket_mutex:
                tickets[0] = ops            # stop the others
            raise

    w = Workers()
    for i, c in enumerate(sessions):
        w.start("contender-%d" % i, lambda c=c: contender(c))
    ready.wait()
    meter.begin()
    t0 = now_ns()
    go.set()
    w.join_all()
    t1 = now_ns()
    meter.end()
    return Result(ops, t1 - t0, lat)


def many(client, base, ops, meter):
    ensure_path(client, base)
    # The lock paths exist before the timed part, as in every implementation.
    for i in range(ops):
        ensure_path(client, "%s/%d" % (base, i))
    lat = [0] * ops
    held = []
    gc.collect()
    rss_before = proc_status_kb("VmRSS")
    meter.begin()
    t0 = now_ns()
    for i in range(ops):
        lock = Lock(client, "%s/%d" % (base, i))
        a = now_ns()
        lock.acquire()
        lat[i] = now_ns() - a
        held.append(lock)
    t1 = now_ns()
    gc.collect()                            # not part of the timing
    rss_held = proc_status_kb("VmRSS")
    t2 = now_ns()
    for lock in held:
        lock.release()
    t3 = now_ns()
    meter.end()
    r = Result(ops, (t1 - t0) + (t3 - t2), lat)
    r.bytes_per_lock = (rss_held - rss_before) * 1024.0 / ops
    return r


def herd(holder_session, waiter_sessions, lock_path, ops, meter):
    ensure_path(holder_session, lock_path)
    n = len(waiter_sessions)
    rounds = (ops + n - 1) // n
    handoffs = rounds * n
    lat = [0] * handoffs
    state = {"slot": 0, "last_release": 0, "last_done": 0}
    state_mutex = threading.Lock()
    holder = Lock(holder_session, lock_path)
    waiters = [CountingLock(c, lock_path) for c in waiter_sessions]
    busy_ns = 0

    def waiter(lock):
        lock.acquire()
        now = now_ns()
        with state_mutex:
            lat[state["slot"]] = now - state["last_release"]
            state["slot"] += 1
            state["last_release"] = now_ns()
        lock.release()
        done = now_ns()
        with state_mutex:
            state["last_done"] = max(state["last_done"], done)

    meter.begin()
    listings_before = sum(lk.listings for lk in waiters)
    for _ in range(rounds):
        holder.acquire()
        w = Workers()
        for i, lk in enumerate(waiters):
            w.start("waiter-%d" % i, lambda lk=lk: waiter(lk))
        # Wait until every waiter has its node in the queue.
        deadline = time.monotonic() + 120
        while len(holder_session.get_children(lock_path)) < n + 1:
            w.check()
            if time.monotonic() > deadline:
                raise RuntimeError("herd waiters did not queue up")
            time.sleep(0.005)
        time.sleep(HERD_SETTLE_S)
        t0 = now_ns()
        state["last_release"] = t0
        holder.release()
        w.join_all()
        busy_ns += state["last_done"] - t0
    listings_after = sum(lk.listings for lk in waiters)
    meter.end()

    r = Result(handoffs, busy_ns, lat)
    # Each acquisition lists the contenders once before it waits; every
    # further listing is a re-check after a wake-up.
    r.wakeups_per_handoff = (
        (listings_after - listings_before - handoffs) / handoffs)
    return r


def queue(sessions, lock_path, n, meter):
    """N waiter threads queue on one lock behind a holder, spread over the
    sessions round-robin; once every node is on the server (counted from the
    lock path's stat, not a listing) the holder releases and the lock passes
    through all of them. ops = handoffs."""
    admin = sessions[0]
    ensure_path(admin, lock_path)
    lat = [0] * n
    state = {"slot": 0, "last_release": 0, "last_done": 0}
    state_mutex = threading.Lock()
    holder = Lock(admin, lock_path)
    holder.acquire()
    waiters = [CountingLock(sessions[i % len(sessions)], lock_path) for i in range(n)]

    def waiter(lock):
        lock.acquire()
        now = now_ns()
        with state_mutex:
            lat[state["slot"]] = now - state["last_release"]
            state["slot"] += 1
            state["last_release"] = now_ns()
        lock.release()
        done = now_ns()
        with state_mutex:
            state["last_done"] = max(state["last_done"], done)

    threading.stack_size(256 * 1024)
    w = Workers()
    j0 = now_ns()
    for i, lk in enumerate(waiters):
        w.start("queuer-%d" % i, lambda lk=lk: waiter(lk))
    deadline = time.monotonic() + 300
    while admin.exists(lock_path).numChildren < n + 1:
        w.check()
        if time.monotonic() > deadline:
            raise RuntimeError("queue waiters did not join in 300 s")
        time.sleep(0.005)
    join_ns = now_ns() - j0
    time.sleep(HERD_SETTLE_S)
    listings_before = sum(lk.listings for lk in waiters)
    meter.begin()
    t0 = now_ns()
    state["last_release"] = t0
    holder.release()
    w.join_all()
    meter.end()
    listings_after = sum(lk.listings for lk in waiters)
    r = Result(n, state["last_done"] - t0, lat)
    r.wakeups_per_handoff = (listings_after - listings_before) / n
    r.join_seconds = join_ns / 1e9
    return r


def run_once(args, sessions, sub_path, ops, meter):
    if args.workload == "uncontended":
        return uncontended(sessions[0], sub_path, ops, meter)
    if args.workload == "contended":
        return contended(sessions, sub_path, ops, meter)
    if args.workload == "many":
        return many(sessions[0], sub_path, ops, meter)
    if args.workload == "queue":
        return queue(sessions, sub_path, ops, meter)
    return herd(sessions[0], sessions[1:], sub_path, ops, meter)


# ----------------------------------------------------------------------

def percentile_us(sorted_ns, p):
    if not sorted_ns:
        return 0
    idx = max(0, min(len(sorted_ns) - 1,
                     int(math.ceil(p * len(sorted_ns))) - 1))
    return int(round(sorted_ns[idx] / 1000.0))


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="kazoo_bench.py",
        description="Lock benchmark for kazoo (same CLI as CuratorBench).")
    p.add_argument("--servers", required=True)
    p.add_argument("--workload", required=True,
                   choices=["uncontended", "contended", "many", "herd", "queue"])
    p.add_argument("--clients", type=int, default=None)
    p.add_argument("--ops", type=int, default=None)
    p.add_argument("--waiters", type=int, default=100)
    p.add_argument("--warmup", type=int, default=0)
    p.add_argument("--path", default="/bench/kazoo")
    p.add_argument("--prefetch", action="store_true",
                   help="accepted and ignored")
    args = p.parse_args(argv)
    if args.workload in ("uncontended", "many"):
        args.clients = 1
    elif args.workload == "queue":
        args.clients = 4 if args.clients is None else args.clients
        if args.clients > 16:
            p.error("queue takes at most 16 sessions")
        args.ops, args.warmup = args.waiters, 0
    elif args.clients is None:
        args.clients = 8 if args.workload == "contended" else 100
    if args.ops is None:
        p.error("--ops is required")
    if args.clients < 1:
        p.error("--clients must be at least 1")
    if args.ops < 1:
        p.error("--ops must be at least 1")
    if args.warmup < 0:
        p.error("--warmup must not be negative")
    if (not args.path.startswith("/") or args.path == "/"
            or args.path.endswith("/")):
        p.error("--path must be an absolute znode path other than /")
    return args


def main(argv):
    args = parse_args(argv)
    # kazoo logs connection trouble; keep it to real errors, on stderr.
    logging.basicConfig(level=logging.ERROR, stream=sys.stderr)

    if args.workload in ("contended", "queue"):
        n_sessions = args.clients
    elif args.workload == "herd":
        n_sessions = args.clients + 1
    else:
        n_sessions = 1

    sessions = []
    status = 0
    try:
        for _ in range(n_sessions):
            sessions.append(connect(args.servers))
        admin = sessions[0]
        delete_tree(admin, args.path)       # leftovers of a failed run
        servers = server_list(args.servers)
        try:
            if args.warmup > 0:
                run_once(args, sessions, args.path + "/warmup", args.warmup,
                         Meter(servers, False))
            meter = Meter(servers, True)
            r = run_once(args, sessions, args.path + "/timed", args.ops,
                         meter)
            lat = sorted(r.latencies_ns)
            seconds = r.elapsed_ns / 1e9
            per_op = meter.per_op(r.ops)
            out = {
                "impl": "kazoo",
                "workload": args.workload,
                "clients": args.clients,
                "ops": r.ops,
                "seconds": round(seconds, 4),
                "ops_per_sec": round(r.ops / seconds if seconds > 0 else 0.0,
                                     1),
                "p50_us": percentile_us(lat, 0.50),
                "p99_us": percentile_us(lat, 0.99),
                "zk_requests_per_op": (None if per_op is None
                                       else round(per_op, 3)),
            }
            if r.bytes_per_lock is not None:
                out["bytes_per_lock"] = round(r.bytes_per_lock, 1)
            if r.wakeups_per_handoff is not None:
                out["wakeups_per_handoff"] = round(r.wakeups_per_handoff, 3)
            if r.join_seconds is not None:
                out["waiters"] = r.ops
                out["join_seconds"] = round(r.join_seconds, 3)
                out["join_us_per_waiter"] = round(r.join_seconds * 1e6 / r.ops, 1)
            out["peak_rss_kb"] = proc_status_kb("VmHWM")
            sys.stdout.write(json.dumps(out, separators=(",", ":")) + "\n")
            sys.stdout.flush()
        finally:
            delete_tree(admin, args.path)
    except Exception as e:              # noqa: BLE001 - report and fail
        print("kazoo_bench: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        status = 1
    finally:
        for c in sessions:
            try:
                c.stop()
                c.close()
            except Exception:           # noqa: BLE001 - closing anyway
                pass
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
