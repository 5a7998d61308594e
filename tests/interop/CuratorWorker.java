/*
 * CuratorWorker - takes Apache Curator 5.4 locks in a loop, for the
 * interoperability tests that run it next to zkl processes on the same lock
 * path.
 *
 * Usage:
 *   CuratorWorker --servers HOST:PORT[,...] --path /lock/path
 *                 --mode mutex|read|write --iterations N
 *                 --counter-file FILE --log-file FILE
 *                 [--hold-ms MS] [--acquire-timeout-ms MS]
 *
 * Normally started through tests/interop/run-curator-worker.sh, which
 * compiles this file and supplies the classpath.
 *
 * Each of the N iterations:
 *   1. acquires the lock: InterProcessMutex for "mutex",
 *      InterProcessReadWriteLock.readLock() for "read", .writeLock() for
 *      "write";
 *   2. appends "ACQ <kind> <id> <ns> <czxid>" to the log file;
 *   3. mutex/write: reads the integer in the counter file (a missing or
 *      empty file counts as 0), sleeps hold-ms (default 1) and writes the
 *      number + 1 back.  This read-modify-write is deliberately not atomic,
 *      so a lost update shows that two writers held the lock at once.
 *      read: reads the integer and sleeps hold-ms, writing nothing;
 *   4. appends "REL <kind> <id> <ns> <czxid>" to the log file;
 *   5. releases the lock.
 *
 * Log fields:
 *   kind   mutex, read or write
 *   id     <pid>/<thread id>, one word
 *   ns     wall-clock time in nanoseconds since the Unix epoch
 *          (CLOCK_REALTIME through Instant.now()).  System.nanoTime() is not
 *          comparable between processes, so checkers that merge the logs of
 *          several processes on one host compare these realtime values.
 *          ACQ is taken after acquire() returned and REL before release()
 *          is called, so the [ACQ, REL] intervals of conflicting holders
 *          must not overlap.
 *   czxid  creation zxid (decimal) of this holder's lock node, read with an
 *          exists() call while the lock is held; "-" if it could not be
 *          obtained.  Curator keeps the node path private, so it is read
 *          through the protected InterProcessMutex.getLockPath() by
 *          reflection.
 * Each line is written with a single write() on a FileChannel opened with
 * APPEND (O_APPEND), so lines of concurrent processes never interleave.
 *
 * --acquire-timeout-ms makes a lock wait longer than MS an error (default:
 * wait forever).
 *
 * Mode "revocable": one InterProcessMutex made revocable
 * (makeRevocable) is acquired once; "ACQ" is logged, then the worker waits
 * up to hold-ms for a revocation request (a requester writes "__REVOKE__"
 * into the holder's node), logs "REVOKED" when it comes, releases and logs
 * "REL". It exits 1 if no request came in time.
 *
 * Mode "revoker": Curator's Revoker.attemptRevoke asks the first node of
 * the lock path (its holder) to let go; logs "ASKED <node>". The counter
 * and log files are still required; iterations is ignored.
 *
 * Mode "latch": each iteration starts a LeaderLatch (id <pid>/<thread>),
 * waits for leadership, logs "ACQ latch", bumps the counter as a mutex
 * holder does, logs "REL latch" and closes the latch.
 *
 * Mode "select": each iteration starts a LeaderSelector (setId to the same
 * id); its takeLeadership logs "ACQ select", bumps the counter, logs
 * "REL select" and returns, which gives the leadership up.
 *
 * Mode "leader": logs "LEADER <id>" with the id of the current leader of
 * the path as LeaderLatch.getLeader() names it ("-" when there is none).
 *
 * Exit status: 0 after N iterations, 1 on any error, 2 on bad usage.
 */

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.curator.framework.recipes.locks.Revoker;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.data.Stat;

public final class CuratorWorker {

    static final int SESSION_TIMEOUT_MS = 30000;
    static final int CONNECT_TIMEOUT_MS = 15000;

    static final String USAGE =
        "usage: CuratorWorker --servers HOST:PORT[,...] --path P "
        + "--mode mutex|read|write --iterations N --counter-file F "
        + "--log-file L [--hold-ms MS] [--acquire-timeout-ms MS]";

    static final class UsageError extends Exception {
        UsageError(String msg) {
            super(msg);
        }
    }

    String servers;
    String path;
    String mode;
    long iterations = -1;
    Path counterFile;
    Path logFile;
    long holdMs = 1;
    long acquireTimeoutMs = 0;          // 0: wait forever

