/*
 * CuratorBench - lock benchmark for Apache Curator 5.4 (InterProcessMutex).
 *
 * It is the Java reference point for the zkl benchmarks; bench/kazoo_bench.py
 * implements the same command line and output for Python kazoo.
 *
 * Usage:
 *   CuratorBench --servers HOST:PORT[,...]
 *                --workload uncontended|contended|many|herd
 *                --clients N --ops N [--warmup N] [--path /bench/x]
 *                [--prefetch]
 *
 * Normally started through bench/run-curator.sh, which compiles this file
 * and supplies the classpath.  Stdout receives exactly one JSON line, e.g.
 *
 *   {"impl":"curator","workload":"contended","clients":8,"ops":2000,
 *    "seconds":2.1,"ops_per_sec":952.4,"p50_us":7281,"p99_us":17640,
 *    "zk_requests_per_op":4.0,"peak_rss_kb":123456}
 *
 * Workloads (every session is its own CuratorFramework client):
 *   uncontended  one session, one thread: `ops` acquire+release cycles of
 *                one mutex.  Latency = one whole cycle.
 *   contended    `clients` sessions, one thread each, on one mutex path.
 *                The threads draw tickets from a shared counter until `ops`
 *                acquisitions have been made; every acquire is followed at
 *                once by a release.  Latency = from calling acquire() until
 *                it returns holding the lock.
 *   many         one session acquires `ops` distinct mutexes (PATH/0,
 *                PATH/1, ..., made before the timed part in every
 *                implementation), keeps them all, then releases them all.
 *                Latency = one acquire.  Adds "bytes_per_lock": growth of
 *                the JVM heap in use (measured after System.gc(), before the
 *                first acquire and while all locks are held) divided by
 *                `ops`.  This is heap, not RSS: the JVM's RSS barely moves
 *                when objects are allocated in an already reserved heap.
 *   queue        --waiters N threads queue on one lock behind a holder over
 *                `clients` (<= 16) sessions; then the lock passes through
 *                all of them: ops = N handoffs (as tools/zkl-bench).
 *   herd         one session holds the lock while `clients` waiters
 *                (default 100), each with its own session and thread, queue
 *                behind it.  Once all waiter nodes exist (plus a 200 ms
 *                pause so that every waiter has set its watch) the holder
 *                releases and the lock is handed through all waiters, each
 *                releasing at once.  One such round gives `clients`
 *                handoffs; ceil(ops / clients) rounds are run and "ops" in
 *                the output is the number of handoffs.  Latency = from the
 *                previous owner calling release() until the next owner's
 *                acquire() returns.  "seconds" sums the handoff phases only
 *                (not the queueing).  Adds "wakeups_per_handoff": see
 *                RecheckCounter below.
 *   elect        `clients` candidates (default 4) of one LeaderLatch
 *                election, each leader resigning at once (close) and
 *                joining again with a new latch: ops = leaderships.
 *                Latency = from a resignation to the next leader's await()
 *                returning (as tools/zkl-bench).
 *   elect-kill   `ops` times (default 5), a leader in a JVM of its own
 *                (this program with --elect-child) is SIGKILLed while one
 *                candidate of ours follows.  Latency = from the SIGKILL to
 *                our await() returning: the server's expiry of the dead
 *                session, then the handover.  --session-timeout MS sets
 *                every session's timeout (default 30000).
 *
 * --warmup N runs the same workload with N operations, untimed, on the
 * sub-path PATH/warmup before the timed run on PATH/timed.  --prefetch is
 * accepted for command-line compatibility with the C benchmark and ignored.
 *
 * zk_requests_per_op: zk_packets_received is read with the "mntr" four
 * letter word from every server in --servers just before and just after the
 * timed part; (after - before - number of servers) / ops.  One server
 * subtracts one because the second mntr counts itself.  Session pings that
 * fall into the timed part are included.  It is null when mntr is not
 * available (4lw.commands.whitelist).  For herd the bracket covers the
 * queueing too, so it counts every request a waiter makes.
 *
 * peak_rss_kb is VmHWM from /proc/self/status (whole JVM).
 *
 * PATH (default /bench/curator) is deleted recursively before and after the
 * run.  Exit status: 0 success, 1 error, 2 bad usage.
 */

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.curator.drivers.TracerDriver;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.KeeperException;

