#!/usr/bin/env python3
"""nemesis.py - seeded random faults against zkl's locks, history checked.

Run by tests/nemesis/run.sh inside a private network namespace (unshare -n);
see docs/nemesis.md. Options:
  --build DIR     the build tree (tests/nemesis/nemesis-worker, tools/zkl)
  --seconds S     length of the fault schedule (default 90)
  --seed N        the schedule's seed (default: random, printed)
  --nodes 3|5     ensemble size (default 3)
  --session-ms MS the workers' session timeout (default 4000)
  --keep          keep the work directory (logs, stores, server logs)
  --only K[:W],.. draw only faults of these kinds (on these workers): a
                  targeted schedule (another draw than without it)
  --strict-margins a negative loss-presumption margin of a holder that was
                  not paused counts as a violation

What it does: brings up the namespace's loopback; starts the ensemble with
tests/zk-harness.sh, each server under a uid of its own (so nftables can
tell whose packets are whose: a connection is marked with its initiator's
uid); starts the workers (tests/nemesis/nemesis-worker, every recipe, and
`zkl lock` in a loop), each under a uid of its own, some through
tests/nemesis/delay-proxy.py; plays the schedule; heals everything; waits for
every worker to make progress; stops the workers; waits until no contender
node is left; then runs tests/history-check.py --nemesis over the history
and prints its verdict, ending with the line
  nemesis: seed S, N faults, M operations, V violations
Exit status: 0 when V is 0, 1 otherwise, 2 when the run could not be set up.
"""
import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
HARNESS = os.path.join(SRC, "tests", "zk-harness.sh")
CHECKER = os.path.join(SRC, "tests", "history-check.py")

SERVER_UID = 61000   # + node index
WORKER_UID = 62000   # + worker number

# The workers: name, kind, lock paths (keys of PATHS), threads, through the
# delaying proxy. The mutex path is shared by the plain mutex, the prefetch
# mutex, a multi-lock member and `zkl lock`, so they all exclude each other.
PATHS = {"M": "mutex", "B": "multi-b", "SM": "semmutex", "S": "sem3", "RW": "rw",
         "E": "election"}
WORKERS = [
    ("mutex", "mutex", ["M"], 1, False),
    ("prefetch", "prefetch", ["M"], 1, True),
    ("multi", "multi", ["M", "B"], 1, False),
    ("cli", "cli", ["M"], 1, False),
    ("semmutex-a", "semmutex", ["SM"], 1, False),
    ("semmutex-b", "semmutex", ["SM"], 1, True),
    ("sem-a", "sem", ["S"], 2, False),
    ("sem-b", "sem", ["S"], 2, True),
    ("reader", "read", ["RW"], 2, True),
    ("writer", "write", ["RW"], 2, False),
    ("elect-a", "elect", ["E"], 1, False),
    ("elect-b", "elect", ["E"], 2, True),
]
SEM_MAX = 3
# Workers whose holds last seconds (a fenced write every 250 ms): faults hit
# them while they hold and work, which is what the loss timing is about.
LONG_HOLDERS = {"semmutex-a": 9000, "writer": 1500, "elect-a": 1500}

# Fault kinds and their weights in a schedule.
KINDS = [
    ("isolate-leader", 3), ("isolate-follower", 3), ("cut-client", 3), ("isolate-client", 2),
    ("oneway-servers", 2), ("oneway-client", 2), ("delay-loss", 2),
    ("pause-client", 2), ("kill-client", 2), ("kill-server", 2), ("kill-leader", 2),
]
SERVER_KINDS = {"isolate-leader", "isolate-follower", "oneway-servers", "kill-server",
                "kill-leader"}


def now_ns():
    return time.time_ns()