    void parse(String[] args) throws UsageError {
        for (int i = 0; i < args.length; i += 2) {
            String a = args[i];
            if (i + 1 >= args.length) {
                throw new UsageError("missing value for " + a);
            }
            String v = args[i + 1];
            switch (a) {
            case "--servers": servers = v; break;
            case "--path": path = v; break;
            case "--mode": mode = v; break;
            case "--iterations": iterations = number(a, v); break;
            case "--counter-file": counterFile = Paths.get(v); break;
            case "--log-file": logFile = Paths.get(v); break;
            case "--hold-ms": holdMs = number(a, v); break;
            case "--acquire-timeout-ms": acquireTimeoutMs = number(a, v); break;
            default: throw new UsageError("unknown option " + a);
            }
        }
        if (servers == null || path == null || mode == null || iterations < 0
            || counterFile == null || logFile == null) {
            throw new UsageError("missing required option");
        }
        if (!mode.equals("mutex") && !mode.equals("read")
            && !mode.equals("write") && !mode.equals("revocable")
            && !mode.equals("revoker") && !mode.equals("latch")
            && !mode.equals("select") && !mode.equals("leader")) {
            throw new UsageError("unknown mode " + mode);
        }
        if (!path.startsWith("/")) {
            throw new UsageError("--path must be absolute");
        }
    }

    static long number(String opt, String v) throws UsageError {
        try {
            long n = Long.parseLong(v);
            if (n < 0) throw new NumberFormatException();
            return n;
        } catch (NumberFormatException e) {
            throw new UsageError(opt + " needs a non-negative integer");
        }
    }

    /** Nanoseconds since the Unix epoch (CLOCK_REALTIME). */
    static long realtimeNs() {
        Instant t = Instant.now();
        return t.getEpochSecond() * 1_000_000_000L + t.getNano();
    }

    static long readCounter(Path f) throws IOException {
        String s;
        try {
            s = new String(Files.readAllBytes(f), StandardCharsets.US_ASCII).trim();
        } catch (NoSuchFileException e) {
            return 0;
        }
        return s.isEmpty() ? 0 : Long.parseLong(s);
    }

    static void writeCounter(Path f, long v) throws IOException {
        Files.write(f, (v + "\n").getBytes(StandardCharsets.US_ASCII),
                    StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                    StandardOpenOption.TRUNCATE_EXISTING);
    }

    /** Finds the protected getLockPath() in the class or its superclasses. */
    static Method lockPathMethod(Object lock) {
        for (Class<?> k = lock.getClass(); k != null; k = k.getSuperclass()) {
            try {
                Method m = k.getDeclaredMethod("getLockPath");
                m.setAccessible(true);
                return m;
            } catch (NoSuchMethodException | RuntimeException e) {
                // try the superclass
            }
        }
        return null;
    }

    /** czxid of the current thread's lock node, or "-". */
    static String token(CuratorFramework client, InterProcessMutex lock,
                        Method getLockPath) {
        if (getLockPath == null) return "-";
        try {
            String node = (String) getLockPath.invoke(lock);
            if (node == null) return "-";
            Stat st = client.checkExists().forPath(node);
            return st == null ? "-" : Long.toString(st.getCzxid());
        } catch (Exception e) {
            return "-";
        }
    }

    static void logLine(FileChannel log, String line) throws IOException {
        ByteBuffer b = ByteBuffer.wrap((line + "\n").getBytes(StandardCharsets.US_ASCII));
        int n = log.write(b);
        if (b.hasRemaining()) {
            throw new IOException("short write to log (" + n + " bytes)");
        }
    }

    void run() throws Exception {
        String id = ProcessHandle.current().pid() + "/"
            + Thread.currentThread().getId();
        CuratorFramework client = CuratorFrameworkFactory.builder()
            .connectString(servers)
            .sessionTimeoutMs(SESSION_TIMEOUT_MS)
            .connectionTimeoutMs(CONNECT_TIMEOUT_MS)
            .retryPolicy(new ExponentialBackoffRetry(100, 5))
            .build();
        client.start();
        try (FileChannel log = FileChannel.open(logFile,
                 StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                 StandardOpenOption.APPEND)) {
            if (!client.blockUntilConnected(CONNECT_TIMEOUT_MS,
                                            TimeUnit.MILLISECONDS)) {
                throw new IOException("cannot connect to " + servers);
            }
            if (mode.equals("revocable")) {
                runRevocable(client, log, id);
                return;
            }
            if (mode.equals("revoker")) {
                runRevoker(client, log);
                return;
            }
            if (mode.equals("latch") || mode.equals("select")) {
                runElection(client, log, id);
                return;
            }
            if (mode.equals("leader")) {
                Participant p = new LeaderLatch(client, path).getLeader();
                logLine(log, "LEADER " + (p.isLeader() ? p.getId() : "-"));
                return;
            }
            InterProcessMutex lock;
            if (mode.equals("mutex")) {
                lock = new InterProcessMutex(client, path);
            } else {
                InterProcessReadWriteLock rw =
                    new InterProcessReadWriteLock(client, path);
                lock = mode.equals("read") ? rw.readLock() : rw.writeLock();
            }
            Method getLockPath = lockPathMethod(lock);

            for (long i = 0; i < iterations; i++) {
                if (acquireTimeoutMs > 0) {
                    if (!lock.acquire(acquireTimeoutMs, TimeUnit.MILLISECONDS)) {
                        throw new IOException("lock not acquired within "
                                              + acquireTimeoutMs + " ms");
                    }
                } else {
                    lock.acquire();
                }
                String tok = token(client, lock, getLockPath);
                logLine(log, "ACQ " + mode + " " + id + " " + realtimeNs()
                        + " " + tok);

                long v = readCounter(counterFile);
                if (holdMs > 0) Thread.sleep(holdMs);
                if (!mode.equals("read")) {
                    writeCounter(counterFile, v + 1);
                }

                logLine(log, "REL " + mode + " " + id + " " + realtimeNs()
                        + " " + tok);
                lock.release();
            }
        } finally {
            client.close();
        }
    }