public final class CuratorBench {

    static final int SESSION_TIMEOUT_MS = 30000;
    static final int CONNECT_TIMEOUT_MS = 15000;
    /** Pause after all herd waiters are queued, so their watches are set. */
    static final int HERD_SETTLE_MS = 200;

    // ------------------------------------------------------------------
    // Command line

    static final class Options {
        String servers;
        String workload;
        int clients = -1;       // -1: workload default
        int ops = -1;
        int warmup = 0;
        int waiters = 100;      // queue
        String path = "/bench/curator";
        int sessionMs = SESSION_TIMEOUT_MS;
    }

    /** Every session's timeout (--session-timeout). */
    static int sessionTimeoutMs = SESSION_TIMEOUT_MS;

    static final class UsageError extends Exception {
        UsageError(String msg) {
            super(msg);
        }
    }

    static final String USAGE =
        "usage: CuratorBench --servers HOST:PORT[,...] "
        + "--workload uncontended|contended|many|herd|queue|elect|elect-kill --clients N --ops N "
        + "[--warmup N] [--path /bench/x] [--prefetch] [--waiters N] [--session-timeout MS]";

    static Options parse(String[] args) throws UsageError {
        Options o = new Options();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("--prefetch")) {
                continue;                       // accepted, ignored
            }
            if (i + 1 >= args.length) {
                throw new UsageError("missing value for " + a);
            }
            String v = args[++i];
            switch (a) {
            case "--servers": o.servers = v; break;
            case "--workload": o.workload = v; break;
            case "--clients": o.clients = parseCount(a, v); break;
            case "--ops": o.ops = parseCount(a, v); break;
            case "--warmup": o.warmup = parseCount(a, v); break;
            case "--path": o.path = v; break;
            case "--waiters": o.waiters = parseCount(a, v); break;
            case "--session-timeout": o.sessionMs = parseCount(a, v); break;
            default: throw new UsageError("unknown option " + a);
            }
        }
        if (o.servers == null || o.servers.isEmpty()) {
            throw new UsageError("--servers is required");
        }
        if (o.workload == null) {
            throw new UsageError("--workload is required");
        }
        switch (o.workload) {
        case "uncontended":
        case "many":
            o.clients = 1;
            break;
        case "contended":
            if (o.clients < 0) o.clients = 8;
            break;
        case "herd":
            if (o.clients < 0) o.clients = 100;
            break;
        case "elect":
            if (o.clients < 0) o.clients = 4;
            break;
        case "elect-kill":
            o.clients = 1;
            if (o.ops < 0) o.ops = 5;
            o.warmup = 0;
            break;
        case "queue":
            if (o.clients < 0) o.clients = 4;
            if (o.clients > 16) throw new UsageError("queue takes at most 16 sessions");
            o.ops = o.waiters;
            o.warmup = 0;
            break;
        default:
            throw new UsageError("unknown workload " + o.workload);
        }
        if (o.clients < 1) {
            throw new UsageError("--clients must be at least 1");
        }
        if (o.ops < 1) {
            throw new UsageError("--ops must be at least 1");
        }
        if (!o.path.startsWith("/") || o.path.length() < 2
            || o.path.endsWith("/")) {
            throw new UsageError("--path must be an absolute znode path "
                                 + "other than /");
        }
        return o;
    }

    static int parseCount(String opt, String v) throws UsageError {
        try {
            int n = Integer.parseInt(v);
            if (n < 0) throw new NumberFormatException();
            return n;
        } catch (NumberFormatException e) {
            throw new UsageError(opt + " needs a non-negative integer");
        }
    }

    // ------------------------------------------------------------------
    // ZooKeeper server statistics ("mntr")

    /** host:port pairs of --servers, without a chroot suffix. */
    static List<String> serverList(String servers) {
        String s = servers;
        int slash = s.indexOf('/');
        if (slash >= 0) s = s.substring(0, slash);
        List<String> out = new ArrayList<>();
        for (String hp : s.split(",")) {
            if (!hp.trim().isEmpty()) out.add(hp.trim());
        }
        return out;
    }

    /** Sends a four letter word and returns the whole reply. */
    static String fourLetterWord(String hostPort, String word)
        throws IOException {
        int colon = hostPort.lastIndexOf(':');
        String host = colon > 0 ? hostPort.substring(0, colon) : hostPort;
        int port = colon > 0 ? Integer.parseInt(hostPort.substring(colon + 1))
                             : 2181;
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(host, port), 5000);
            s.setSoTimeout(5000);
            OutputStream os = s.getOutputStream();
            os.write(word.getBytes(StandardCharsets.US_ASCII));
            os.flush();
            InputStream is = s.getInputStream();
            ByteArrayOutputStream buf = new ByteArrayOutputStream();
            byte[] b = new byte[8192];
            int n;
            while ((n = is.read(b)) > 0) {       // server closes at the end
                buf.write(b, 0, n);
            }
            return buf.toString(StandardCharsets.UTF_8);
        }
    }

    /** Sum of zk_packets_received over all servers, or -1 if unavailable. */
    static long packetsReceived(List<String> servers) {
        long sum = 0;
        for (String hp : servers) {
            long v = -1;
            try {
                for (String line : fourLetterWord(hp, "mntr").split("\n")) {
                    String[] kv = line.trim().split("\\s+");
                    if (kv.length == 2 && kv[0].equals("zk_packets_received")) {
                        v = Long.parseLong(kv[1]);
                    }
                }
            } catch (IOException | NumberFormatException e) {
                v = -1;
            }
            if (v < 0) {
                System.err.println("CuratorBench: no zk_packets_received from "
                                   + hp + " (is mntr whitelisted?)");
                return -1;
            }
            sum += v;
        }
        return sum;
    }

    /** Brackets the timed part of a run with two mntr readings. */
    static final class Meter {
        final List<String> servers;
        final boolean enabled;
        long before = -1, after = -1;

        Meter(List<String> servers, boolean enabled) {
            this.servers = servers;
            this.enabled = enabled;
        }

        void begin() {
            if (enabled) before = packetsReceived(servers);
        }

        void end() {
            if (enabled) after = packetsReceived(servers);
        }

        /** Requests per operation, or null if a reading failed. */
        Double perOp(int ops) {
            if (before < 0 || after < 0) return null;
            // The second mntr counts itself once on every server.
            return (double) (after - before - servers.size()) / ops;
        }
    }

    // ------------------------------------------------------------------
    // Sessions and helpers

    /**
     * Opens `n` sessions.  All clients are started first and then waited
     * for, so the connection handshakes overlap.
     */
    static List<CuratorFramework> connectAll(String servers, int n,
                                             List<CuratorFramework> opened)
        throws Exception {
        for (int i = 0; i < n; i++) {
            CuratorFramework c = CuratorFrameworkFactory.builder()
                .connectString(servers)
                .sessionTimeoutMs(sessionTimeoutMs)
                .connectionTimeoutMs(CONNECT_TIMEOUT_MS)
                .retryPolicy(new ExponentialBackoffRetry(100, 3))
                .build();
            opened.add(c);                  // closed by the caller
            c.start();
        }
        long deadline = System.nanoTime()
            + TimeUnit.MILLISECONDS.toNanos(CONNECT_TIMEOUT_MS);
        for (CuratorFramework c : opened) {
            long left = deadline - System.nanoTime();
            if (!c.blockUntilConnected((int) Math.max(1, left / 1_000_000),
                                       TimeUnit.MILLISECONDS)) {
                throw new IOException("cannot connect to " + servers);
            }
        }
        return opened;
    }

    /** Closes sessions in parallel (each close waits for the server). */
    static void closeAll(List<CuratorFramework> sessions) {
        List<Thread> closers = new ArrayList<>();
        for (CuratorFramework c : sessions) {
            Thread t = new Thread(() -> {
                try {
                    c.close();
                } catch (RuntimeException e) {
                    // closing anyway
                }
            });
            t.setDaemon(true);
            closers.add(t);
            t.start();
        }
        for (Thread t : closers) {
            try {
                t.join(10000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /** Creates a persistent node and its parents unless it exists. */
    static void ensurePath(CuratorFramework c, String path) throws Exception {
        try {
            c.create().creatingParentsIfNeeded().forPath(path);
        } catch (KeeperException.NodeExistsException e) {
            // fine
        }
    }

    static void deleteTree(CuratorFramework c, String path) throws Exception {
        try {
            c.delete().deletingChildrenIfNeeded().forPath(path);
        } catch (KeeperException.NoNodeException e) {
            // already gone
        }
    }

    /** Heap in use after a full collection. */
    static long usedHeapAfterGc() {
        Runtime rt = Runtime.getRuntime();
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        return rt.totalMemory() - rt.freeMemory();
    }

    /** VmHWM from /proc/self/status in kB, or -1. */
    static long peakRssKb() {
        try {
            for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
                if (line.startsWith("VmHWM:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", ""));
                }
            }
        } catch (IOException | NumberFormatException e) {
            // fall through
        }
        return -1;
    }

    /**
     * Counts the lock loop's re-checks in one herd waiter session.
     *
     * Curator's LockInternals lists the lock's children once after creating
     * its node, and again each time it wakes up (its watch on the
     * predecessor fired and notifyAll() woke the waiting thread) or finds
     * the predecessor already gone.  Every foreground getChildren goes
     * through the client's TracerDriver under the name
     * "GetChildrenBuilderImpl-Foreground", so
     *     wake-ups = children listings - acquisitions
     * for sessions that do nothing but wait for the lock.  With Curator's
     * predecessor watch this is expected to be 1 per handoff.
     */
    static final class RecheckCounter implements TracerDriver {
        final AtomicLong listings = new AtomicLong();

        @Override
        public void addTrace(String name, long time, TimeUnit unit) {
            if ("GetChildrenBuilderImpl-Foreground".equals(name)) {
                listings.incrementAndGet();
            }
        }

        @Override
        public void addCount(String name, int increment) {
        }
    }

    /** Runs bodies on threads, keeping the first failure. */
    static final class Workers {
        final List<Thread> threads = new ArrayList<>();
        final AtomicReference<Throwable> failure = new AtomicReference<>();

        interface Body {
            void run() throws Exception;
        }

        void start(String name, Body body) {
            Thread t = new Thread(() -> {
                try {
                    body.run();
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }, name);
            t.setDaemon(true);
            threads.add(t);
            t.start();
        }

        void joinAll() throws Exception {
            for (Thread t : threads) {
                t.join();
            }
            rethrow();
        }

        void rethrow() throws Exception {
            Throwable e = failure.get();
            if (e instanceof Exception) throw (Exception) e;
            if (e != null) throw new RuntimeException(e);
        }
    }

    // ------------------------------------------------------------------
    // Workloads

    /** What one run of a workload measured. */
    static final class Result {
        int ops;
        long elapsedNs;
        long[] latenciesNs;
        Double bytesPerLock;
        Double wakeupsPerHandoff;
        Double joinSeconds;
    }

    static Result uncontended(CuratorFramework c, String lockPath, int ops,
                              Meter meter) throws Exception {
        ensurePath(c, lockPath);
        InterProcessMutex m = new InterProcessMutex(c, lockPath);
        long[] lat = new long[ops];
        meter.begin();
        long t0 = System.nanoTime();
        for (int i = 0; i < ops; i++) {
            long a = System.nanoTime();
            m.acquire();
            m.release();
            lat[i] = System.nanoTime() - a;
        }
        long t1 = System.nanoTime();
        meter.end();
        Result r = new Result();
        r.ops = ops;
        r.elapsedNs = t1 - t0;
        r.latenciesNs = lat;
        return r;
    }

    static Result contended(List<CuratorFramework> sessions, String lockPath,
                            int ops, Meter meter) throws Exception {
        ensurePath(sessions.get(0), lockPath);
        // Ticket t (0 <= t < ops) is one acquisition; its latency goes to
        // lat[t], so the threads never write the same slot.
        long[] lat = new long[ops];
        AtomicInteger tickets = new AtomicInteger();
        CountDownLatch ready = new CountDownLatch(sessions.size());
        CountDownLatch go = new CountDownLatch(1);
        Workers w = new Workers();
        for (int i = 0; i < sessions.size(); i++) {
            CuratorFramework c = sessions.get(i);
            w.start("contender-" + i, () -> {
                InterProcessMutex m = new InterProcessMutex(c, lockPath);
                ready.countDown();
                go.await();
                try {
                    for (;;) {
                        int t = tickets.getAndIncrement();
                        if (t >= ops) break;
                        long a = System.nanoTime();
                        m.acquire();
                        lat[t] = System.nanoTime() - a;
                        m.release();
                    }
                } catch (Exception e) {
                    tickets.set(ops);           // stop the others
                    throw e;
                }
            });
        }
        ready.await();
        meter.begin();
        long t0 = System.nanoTime();
        go.countDown();
        w.joinAll();
        long t1 = System.nanoTime();
        meter.end();
        Result r = new Result();
        r.ops = ops;
        r.elapsedNs = t1 - t0;
        r.latenciesNs = lat;
        return r;
    }

    static Result elect(List<CuratorFramework> sessions, String path, int ops,
                        Meter meter) throws Exception {
        ensurePath(sessions.get(0), path);
        long[] lat = new long[ops];
        AtomicInteger done = new AtomicInteger();
        AtomicLong resigned = new AtomicLong();
        AtomicLong end = new AtomicLong();
        Workers w = new Workers();
        meter.begin();
        long t0 = System.nanoTime();
        resigned.set(t0);
        for (int i = 0; i < sessions.size(); i++) {
            CuratorFramework c = sessions.get(i);
            w.start("candidate-" + i, () -> {
                while (done.get() < ops) {
                    LeaderLatch l = new LeaderLatch(c, path);
                    l.start();
                    l.await();
                    long t = System.nanoTime();
                    int k = done.getAndIncrement(); // only the leader is here
                    if (k < ops) lat[k] = t - resigned.get();
                    resigned.set(System.nanoTime());
                    if (k == ops - 1) end.set(resigned.get());
                    l.close();
                }
            });
        }
        w.joinAll();
        meter.end();
        Result r = new Result();
        r.ops = ops;
        r.elapsedNs = end.get() - t0;
        r.latenciesNs = lat;
        return r;
    }

    /** The leader that elect-kill kills: joins, says "L" once leading, waits. */
    static void electChild(String servers, String path) throws Exception {
        List<CuratorFramework> s = connectAll(servers, 1, new ArrayList<>());
        LeaderLatch l = new LeaderLatch(s.get(0), path);
        l.start();
        l.await();
        System.out.println("L");
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }

    static Result electKill(CuratorFramework c, String servers, String path, int ops,
                            Meter meter) throws Exception {
        ensurePath(c, path);
        long[] lat = new long[ops];
        String java = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
        meter.begin();
        long total = 0;
        for (int i = 0; i < ops; i++) {
            Process p = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
                                           "CuratorBench", "--elect-child", servers, path,
                                           Integer.toString(sessionTimeoutMs))
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
            try {
                if (p.getInputStream().read() != 'L') {
                    throw new IOException("the leader to kill never led");
                }
                LeaderLatch l = new LeaderLatch(c, path);
                l.start();
                while (c.getChildren().forPath(path).size() < 2) {
                    Thread.sleep(1);
                }
                long a = System.nanoTime();
                p.destroyForcibly();            // SIGKILL
                l.await();
                lat[i] = System.nanoTime() - a;
                total += lat[i];
                l.close();
            } finally {
                p.destroyForcibly();
                p.waitFor();
            }
        }
        meter.end();
        Result r = new Result();
        r.ops = ops;
        r.elapsedNs = total;
        r.latenciesNs = lat;
        return r;
    }

    static Result many(CuratorFramework c, String base, int ops, Meter meter)
        throws Exception {
        ensurePath(c, base);
        // The lock paths exist before the timed part, as in every
        // implementation: all of them time the acquires and releases only.
        for (int i = 0; i < ops; i++) {
            ensurePath(c, base + "/" + i);
        }
        long[] lat = new long[ops];
        List<InterProcessMutex> held = new ArrayList<>(ops);
        long heapBefore = usedHeapAfterGc();
        meter.begin();
        long t0 = System.nanoTime();
        for (int i = 0; i < ops; i++) {
            InterProcessMutex m = new InterProcessMutex(c, base + "/" + i);
            long a = System.nanoTime();
            m.acquire();
            lat[i] = System.nanoTime() - a;
            held.add(m);
        }
        long t1 = System.nanoTime();
        long heapHeld = usedHeapAfterGc();      // not part of the timing
        long t2 = System.nanoTime();
        for (InterProcessMutex m : held) {
            m.release();
        }
        long t3 = System.nanoTime();
        meter.end();
        Result r = new Result();
        r.ops = ops;
        r.elapsedNs = (t1 - t0) + (t3 - t2);
        r.latenciesNs = lat;
        r.bytesPerLock = (double) (heapHeld - heapBefore) / ops;
        return r;
    }

    static Result herd(CuratorFramework holderSession,
                       List<CuratorFramework> waiterSessions,
                       List<RecheckCounter> counters, String lockPath,
                       int ops, Meter meter) throws Exception {
        ensurePath(holderSession, lockPath);
        int n = waiterSessions.size();
        int rounds = (ops + n - 1) / n;
        int handoffs = rounds * n;
        long[] lat = new long[handoffs];
        AtomicInteger slot = new AtomicInteger();
        AtomicLong lastRelease = new AtomicLong();
        AtomicLong lastDone = new AtomicLong();
        InterProcessMutex holder = new InterProcessMutex(holderSession, lockPath);
        List<InterProcessMutex> waiters = new ArrayList<>();
        for (CuratorFramework c : waiterSessions) {
            waiters.add(new InterProcessMutex(c, lockPath));
        }
        long busyNs = 0;

        meter.begin();
        long listingsBefore = 0;
        for (RecheckCounter rc : counters) listingsBefore += rc.listings.get();
        for (int round = 0; round < rounds; round++) {
            holder.acquire();
            Workers w = new Workers();
            for (int i = 0; i < n; i++) {
                InterProcessMutex m = waiters.get(i);
                w.start("waiter-" + i, () -> {
                    m.acquire();
                    long now = System.nanoTime();
                    lat[slot.getAndIncrement()] = now - lastRelease.get();
                    lastRelease.set(System.nanoTime());
                    m.release();
                    lastDone.accumulateAndGet(System.nanoTime(), Math::max);
                });
            }
            // Wait until every waiter has its node in the queue.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (holderSession.getChildren().forPath(lockPath).size() < n + 1) {
                w.rethrow();
                if (System.nanoTime() > deadline) {
                    throw new IOException("herd waiters did not queue up");
                }
                Thread.sleep(5);
            }
            Thread.sleep(HERD_SETTLE_MS);
            long t0 = System.nanoTime();
            lastRelease.set(t0);
            holder.release();
            w.joinAll();
            busyNs += lastDone.get() - t0;
        }
        long listingsAfter = 0;
        for (RecheckCounter rc : counters) listingsAfter += rc.listings.get();
        meter.end();

        Result r = new Result();
        r.ops = handoffs;
        r.elapsedNs = busyNs;
        r.latenciesNs = lat;
        // Each acquisition lists the children once before waiting; every
        // further listing is a re-check after a wake-up.
        r.wakeupsPerHandoff =
            (double) (listingsAfter - listingsBefore - handoffs) / handoffs;
        return r;
    }

    /**
     * queue: `waiters` threads queue on one lock behind a holder, spread over
     * the sessions round-robin; once every node is on the server (counted
     * from the lock path's stat, not from a listing) the holder releases and
     * the lock passes through all of them.  ops = handoffs.
     */
    static Result queue(List<CuratorFramework> sessions, List<RecheckCounter> counters,
                        String lockPath, int n, Meter meter) throws Exception {
        CuratorFramework admin = sessions.get(0);
        ensurePath(admin, lockPath);
        long[] lat = new long[n];
        AtomicInteger slot = new AtomicInteger();
        AtomicLong lastRelease = new AtomicLong();
        AtomicLong lastDone = new AtomicLong();
        InterProcessMutex holder = new InterProcessMutex(admin, lockPath);
        holder.acquire();
        Workers w = new Workers();
        long j0 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            InterProcessMutex m = new InterProcessMutex(sessions.get(i % sessions.size()), lockPath);
            w.start("queuer-" + i, () -> {
                m.acquire();
                long now = System.nanoTime();
                lat[slot.getAndIncrement()] = now - lastRelease.get();
                lastRelease.set(System.nanoTime());
                m.release();
                lastDone.accumulateAndGet(System.nanoTime(), Math::max);
            });
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(300);
        while (admin.checkExists().forPath(lockPath).getNumChildren() < n + 1) {
            w.rethrow();
            if (System.nanoTime() > deadline) {
                throw new IOException("queue waiters did not join in 300 s");
            }
            Thread.sleep(5);
        }
        long joinNs = System.nanoTime() - j0;
        Thread.sleep(HERD_SETTLE_MS);
        long listingsBefore = 0;
        for (RecheckCounter rc : counters) listingsBefore += rc.listings.get();
        meter.begin();
        long t0 = System.nanoTime();
        lastRelease.set(t0);
        holder.release();
        w.joinAll();
        long listingsAfter = 0;
        for (RecheckCounter rc : counters) listingsAfter += rc.listings.get();
        meter.end();
        Result r = new Result();
        r.ops = n;
        r.elapsedNs = lastDone.get() - t0;
        r.latenciesNs = lat;
        // In the handoff phase every listing is a re-check after a wake-up.
        r.wakeupsPerHandoff = (double) (listingsAfter - listingsBefore) / n;
        r.joinSeconds = joinNs / 1e9;
        return r;
    }

    // ------------------------------------------------------------------
    // Output

    static long percentileUs(long[] sortedNs, double p) {
        if (sortedNs.length == 0) return 0;
        int idx = (int) Math.ceil(p * sortedNs.length) - 1;
        idx = Math.max(0, Math.min(sortedNs.length - 1, idx));
        return Math.round(sortedNs[idx] / 1000.0);
    }

    /** A number already formatted for JSON. */
    static final class Raw {
        final String text;

        Raw(String text) {
            this.text = text;
        }

        @Override
        public String toString() {
            return text;
        }
    }

    static Raw round(double v, int decimals) {
        return new Raw(String.format(Locale.ROOT, "%." + decimals + "f", v));
    }

    static String toJson(Map<String, Object> m) {
        StringBuilder sb = new StringBuilder("{");
        for (Map.Entry<String, Object> e : m.entrySet()) {
            if (sb.length() > 1) sb.append(',');
            sb.append('"').append(e.getKey()).append("\":");
            Object v = e.getValue();
            if (v == null) {
                sb.append("null");
            } else if (v instanceof String) {
                // Keys and values here are plain ASCII words.
                sb.append('"').append(v).append('"');
            } else {
                sb.append(v);
            }
        }
        return sb.append('}').toString();
    }

    // ------------------------------------------------------------------

    static Result runOnce(Options o, List<CuratorFramework> sessions,
                          List<RecheckCounter> counters, String subPath,
                          int ops, Meter meter) throws Exception {
        switch (o.workload) {
        case "uncontended":
            return uncontended(sessions.get(0), subPath, ops, meter);
        case "contended":
            return contended(sessions, subPath, ops, meter);
        case "many":
            return many(sessions.get(0), subPath, ops, meter);
        case "queue":
            return queue(sessions, counters, subPath, ops, meter);
        case "elect":
            return elect(sessions, subPath, ops, meter);
        case "elect-kill":
            return electKill(sessions.get(0), o.servers, subPath, ops, meter);
        default:
            return herd(sessions.get(0), sessions.subList(1, sessions.size()),
                        counters, subPath, ops, meter);
        }
    }

    public static void main(String[] args) {
        if (args.length == 4 && args[0].equals("--elect-child")) {
            try {
                sessionTimeoutMs = Integer.parseInt(args[3]);
                electChild(args[1], args[2]);
            } catch (Exception e) {
                System.err.println("CuratorBench: " + e);
            }
            System.exit(1);
        }
        Options o;
        try {
            o = parse(args);
        } catch (UsageError e) {
            System.err.println("CuratorBench: " + e.getMessage());
            System.err.println(USAGE);
            System.exit(2);
            return;
        }
        sessionTimeoutMs = o.sessionMs;
        int status = 0;
        List<CuratorFramework> sessions = new ArrayList<>();
        try {
            // Sessions: contended uses `clients` of them; herd one holder
            // plus `clients` waiters; the others just one.
            int nSessions = o.workload.equals("contended") || o.workload.equals("queue")
                || o.workload.equals("elect") ? o.clients : o.workload.equals("herd") ? o.clients + 1 : 1;
            connectAll(o.servers, nSessions, sessions);
            List<RecheckCounter> counters = new ArrayList<>();
            if (o.workload.equals("herd") || o.workload.equals("queue")) {
                int first = o.workload.equals("herd") ? 1 : 0;
                for (CuratorFramework c : sessions.subList(first, sessions.size())) {
                    RecheckCounter rc = new RecheckCounter();
                    c.getZookeeperClient().setTracerDriver(rc);
                    counters.add(rc);
                }
            }
            CuratorFramework admin = sessions.get(0);
            deleteTree(admin, o.path);          // leftovers of a failed run

            List<String> servers = serverList(o.servers);
            try {
                if (o.warmup > 0) {
                    runOnce(o, sessions, counters, o.path + "/warmup", o.warmup,
                            new Meter(servers, false));
                }
                Meter meter = new Meter(servers, true);
                Result r = runOnce(o, sessions, counters, o.path + "/timed",
                                   o.ops, meter);

                long[] lat = r.latenciesNs.clone();
                Arrays.sort(lat);
                double seconds = r.elapsedNs / 1e9;
                Double perOp = meter.perOp(r.ops);

                Map<String, Object> out = new LinkedHashMap<>();
                out.put("impl", "curator");
                out.put("workload", o.workload);
                out.put("clients", o.clients);
                out.put("ops", r.ops);
                out.put("seconds", round(seconds, 4));
                out.put("ops_per_sec",
                        round(seconds > 0 ? r.ops / seconds : 0, 1));
                out.put("p50_us", percentileUs(lat, 0.50));
                out.put("p99_us", percentileUs(lat, 0.99));
                out.put("zk_requests_per_op",
                        perOp == null ? null : round(perOp, 3));
                if (r.bytesPerLock != null) {
                    out.put("bytes_per_lock", round(r.bytesPerLock, 1));
                }
                if (r.wakeupsPerHandoff != null) {
                    out.put("wakeups_per_handoff",
                            round(r.wakeupsPerHandoff, 3));
                }
                if (r.joinSeconds != null) {
                    out.put("waiters", r.ops);
                    out.put("join_seconds", round(r.joinSeconds, 3));
                    out.put("join_us_per_waiter", round(r.joinSeconds * 1e6 / r.ops, 1));
                }
                out.put("peak_rss_kb", peakRssKb());
                System.out.println(toJson(out));
                System.out.flush();
            } finally {
                deleteTree(admin, o.path);
            }
        } catch (Exception e) {
            System.err.println("CuratorBench: " + e);
            status = 1;
        } finally {
            closeAll(sessions);
        }
        // Curator and ZooKeeper leave non-daemon threads behind.
        System.exit(status);
    }
}