class Run:
    def __init__(self, a):
        self.a = a
        self.work = tempfile.mkdtemp(prefix="zkl-nemesis.")
        os.chmod(self.work, 0o777)
        self.zkdir = os.path.join(self.work, "zk")
        self.stores = os.path.join(self.work, "stores")
        os.makedirs(self.stores, mode=0o777)
        os.chmod(self.stores, 0o777)
        self.log = os.path.join(self.work, "history.jsonl")
        self.stop_file = os.path.join(self.work, "stop")
        self.lock = threading.Lock()
        self.procs = {}      # worker name -> Popen (the cli: the running zkl)
        self.cli_stop = threading.Event()
        self.rules = {}      # fault id -> nft rule lines
        self.root = "/nemesis-%d" % os.getpid()
        self.proxy = None
        self.proxy_ports = {}  # worker -> [port per node]
        self.ports = {}        # node -> (client, quorum, election)
        self.nodes = a.nodes
        self.pending = []      # background threads (server restarts)
        fd = os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)
        os.close(fd)
        os.chmod(self.log, 0o666)

    # ---- the history -------------------------------------------------------
    def record(self, **kv):
        kv.setdefault("t", now_ns())
        line = json.dumps(kv, separators=(",", ":")) + "\n"
        fd = os.open(self.log, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)

    def say(self, msg):
        print("nemesis: [%6.1f] %s" % (time.monotonic() - self.t0, msg), flush=True)

    # ---- the ensemble -------------------------------------------------------
    def harness(self, *args, check=True, timeout=120):
        r = subprocess.run([HARNESS] + list(args), capture_output=True, text=True,
                           timeout=timeout)
        if check and r.returncode != 0:
            raise RuntimeError("zk-harness %s: %s" % (" ".join(args), r.stderr.strip()[-2000:]))
        return r.stdout.strip()

    def java_wrapper(self):
        """ZKL_JAVA: run node I's JVM as uid SERVER_UID+I, owning its directory."""
        java = shutil.which("java") or "/usr/bin/java"
        path = os.path.join(self.work, "java-as-node")
        with open(path, "w") as f:
            f.write("""#!/bin/sh
n=
for a in "$@"; do
    case $a in -Dzkl.harness.node=*) nd=${a#-Dzkl.harness.node=}; n=${nd##*/node} ;; esac
done
[ -n "$n" ] || exec %s "$@"
uid=$((%d + n))
chown -R "$uid:$uid" "$nd/data"
exec setpriv --reuid="$uid" --regid="$uid" --clear-groups %s "$@"
""" % (java, SERVER_UID, java))
        os.chmod(path, 0o755)
        return path

    def start_ensemble(self):
        env = dict(os.environ, ZKL_JAVA=self.java_wrapper(),
                   ZKL_ZK_PORT_DIR=os.path.join(self.work, "ports"))
        os.environ.update(env)
        os.makedirs(self.zkdir)
        os.chmod(self.zkdir, 0o755)
        self.hosts = self.harness("start", self.zkdir, "--nodes", str(self.nodes), "--tick", "200",
                                  "--owner", str(os.getpid()), timeout=300).splitlines()[-1]
        for i in range(1, self.nodes + 1):
            with open(os.path.join(self.zkdir, "node%d" % i, "ports")) as f:
                self.ports[i] = tuple(int(x) for x in f.read().split())

    def leader(self):
        for _ in range(100):
            r = subprocess.run([HARNESS, "leader", self.zkdir], capture_output=True, text=True)
            if r.returncode == 0 and r.stdout.strip().isdigit():
                return int(r.stdout.strip())
            time.sleep(0.2)
        return None

    # ---- nftables -------------------------------------------------------------
    def uids(self):
        return [SERVER_UID + i for i in range(1, self.nodes + 1)] + \
               [WORKER_UID + i for i in range(1, len(WORKERS) + 1)]

    def apply_rules(self):
        lines = ["table inet nemesis {",
                 "  chain out {",
                 "    type filter hook output priority 0; policy accept;"]
        for u in self.uids():
            lines.append("    ct state new meta skuid %d ct mark set %d" % (u, u))
        with self.lock:
            for rl in self.rules.values():
                lines.extend("    " + r for r in rl)
        lines += ["  }", "}"]
        text = "table inet nemesis\ndelete table inet nemesis\n" + "\n".join(lines) + "\n"
        r = subprocess.run(["nft", "-f", "-"], input=text, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("nft: %s\n%s" % (r.stderr, text))

    def server_cut(self, a, b, oneway=False):
        """Rules cutting servers a and b apart (only a -> b if oneway)."""
        ua, ub = SERVER_UID + a, SERVER_UID + b
        qa, ea = self.ports[a][1:3]
        qb, eb = self.ports[b][1:3]
        d1 = " ct direction original" if oneway else ""
        d2 = " ct direction reply" if oneway else ""
        return ["meta l4proto tcp ct mark %d ct original proto-dst { %d, %d }%s drop" % (ua, qb, eb, d1),
                "meta l4proto tcp ct mark %d ct original proto-dst { %d, %d }%s drop" % (ub, qa, ea, d2)]

    def client_ports(self, w, node):
        ports = [self.ports[node][0]]
        if w in self.proxy_ports:
            ports.append(self.proxy_ports[w][node - 1])
        return ports

    # ---- workers --------------------------------------------------------------
    def worker_hosts(self, w):
        if w in self.proxy_ports:
            return ",".join("127.0.0.1:%d" % p for p in self.proxy_ports[w])
        return self.hosts

    def start_proxy(self):
        # The proxy binds port 0 and says which port each map got: a port
        # found free here and bound there later can be taken in between.
        maps, order = [], []
        for w, _, _, _, proxied in WORKERS:
            if not proxied:
                continue
            for i in range(1, self.nodes + 1):
                order.append(w)
                maps += ["--map", "%s:0:127.0.0.1:%d" % (w, self.ports[i][0])]
        self.proxy = subprocess.Popen([sys.executable, os.path.join(HERE, "delay-proxy.py"),
                                       "--dir", self.work] + maps, stdout=subprocess.PIPE,
                                      text=True)
        words = self.proxy.stdout.readline().split()
        if not words or words[0] != "ready" or len(words) != len(order) + 1:
            raise RuntimeError("delay proxy did not start")
        for w, port in zip(order, words[1:]):
            self.proxy_ports.setdefault(w, []).append(int(port))

    def worker_uid(self, w):
        return WORKER_UID + 1 + [x[0] for x in WORKERS].index(w)

    def spawn(self, w):
        name, kind, paths, threads, _ = next(x for x in WORKERS if x[0] == w)
        full = ",".join("%s/%s" % (self.root, PATHS[p]) for p in paths)
        if kind == "cli":
            return  # the cli loop thread runs it
        args = [os.path.join(self.a.build, "tests", "nemesis", "nemesis-worker"),
                "--kind", kind, "--servers", self.worker_hosts(w), "--paths", full,
                "--log", self.log, "--store-dir", self.stores, "--name", w,
                "--threads", str(threads), "--stop-file", self.stop_file,
                "--hold-ms", "60", "--session-ms", str(self.a.session_ms),
                "--sem-max", str(SEM_MAX), "--uid", str(self.worker_uid(w))]
        if w in LONG_HOLDERS:
            args += ["--long-hold-ms", str(LONG_HOLDERS[w])]
        p = subprocess.Popen(args, stdout=subprocess.DEVNULL,
                             stderr=open(os.path.join(self.work, w + ".err"), "a"))
        with self.lock:
            self.procs[w] = p
        self.record(ev="spawn", w=w, pid=p.pid)

    def cli_loop(self):
        zkl = os.path.join(self.a.build, "tools", "zkl")
        worker = os.path.join(self.a.build, "tests", "nemesis", "nemesis-worker")
        path = "%s/%s" % (self.root, PATHS["M"])
        uid = self.worker_uid("cli")
        while not self.cli_stop.is_set():
            args = ["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups",
                    zkl, "lock", "-S", self.hosts, "--session-timeout", str(self.a.session_ms),
                    "-w", "10", path, "--", worker, "--kind", "cli-hold", "--paths", path,
                    "--log", self.log, "--store-dir", self.stores, "--name", "cli",
                    "--hold-ms", "60"]
            try:
                p = subprocess.Popen(args, stdout=subprocess.DEVNULL,
                                     stderr=open(os.path.join(self.work, "cli.err"), "a"))
            except OSError as e:
                # said in the history (the checker counts it), not a dead loop
                self.record(ev="cli-error", w="cli", err=str(e))
                time.sleep(0.2)
                continue
            with self.lock:
                self.procs["cli"] = p
            rc = p.wait()
            self.record(ev="cli-exit", w="cli", rc=rc)
            if rc not in (0, 1):
                time.sleep(0.2)

    def worker_pid(self, w):
        with self.lock:
            p = self.procs.get(w)
        return p.pid if p and p.poll() is None else None

    def current_server(self, w):
        """The node whose client port (or proxy port) worker w is connected to."""
        pid = self.worker_pid(w)
        if pid is None:
            return None
        r = subprocess.run(["ss", "-tnpH", "state", "established"], capture_output=True,
                           text=True)
        for line in r.stdout.splitlines():
            if "pid=%d," % pid not in line:
                continue
            peer = int(line.split()[3].rsplit(":", 1)[1])
            for i in range(1, self.nodes + 1):
                if peer in self.client_ports(w, i):
                    return i
        return None

    # ---- the schedule -------------------------------------------------------------
    def schedule(self):
        rng = random.Random(self.a.seed)
        names = [x[0] for x in WORKERS]
        kinds = [k for k, wt in KINDS for _ in range(wt)]
        if self.a.only:
            # a targeted schedule: these kinds, on these workers only
            kinds = [k for k, _ in self.a.only]
            names = sorted({w for _, w in self.a.only if w}) or names
        out, t, T = [], 2.0, float(self.a.seconds)
        sess = self.a.session_ms / 1000.0
        while True:
            t += rng.uniform(1.5, 5.0)
            if t > T - 3:
                break
            kind = rng.choice(kinds)
            if kind in ("pause-client", "isolate-client"):
                dur = sess * rng.uniform(1.5, 2.5)
            elif kind in ("kill-client",):
                dur = rng.uniform(0.5, 4.0)
            elif kind in ("kill-server", "kill-leader"):
                dur = rng.uniform(3.0, 10.0)
            elif kind == "delay-loss":
                dur = rng.uniform(5.0, 15.0)
            else:
                dur = rng.uniform(2.0, 3.0 * sess)
            dur = min(dur, T - t)
            f = {"start": round(t, 2), "end": round(t + dur, 2), "kind": kind,
                 "worker": rng.choice(names), "pick": rng.random(), "pick2": rng.random()}
            # Room for it: a majority of servers stays whole, one fault per worker.
            srv = [g for g in out if g["kind"] in SERVER_KINDS and g["end"] > t]
            busy = {g["worker"] for g in out if g["kind"] not in SERVER_KINDS and g["end"] > t}
            if kind in SERVER_KINDS and len(srv) >= (self.nodes - 1) // 2:
                continue
            if kind not in SERVER_KINDS and (f["worker"] in busy or len(busy) >= 3):
                continue
            if kind == "pause-client" and f["worker"] == "cli":
                f["worker"] = "mutex"
                if "mutex" in busy:
                    continue
            out.append(f)
        return out

    def begin(self, fid, f):
        kind, w = f["kind"], f["worker"]
        info = {}
        if kind in ("isolate-leader", "isolate-follower", "oneway-servers", "kill-server",
                    "kill-leader"):
            lead = self.leader()
            others = [i for i in range(1, self.nodes + 1) if i != lead]
            if kind in ("isolate-leader", "kill-leader") or lead is None:
                node = lead or 1
            else:
                node = others[int(f["pick"] * len(others))]
            info["node"] = node
            info["leader"] = lead
            if kind.startswith("isolate"):
                rl = []
                for b in range(1, self.nodes + 1):
                    if b != node:
                        rl += self.server_cut(node, b)
                with self.lock:
                    self.rules[fid] = rl
                self.apply_rules()
            elif kind == "oneway-servers":
                peers = [i for i in range(1, self.nodes + 1) if i != node]
                b = peers[int(f["pick2"] * len(peers))]
                info["to"] = b
                with self.lock:
                    self.rules[fid] = self.server_cut(node, b, oneway=True)
                self.apply_rules()
            else:
                self.harness("kill-node", self.zkdir, str(node), check=False)
        elif kind in ("cut-client", "oneway-client"):
            node = self.current_server(w) or 1 + int(f["pick"] * self.nodes)
            info["node"] = node
            u = self.worker_uid(w)
            ports = ", ".join(str(p) for p in self.client_ports(w, node))
            d = " ct direction original" if kind == "oneway-client" else ""
            if kind == "oneway-client" and f["pick2"] < 0.5:
                d = " ct direction reply"
            info["dir"] = d.strip() or "both"
            with self.lock:
                self.rules[fid] = ["meta l4proto tcp ct mark %d ct original proto-dst { %s }%s drop"
                                   % (u, ports, d)]
            self.apply_rules()
        elif kind == "isolate-client":
            # every connection of the worker, to any server or proxy port
            with self.lock:
                self.rules[fid] = ["meta l4proto tcp ct mark %d drop" % self.worker_uid(w)]
            self.apply_rules()
        elif kind == "delay-loss":
            u = self.worker_uid(w)
            with self.lock:
                self.rules[fid] = ["meta l4proto tcp ct mark %d numgen random mod 100 < 5 drop" % u]
            self.apply_rules()
            if w in self.proxy_ports:
                with open(os.path.join(self.work, "delay-" + w), "w") as fh:
                    fh.write("200\n")
                info["delay_ms"] = 200
        elif kind == "pause-client":
            pid = self.worker_pid(w)
            info["pid"] = pid
            if pid:
                os.kill(pid, signal.SIGSTOP)
        elif kind == "kill-client":
            with self.lock:
                p = self.procs.get(w)
            if p and p.poll() is None:
                info["pid"] = p.pid
                p.kill()
                p.wait()
                self.record(ev="kill", w=w, pid=p.pid)
        return info

    def end(self, fid, f, info):
        kind, w = f["kind"], f["worker"]
        with self.lock:
            had = self.rules.pop(fid, None)
        if had is not None:
            self.apply_rules()
        if kind == "delay-loss" and w in self.proxy_ports:
            with open(os.path.join(self.work, "delay-" + w), "w") as fh:
                fh.write("0\n")
        elif kind == "pause-client" and info.get("pid"):
            try:
                os.kill(info["pid"], signal.SIGCONT)
            except ProcessLookupError:
                pass
        elif kind == "kill-client" and w != "cli":
            if not os.path.exists(self.stop_file):
                self.spawn(w)
        elif kind in ("kill-server", "kill-leader"):
            node = info["node"]

            def restart():
                r = subprocess.run([HARNESS, "start-node", self.zkdir, str(node)],
                                   capture_output=True, text=True)
                self.record(ev="restarted", node=node, rc=r.returncode)
            th = threading.Thread(target=restart)
            th.start()
            self.pending.append(th)

    def play(self, faults):
        events = []
        for i, f in enumerate(faults):
            events.append((f["start"], 1, i))
            events.append((f["end"], 0, i))
        events.sort()
        infos = {}
        for at, is_start, i in events:
            wait = self.t0 + at - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            f = faults[i]
            if is_start:
                infos[i] = self.begin(i, f)
                self.record(ev="fault", id=i, kind=f["kind"],
                            worker=None if f["kind"] in SERVER_KINDS else f["worker"],
                            **{k: v for k, v in infos[i].items() if v is not None})
                self.say("fault %d %s %s %s" % (i, f["kind"], f["worker"] if f["kind"] not in
                                               SERVER_KINDS else "", infos[i]))
            else:
                self.end(i, f, infos[i])
                self.record(ev="heal", id=i, kind=f["kind"])
                self.say("heal %d %s" % (i, f["kind"]))
        # Nothing is faulty any more: the rules are gone, every server is
        # restarted, every paused worker runs.
        for th in self.pending:
            th.join(120)
        with self.lock:
            self.rules.clear()
        self.apply_rules()
        self.record(ev="healed")
        self.say("all healed")

    # ---- settling ----------------------------------------------------------------
    def progressed_since(self, t):
        seen = set()
        with open(self.log) as fh:
            for line in fh:
                try:
                    e = json.loads(line)
                except ValueError:
                    continue
                if e.get("ev") == "acq" and e["t"] >= t:
                    seen.add(e["w"])
        return seen

    def settle(self):
        t = now_ns()
        names = {x[0] for x in WORKERS}
        deadline = time.monotonic() + self.a.settle
        while time.monotonic() < deadline:
            if names <= self.progressed_since(t):
                break
            time.sleep(0.5)
        time.sleep(2.0)  # a little more history after the last worker came back

    def stop_workers(self):
        self.record(ev="stop")
        open(self.stop_file, "w").close()
        self.cli_stop.set()
        deadline = time.monotonic() + 30
        for w in list(self.procs):
            p = self.procs[w]
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
                if w != "cli":
                    # 0 when it stopped as told; anything else: it died on
                    # its own during the run (crash, failed open, ...)
                    self.record(ev="ended", w=w, pid=p.pid, rc=p.returncode)
            except subprocess.TimeoutExpired:
                self.record(ev="stuck", w=w, pid=p.pid)
                p.kill()
                p.wait()
                self.record(ev="kill", w=w, pid=p.pid)
        if self.cli_thread:
            self.cli_thread.join(30)

    def orphans(self):
        """Wait until no contender is left under the lock paths; record the rest."""
        from kazoo.client import KazooClient
        import logging
        logging.getLogger("kazoo").setLevel(logging.CRITICAL)
        zk = KazooClient(hosts=self.hosts, timeout=10)
        zk.start(timeout=30)
        deadline = time.monotonic() + 2 * self.a.session_ms / 1000.0 + 10
        left = []
        while True:
            left = []
            for p in PATHS.values():
                full = "%s/%s" % (self.root, p)
                if zk.exists(full):
                    left += ["%s/%s" % (full, k) for k in zk.get_children(full)]
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        for n in left:
            st = zk.exists(n)
            self.record(ev="orphan", node=n, owner=st.ephemeralOwner if st else None)
        self.record(ev="settled", left=len(left))
        zk.delete(self.root, recursive=True)
        zk.stop()
        zk.close()

    def main(self):
        self.t0 = time.monotonic()
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        print("nemesis: seed %d, %d s, %d nodes, work directory %s" %
              (self.a.seed, self.a.seconds, self.nodes, self.work), flush=True)
        # Workers run under their own uids: the build tree must be theirs to
        # run (a checkout in a 0700 directory is not), else the cli worker
        # would fail every time and show up only as "no progress".
        zkl = os.path.join(self.a.build, "tools", "zkl")
        uid = self.worker_uid("cli")
        probe = subprocess.run(["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid,
                                "--clear-groups", zkl, "--version"], capture_output=True)
        if probe.returncode != 0:
            raise RuntimeError("uid %d cannot run %s (is a directory above it private?): %s" %
                               (uid, zkl, probe.stderr.decode(errors="replace").strip()))
        faults = self.schedule()
        self.say("schedule: %d faults (replay: NEMESIS_SEED=%d NEMESIS_SECONDS=%d)" %
                 (len(faults), self.a.seed, self.a.seconds))
        self.record(ev="run", seed=self.a.seed, seconds=self.a.seconds, nodes=self.nodes,
                    workers=[x[0] for x in WORKERS], sem_max=SEM_MAX,
                    session_ms=self.a.session_ms,
                    paths={k: "%s/%s" % (self.root, v) for k, v in PATHS.items()},
                    stores=self.stores)
        # The stores, writable by every worker's uid (fenced_store creates
        # a missing one 0644, which the next uid could not write).
        for v in PATHS.values():
            st = os.path.join(self.stores, ("%s/%s" % (self.root, v)).replace("/", "_") + ".store")
            os.close(os.open(st, os.O_WRONLY | os.O_CREAT, 0o666))
            os.chmod(st, 0o666)
        self.apply_rules()   # the marking rules, before any connection
        self.start_ensemble()
        self.say("ensemble up: %s" % self.hosts)
        self.start_proxy()
        self.t0 = time.monotonic()
        self.record(ev="start")
        for w, *_ in WORKERS:
            self.spawn(w)
        self.cli_thread = threading.Thread(target=self.cli_loop, daemon=True)
        self.cli_thread.start()
        self.play(faults)
        self.settle()
        self.stop_workers()
        self.orphans()
        self.say("workers stopped, lock paths checked")
        r = subprocess.run([sys.executable, CHECKER, "--nemesis", self.log] +
                           (["--strict-margins"] if self.a.strict_margins else []))
        if r.returncode != 0:
            self.a.keep = True  # the history, the workers' and servers' logs tell why
        return r.returncode

    def cleanup(self):
        open(self.stop_file, "a").close()
        self.cli_stop.set()
        with self.lock:
            procs = list(self.procs.values())
        for p in procs:
            if p.poll() is None:
                try:
                    os.kill(p.pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
                p.kill()
                p.wait()
        if self.proxy and self.proxy.poll() is None:
            self.proxy.kill()
            self.proxy.wait()
        if os.path.exists(self.zkdir):
            subprocess.run([HARNESS, "stop", self.zkdir], capture_output=True)
        if self.a.keep:
            print("nemesis: keeping %s" % self.work, flush=True)
        else:
            shutil.rmtree(self.work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--seconds", type=int, default=90)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--nodes", type=int, default=3, choices=(3, 5))
    ap.add_argument("--session-ms", type=int, default=4000)
    ap.add_argument("--settle", type=int, default=40)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--strict-margins", action="store_true")
    a = ap.parse_args()
    a.only = [(x.split(":", 1) + [None])[:2] for x in a.only.split(",") if x]
    for k, w in a.only:
        if k not in dict(KINDS) or (w is not None and w not in [x[0] for x in WORKERS]):
            ap.error("--only: no fault kind %r or worker %r" % (k, w))
    if a.seed is None:
        a.seed = random.SystemRandom().randrange(1, 2**31)
    run = Run(a)
    run.cli_thread = None

    def on_signal(sig, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_signal)
    rc = 2
    try:
        rc = run.main()
    except KeyboardInterrupt:
        print("nemesis: interrupted (seed %d)" % a.seed, flush=True)
        rc = 130
    except Exception as e:  # setup failed: say so, clean up
        print("nemesis: ERROR: %s (seed %d)" % (e, a.seed), flush=True)
        rc = 2
        a.keep = True
    finally:
        run.cleanup()
    return rc


if __name__ == "__main__":
    sys.exit(main())