    /** czxid of `node`, or "-". */
    static String czxid(CuratorFramework client, String node) {
        try {
            Stat st = node == null ? null : client.checkExists().forPath(node);
            return st == null ? "-" : Long.toString(st.getCzxid());
        } catch (Exception e) {
            return "-";
        }
    }

    /** The leader's turn: the same read-modify-write as a lock holder's. */
    void lead(FileChannel log, String id, String tok) throws Exception {
        logLine(log, "ACQ " + mode + " " + id + " " + realtimeNs() + " " + tok);
        long v = readCounter(counterFile);
        if (holdMs > 0) Thread.sleep(holdMs);
        writeCounter(counterFile, v + 1);
        logLine(log, "REL " + mode + " " + id + " " + realtimeNs() + " " + tok);
    }

    /** N leaderships through LeaderLatch or LeaderSelector. */
    void runElection(CuratorFramework client, FileChannel log, String id) throws Exception {
        long wait = acquireTimeoutMs > 0 ? acquireTimeoutMs : Long.MAX_VALUE / 2;
        for (long i = 0; i < iterations; i++) {
            if (mode.equals("latch")) {
                LeaderLatch latch = new LeaderLatch(client, path, id);
                latch.start();
                if (!latch.await(wait, TimeUnit.MILLISECONDS)) {
                    throw new IOException("no leadership within " + wait + " ms");
                }
                lead(log, id, czxid(client, latch.getOurPath()));
                latch.close();
                continue;
            }
            CountDownLatch done = new CountDownLatch(1);
            Exception[] failed = new Exception[1];
            LeaderSelector sel = new LeaderSelector(client, path,
                new LeaderSelectorListenerAdapter() {
                    @Override
                    public void takeLeadership(CuratorFramework c) {
                        try {
                            lead(log, id, "-");
                        } catch (Exception e) {
                            failed[0] = e;
                        }
                        done.countDown();
                    }
                });
            sel.setId(id);
            sel.start();
            if (!done.await(wait, TimeUnit.MILLISECONDS)) {
                throw new IOException("no leadership within " + wait + " ms");
            }
            sel.close();
            if (failed[0] != null) throw failed[0];
        }
    }

    /** Ask the holder of the lock path (its first node) to let go. */
    void runRevoker(CuratorFramework client, FileChannel log) throws Exception {
        List<String> kids = new ArrayList<>(client.getChildren().forPath(path));
        if (kids.isEmpty()) {
            throw new IOException("nobody holds " + path);
        }
        kids.sort((a, b) -> a.substring(a.length() - 10).compareTo(b.substring(b.length() - 10)));
        String node = path + "/" + kids.get(0);
        Revoker.attemptRevoke(client, node);
        logLine(log, "ASKED " + node);
    }

    /** Hold a revocable mutex until a revocation request comes. */
    void runRevocable(CuratorFramework client, FileChannel log, String id)
        throws Exception {
        InterProcessMutex lock = new InterProcessMutex(client, path);
        CountDownLatch revoked = new CountDownLatch(1);
        lock.makeRevocable(l -> revoked.countDown());
        Method getLockPath = lockPathMethod(lock);
        lock.acquire();
        String tok = token(client, lock, getLockPath);
        logLine(log, "ACQ mutex " + id + " " + realtimeNs() + " " + tok);
        boolean got = revoked.await(holdMs, TimeUnit.MILLISECONDS);
        if (got) {
            logLine(log, "REVOKED mutex " + id + " " + realtimeNs() + " " + tok);
        }
        logLine(log, "REL mutex " + id + " " + realtimeNs() + " " + tok);
        lock.release();
        if (!got) {
            throw new IOException("no revocation request within " + holdMs + " ms");
        }
    }

    public static void main(String[] args) {
        CuratorWorker w = new CuratorWorker();
        try {
            w.parse(args);
        } catch (UsageError e) {
            System.err.println("CuratorWorker: " + e.getMessage());
            System.err.println(USAGE);
            System.exit(2);
        }
        int status = 0;
        try {
            w.run();
        } catch (Exception e) {
            System.err.println("CuratorWorker: " + e);
            status = 1;
        }
        // Curator and ZooKeeper leave non-daemon threads behind.
        System.exit(status);
    }
}
