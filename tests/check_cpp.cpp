// The C++ API (include/zkl.hpp) against a real ZooKeeper: the standard lock
// wrappers, exclusion across threads, leases, timeouts that leave no node,
// error codes, and objects destroyed in any order. Built with the
// configured C++ compiler (check_cpp) and with clang++ (check_cpp_clang).
#include <zkl.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include <poll.h>
#include <unistd.h>

extern "C" {
#include "testutil.h"
#include "zkl/zookeeper.h"
}

using namespace std::chrono_literals;
using clk = std::chrono::steady_clock;

namespace {

std::string P(const char *leaf)
{
    return std::string(tu_fixture_root) + "/" + leaf;
}

zkl::client make_client()
{
    return zkl::client(tu_hosts(), std::chrono::milliseconds(10000));
}

// Children of `path` as the server has them, through a zkl client's own
// handle (zkl/zookeeper.h).
int children(const zkl::client &c, const std::string &path)
{
    String_vector kids{};
    int rc = zoo_get_children(zkl_client_handle(c.native_handle()), path.c_str(), 0, &kids);
    if (rc == ZNONODE)
        return 0;
    ck_assert_int_eq(rc, ZOK);
    int n = kids.count;
    deallocate_String_vector(&kids);
    return n;
}

// A semaphore's waiter node goes just after its acquire returns: wait for
// the count of its children with a deadline.
bool lease_nodes(const std::string &path, int want)
{
    return tu_wait_children(tu_fixture_zk, path.c_str(), want, 15000);
}

// Wait for `cond` with a deadline; its last value.
template <class F> bool wait_for(F cond, std::chrono::milliseconds limit = 15s)
{
    auto end = clk::now() + limit;
    while (!cond()) {
        if (clk::now() >= end)
            return cond();
        std::this_thread::sleep_for(2ms);
    }
    return true;
}

// A latch with a deadline (std::latch is C++20).
class gate {
public:
    void open()
    {
        std::lock_guard<std::mutex> g(mu_);
        open_ = true;
        cv_.notify_all();
    }
    bool wait(std::chrono::milliseconds limit = 15s)
    {
        std::unique_lock<std::mutex> g(mu_);
        return cv_.wait_for(g, limit, [&] { return open_; });
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    bool open_ = false;
};

} // namespace

START_TEST(test_the_readme_snippet)
{
    // As in the README, under this test's root.
    zkl::client c(tu_hosts(), std::chrono::milliseconds(10000)); // throws zkl::error
    zkl::mutex a(c, P("locks/a")), b(c, P("locks/b"));
    {
        std::scoped_lock both(a, b);
        int64_t t = a.token();
        ck_assert_int_gt(t, 0);
        ck_assert_int_gt(b.token(), 0);
        ck_assert(a.is_held() && b.is_held());
        ck_assert_int_eq(children(c, P("locks/a")), 1);
        ck_assert_int_eq(children(c, P("locks/b")), 1);
        ck_assert(a.node().compare(0, P("locks/a/").size(), P("locks/a/")) == 0);
    }
    ck_assert(!a.is_held() && !b.is_held());
    ck_assert(a.node().empty());
    ck_assert_int_eq(children(c, P("locks/a")), 0);
    {
        std::unique_lock<zkl::mutex> l(a, std::defer_lock);
        ck_assert(l.try_lock_for(std::chrono::seconds(10)));
        ck_assert(a.is_held());
    }
    ck_assert(!a.is_held());
    zkl::shared_mutex rw(c, P("locks/rw"));
    {
        std::shared_lock<zkl::shared_mutex> r(rw);
        ck_assert(rw.is_held_shared() && !rw.is_held());
        ck_assert_int_gt(rw.token_shared(), 0);
    }
    ck_assert(!rw.is_held_shared());
    zkl::semaphore s(c, P("locks/pool"), 3);
    {
        zkl::lease l = s.acquire();
        std::optional<zkl::lease> m = s.try_acquire_for(std::chrono::seconds(10));
        ck_assert(l.is_held());
        ck_assert(m.has_value() && m->is_held());
        ck_assert_int_gt(m->token(), l.token());
        ck_assert(lease_nodes(P("locks/pool"), 2));
    }
    ck_assert(lease_nodes(P("locks/pool"), 0));
    bool thrown = false;
    try {
        zkl::mutex bad(c, "no-slash");
    } catch (const zkl::error &e) {
        thrown = true;
        ck_assert(e.code() == std::error_code(ZKL_EINVAL, zkl::category()));
    }
    ck_assert(thrown);
    // The prefetch option.
    zkl::mutex pf(c, P("locks/pf"), zkl::mutex_options().prefetch());
    {
        std::lock_guard<zkl::mutex> g(pf);
        ck_assert(pf.is_held());
    }
    ck_assert_int_eq(children(c, P("locks/pf")), 0);
}
END_TEST

// A shared counter updated non-atomically under the lock by several
// threads; `inside` counts the threads in the critical section at once.
struct exclusion {
    std::atomic<int> inside{0};
    std::atomic<int> overlaps{0};
    std::atomic<int> errors{0};
    long counter = 0;
    void critical()
    {
        if (inside.fetch_add(1) != 0)
            overlaps++;
        long v = counter;
        std::this_thread::sleep_for(1ms);
        counter = v + 1;
        inside.fetch_sub(1);
    }
};

static void run_exclusion(bool shared_object)
{
    const int threads = 4, rounds = 8;
    zkl::client c = make_client();
    zkl::mutex shared_m(c, P("counter"));
    exclusion ex;
    std::vector<std::thread> ts;
    for (int i = 0; i < threads; i++)
        ts.emplace_back([&, shared_object] {
            try {
                std::optional<zkl::mutex> own;
                if (!shared_object)
                    own.emplace(c, P("counter"));
                zkl::mutex &m = shared_object ? shared_m : *own;
                for (int r = 0; r < rounds; r++) {
                    std::lock_guard<zkl::mutex> g(m);
                    if (!m.is_held())
                        ex.errors++;
                    ex.critical();
                }
            } catch (const zkl::error &) {
                ex.errors++;
            }
        });
    for (auto &t : ts)
        t.join();
    ck_assert_int_eq(ex.errors.load(), 0);
    ck_assert_int_eq(ex.overlaps.load(), 0);
    ck_assert_int_eq(ex.counter, threads * rounds);
    ck_assert_int_eq(children(c, P("counter")), 0);
}

START_TEST(test_lock_guard_excludes_threads_sharing_one_mutex)
{
    run_exclusion(true);
}
END_TEST

START_TEST(test_lock_guard_excludes_threads_with_a_mutex_each)
{
    run_exclusion(false);
}
END_TEST

START_TEST(test_mutex_is_reentrant_per_thread)
{
    zkl::client c = make_client();
    zkl::mutex m(c, P("re"));
    std::lock_guard<zkl::mutex> outer(m);
    {
        std::lock_guard<zkl::mutex> inner(m); // only counts
        ck_assert_int_eq(children(c, P("re")), 1);
    }
    ck_assert(m.is_held());
    // Another thread, same object: its own hold, so it must wait.
    bool got = true;
    std::thread t([&] { got = m.try_lock_for(100ms); });
    t.join();
    ck_assert(!got);
    ck_assert_int_eq(children(c, P("re")), 1);
}
END_TEST

START_TEST(test_shared_lock_readers_together_writer_alone)
{
    zkl::client c = make_client();
    zkl::shared_mutex rw(c, P("rw"));
    std::shared_lock<zkl::shared_mutex> mine(rw);
    ck_assert(rw.is_held_shared());

    // A second reader (another thread, same object) gets in while we read.
    std::atomic<int> second{-1};
    gate second_in, second_go;
    std::thread r([&] {
        try {
            std::shared_lock<zkl::shared_mutex> l(rw, std::defer_lock);
            second = l.try_lock_for(10s) ? 1 : 0;
            second_in.open();
            second_go.wait();
        } catch (const zkl::error &) {
            second = 2;
            second_in.open();
        }
    });
    ck_assert(second_in.wait());
    ck_assert_int_eq(second.load(), 1);
    ck_assert_int_eq(children(c, P("rw")), 2);

    // A writer cannot get in while they read, and leaves no node.
    bool writer = true;
    std::thread w([&] { writer = rw.try_lock_for(200ms); });
    w.join();
    ck_assert(!writer);
    ck_assert_int_eq(children(c, P("rw")), 2);

    second_go.open();
    r.join();
    mine.unlock();
    ck_assert_int_eq(children(c, P("rw")), 0);

    // While a writer holds, readers are kept out.
    gate held, done;
    std::atomic<int> wrote{-1};
    std::thread w2([&] {
        try {
            std::unique_lock<zkl::shared_mutex> l(rw);
            wrote = rw.is_held() ? 1 : 0;
            held.open();
            done.wait();
        } catch (const zkl::error &) {
            wrote = 2;
            held.open();
        }
    });
    ck_assert(held.wait());
    ck_assert_int_eq(wrote.load(), 1);
    ck_assert(!rw.try_lock_shared_for(200ms));
    ck_assert(!rw.try_lock_shared_until(clk::now() + 100ms));
    ck_assert_int_eq(children(c, P("rw")), 1);
    done.open();
    w2.join();
    ck_assert(rw.try_lock_shared_for(10s));
    rw.unlock_shared();
    ck_assert_int_eq(children(c, P("rw")), 0);
}
END_TEST

START_TEST(test_lease_raii_gives_the_lease_back)
{
    zkl::client c = make_client();
    zkl::semaphore s(c, P("pool"), 1);
    ck_assert_int_eq(s.max_leases(), 1);
    {
        zkl::lease l = s.acquire();
        ck_assert(l && l.is_held());
        ck_assert_int_eq(l.count(), 1);
        ck_assert(!s.try_acquire().has_value());
        ck_assert(!s.try_acquire_for(100ms).has_value());
        ck_assert(lease_nodes(P("pool"), 1));
        // Moving hands the one lease over.
        zkl::lease moved = std::move(l);
        ck_assert(!l && moved);
        ck_assert(!l.is_held());
        ck_assert(lease_nodes(P("pool"), 1));
    } // released here
    ck_assert(lease_nodes(P("pool"), 0));
    std::optional<zkl::lease> again = s.try_acquire_for(10s);
    ck_assert(again.has_value());
    int64_t t = again->token();
    again->release(); // explicit: now empty
    ck_assert(!*again);
    ck_assert(lease_nodes(P("pool"), 0));
    bool thrown = false;
    try {
        again->release();
    } catch (const zkl::error &e) {
        thrown = e.code() == zkl::errc::not_held;
    }
    ck_assert(thrown);
    zkl::lease next = s.acquire();
    ck_assert_int_gt(next.token(), t);
}
END_TEST

START_TEST(test_try_lock_for_times_out_and_leaves_no_node)
{
    zkl::client holder = make_client();
    zkl::client c = make_client();
    zkl::mutex held(holder, P("busy"));
    held.lock();
    zkl::mutex m(c, P("busy"));
    ck_assert(!m.try_lock());
    auto t0 = clk::now();
    ck_assert(!m.try_lock_for(200ms));
    auto waited = clk::now() - t0;
    ck_assert_msg(waited >= 199ms, "returned after %lld ms",
                  (long long)std::chrono::duration_cast<std::chrono::milliseconds>(waited).count());
    ck_assert(!m.try_lock_until(clk::now() + 150ms));
    ck_assert(!m.try_lock_until(std::chrono::system_clock::now() + 50ms));
    ck_assert(!m.is_held());
    // Only the holder's node is on the server.
    ck_assert_int_eq(children(c, P("busy")), 1);
    std::string node = held.node();
    ck_assert(!node.empty());
    // A semaphore-mutex times out the same way.
    zkl::semaphore_mutex sm(c, P("busy"));
    ck_assert(!sm.try_lock_for(100ms));
    ck_assert_int_eq(children(c, P("busy")), 1);
    held.unlock();
    ck_assert(m.try_lock_for(10s));
    m.unlock();
    ck_assert_int_eq(children(c, P("busy")), 0);
}
END_TEST

START_TEST(test_error_codes_and_category)
{
    const std::error_category &cat = zkl::category();
    ck_assert_str_eq(cat.name(), "zkl");
    ck_assert(&cat == &zkl::category());
#define CHECK_ONE(name, code, msg) ck_assert(cat.message(ZKL_##name) == std::string(msg));
    ZKL_ERRNO_MAP(CHECK_ONE)
#undef CHECK_ONE
    ck_assert(std::error_code(zkl::errc::timed_out) == std::error_code(ZKL_ETIMEDOUT, cat));
    ck_assert(std::error_code(zkl::errc::timed_out) == std::errc::timed_out);
    ck_assert(std::error_code(zkl::errc::deadlock) == std::errc::resource_deadlock_would_occur);
    ck_assert(std::error_code(zkl::errc::lost) != std::errc::timed_out);
    // Every C code has its C++ name.
    ck_assert_int_eq(static_cast<int>(zkl::errc::no_chroot), ZKL_ENOCHROOT);
    ck_assert_int_eq(static_cast<int>(zkl::errc::unresolved_host), ZKL_ERESOLVE);
    ck_assert_int_eq(static_cast<int>(zkl::errc::out_of_range), ZKL_ERANGE);
    ck_assert_int_eq(static_cast<int>(zkl::errc::no_entry), ZKL_ENOENT);
    zkl::error e(ZKL_ELOST, "zkl::mutex::lock");
    ck_assert_int_eq(e.code().value(), ZKL_ELOST);
    ck_assert(std::strstr(e.what(), zkl_strerror(ZKL_ELOST)) != nullptr);
    ck_assert(std::strstr(e.what(), "zkl::mutex::lock") != nullptr);
    const std::system_error &base = e; // a std::system_error
    ck_assert(base.code().category() == zkl::category());

    auto code_of = [](auto &&fn) -> int {
        try {
            fn();
        } catch (const zkl::error &err) {
            ck_assert(err.code().category() == zkl::category());
            return err.code().value();
        }
        return 0;
    };
    ck_assert_int_eq(code_of([] { zkl::client bad("", 1000ms); }), ZKL_EINVAL);
    ck_assert_int_eq(code_of([] { zkl::client bad(tu_hosts(), 0ms); }), ZKL_EINVAL);
    zkl::client c = make_client();
    zkl::mutex m(c, P("e/m"));
    ck_assert_int_eq(code_of([&] { (void)m.token(); }), ZKL_ENOTHELD);
    ck_assert_int_eq(code_of([&] { m.unlock(); }), ZKL_ENOTHELD);
    ck_assert_int_eq(code_of([&] { zkl::shared_mutex bad(c, "/"); }), ZKL_EINVAL);
    ck_assert_int_eq(code_of([&] { zkl::semaphore bad(c, P("e/s"), 0); }), ZKL_EINVAL);
    zkl::semaphore s(c, P("e/s"), 2);
    { zkl::lease first = s.acquire(); } // records the limit
    zkl::semaphore other(c, P("e/s"), 3); // sends nothing
    ck_assert_int_eq(code_of([&] { (void)other.acquire(); }), ZKL_EMISMATCH);
    // A read hold asking for the write side could only wait for itself.
    zkl::shared_mutex rw(c, P("e/rw"));
    {
        std::shared_lock<zkl::shared_mutex> r(rw);
        ck_assert_int_eq(code_of([&] { rw.lock(); }), ZKL_EDEADLK);
    }
    // A semaphore-mutex object is not reentrant.
    zkl::semaphore_mutex sm(c, P("e/sm"));
    {
        std::lock_guard<zkl::semaphore_mutex> g(sm);
        ck_assert_int_eq(code_of([&] { sm.lock(); }), ZKL_EDEADLK);
    }
    // Two members on one path.
    ck_assert_int_eq(code_of([&] { zkl::multi_lock ml{rw.read_side(), rw.write_side()}; }),
                     ZKL_EINVAL);
    // A moved-from object.
    zkl::mutex moved = std::move(m);
    ck_assert_int_eq(code_of([&] { m.lock(); }), ZKL_EINVAL);
    ck_assert(!m.is_held());
    // After cancel(), waiting acquires fail with canceled.
    zkl::client c2 = make_client();
    zkl::mutex m2(c2, P("e/m"));
    c2.cancel();
    ck_assert_int_eq(code_of([&] { m2.lock(); }), ZKL_ECANCELED);
    ck_assert_int_eq(children(c, P("e/m")), 0);
}
END_TEST

START_TEST(test_timeouts_round_up_to_milliseconds)
{
    using zkl::detail::timeout_ms;
    ck_assert_int_eq(timeout_ms(200ms), 200);
    ck_assert_int_eq(timeout_ms(1us), 1);
    ck_assert_int_eq(timeout_ms(1500us), 2);
    ck_assert_int_eq(timeout_ms(2000us), 2);
    ck_assert_int_eq(timeout_ms(1ns), 1);
    ck_assert_int_eq(timeout_ms(0ms), 0);
    ck_assert_int_eq(timeout_ms(-5ms), 0);
    ck_assert_int_eq(timeout_ms(2s), 2000);
    ck_assert_int_eq(timeout_ms(std::chrono::duration<double>(0.0015)), 2);
    ck_assert_int_eq(timeout_ms(std::chrono::duration<double, std::milli>(3.0)), 3);
    ck_assert_int_eq(timeout_ms(std::chrono::hours::max()), ZKL_WAIT_FOREVER);
    ck_assert_int_eq(timeout_ms(std::chrono::nanoseconds::max()), ZKL_WAIT_FOREVER);
    ck_assert_int_eq(timeout_ms(std::chrono::hours::min()), 0);
    ck_assert_int_eq(timeout_ms(std::chrono::hours(24)), 86400000L);
}
END_TEST

// A client whose session is marked by an ephemeral node: the marker is on
// the server exactly as long as the C client is open.
static std::unique_ptr<zkl::client> marked_client(const std::string &marker)
{
    auto c = std::make_unique<zkl::client>(make_client());
    zhandle_t *zh = zkl_client_handle(c->native_handle());
    for (const std::string &p : {std::string("/zkl-test"), std::string(tu_fixture_root)}) {
        int rc = zoo_create(zh, p.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE, 0, nullptr, 0);
        ck_assert(rc == ZOK || rc == ZNODEEXISTS);
    }
    ck_assert_int_eq(zoo_create(zh, marker.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE,
                                ZOO_EPHEMERAL, nullptr, 0),
                     ZOK);
    return c;
}

static bool session_open(const std::string &marker)
{
    return tu_exists(tu_fixture_zk, marker.c_str());
}

static bool session_closes(const std::string &marker)
{
    return wait_for([&] { return !session_open(marker); });
}

// Each kind of object alone outlives the user's client variable: it still
// works, and the session closes when the object goes.
START_TEST(test_objects_outlive_the_client_variable)
{
    {
        std::string marker = P("marker-mutex");
        auto c = marked_client(marker);
        auto m = std::make_unique<zkl::mutex>(*c, P("o/m"));
        c.reset();
        {
            std::lock_guard<zkl::mutex> g(*m);
            ck_assert(m->is_held());
            ck_assert_int_eq(tu_children(tu_fixture_zk, P("o/m").c_str()), 1);
        }
        ck_assert(session_open(marker));
        m.reset();
        ck_assert(session_closes(marker));
    }
    {
        std::string marker = P("marker-rw");
        auto c = marked_client(marker);
        auto rw = std::make_unique<zkl::shared_mutex>(*c, P("o/rw"));
        c.reset();
        rw->lock_shared(); // left held: the destructor gives it back
        ck_assert_int_eq(tu_children(tu_fixture_zk, P("o/rw").c_str()), 1);
        ck_assert(session_open(marker));
        rw.reset();
        ck_assert(session_closes(marker));
        ck_assert_int_eq(tu_children(tu_fixture_zk, P("o/rw").c_str()), 0);
    }
    {
        std::string marker = P("marker-lease");
        auto c = marked_client(marker);
        std::optional<zkl::lease> lease;
        {
            zkl::semaphore s(*c, P("o/s"), 2);
            lease = s.acquire(); // the lease keeps its semaphore
        }
        c.reset();
        ck_assert(lease->is_held());
        ck_assert_int_gt(lease->token(), 0);
        ck_assert(lease_nodes(P("o/s"), 1));
        ck_assert(session_open(marker));
        lease.reset();
        ck_assert(lease_nodes(P("o/s"), 0));
        ck_assert(session_closes(marker));
    }
    {
        std::string marker = P("marker-semmutex");
        auto c = marked_client(marker);
        auto sm = std::make_unique<zkl::semaphore_mutex>(*c, P("o/sm"));
        c.reset();
        ck_assert(sm->try_lock_for(10s));
        ck_assert_int_eq(tu_children(tu_fixture_zk, P("o/sm").c_str()), 1);
        sm->unlock();
        ck_assert(session_open(marker));
        sm.reset();
        ck_assert(session_closes(marker));
    }
    {
        std::string marker = P("marker-multi");
        auto c = marked_client(marker);
        std::unique_ptr<zkl::multi_lock> ml;
        {
            zkl::mutex x(*c, P("o/x")), y(*c, P("o/y"));
            ml = std::make_unique<zkl::multi_lock>(std::initializer_list<zkl::lock_ref>{x, y});
        } // the multi-lock keeps its members
        c.reset();
        {
            std::lock_guard<zkl::multi_lock> g(*ml);
            ck_assert(ml->is_held());
            ck_assert_int_eq(tu_children(tu_fixture_zk, P("o/x").c_str()), 1);
            ck_assert_int_eq(tu_children(tu_fixture_zk, P("o/y").c_str()), 1);
        }
        ck_assert(session_open(marker));
        ml.reset();
        ck_assert(session_closes(marker));
    }
    {
        // A copy of the client keeps the session too.
        std::string marker = P("marker-copy");
        auto c = marked_client(marker);
        zkl::client copy = *c;
        c.reset();
        ck_assert(session_open(marker));
        ck_assert_int_ne(copy.session_id(), 0);
    }
    ck_assert(session_closes(P("marker-copy")));
}
END_TEST

START_TEST(test_multi_lock_of_mixed_members)
{
    zkl::client c = make_client();
    zkl::mutex a(c, P("ml/a"));
    zkl::shared_mutex rw(c, P("ml/rw"));
    zkl::semaphore_mutex sm(c, P("ml/sm"));
    zkl::multi_lock inner{a, rw.read_side()};
    zkl::multi_lock ml{zkl::lock_ref(inner), sm};
    {
        std::unique_lock<zkl::multi_lock> g(ml, 10s);
        ck_assert(g.owns_lock());
        ck_assert(ml.is_held());
        ck_assert(a.is_held() && rw.is_held_shared() && sm.is_held());
        ck_assert_int_eq(children(c, P("ml/a")), 1);
        ck_assert_int_eq(children(c, P("ml/rw")), 1);
        ck_assert_int_eq(children(c, P("ml/sm")), 1);
        // Another thread cannot take the mutex member meanwhile.
        bool other = true;
        std::thread t([&] { other = a.try_lock_for(100ms); });
        t.join();
        ck_assert(!other);
    }
    ck_assert(!ml.is_held() && !a.is_held() && !sm.is_held());
    ck_assert_int_eq(children(c, P("ml/a")) + children(c, P("ml/rw")) + children(c, P("ml/sm")),
                     0);
    // The paths form: one mutex per path.
    zkl::multi_lock paths(c, {P("ml/p1"), P("ml/p2")});
    ck_assert(paths.try_lock_for(10s));
    ck_assert_int_eq(children(c, P("ml/p1")) + children(c, P("ml/p2")), 2);
    paths.unlock();
    ck_assert_int_eq(children(c, P("ml/p1")) + children(c, P("ml/p2")), 0);
}
END_TEST

// The hooks of every kind, after one session expiry; unlock() of a lost
// hold does not throw, a lost lease's release() does.
START_TEST(test_lost_hold_calls_the_hook_and_unlock_does_not_throw)
{
    zkl::client c = make_client();
    zkl::mutex m(c, P("lost/m"));
    zkl::shared_mutex rw(c, P("lost/rw"));
    zkl::semaphore_mutex sm(c, P("lost/sm"));
    zkl::semaphore sem(c, P("lost/s"), 2);
    std::mutex mu;
    std::vector<std::pair<std::string, int64_t>> seen;
    auto note = [&](const char *who, int64_t t) {
        std::lock_guard<std::mutex> g(mu);
        seen.emplace_back(who, t);
    };
    m.set_on_lost([&](int64_t t) { note("mutex", t); });
    rw.set_on_lost([&](bool write, int64_t t) { note(write ? "write" : "read", t); });
    sm.set_on_lost([&](int64_t t) { note("semmutex", t); });
    sem.set_on_lost([&](int64_t t) { note("lease", t); });
    m.lock();
    rw.lock();
    sm.lock();
    zkl::lease l = sem.acquire();
    const int64_t tm = m.token(), tw = rw.token(), ts = sm.token(), tl = l.token();
    int64_t session = c.session_id();
    tu_expire_session(c.native_handle());
    ck_assert(wait_for([&] {
        std::lock_guard<std::mutex> g(mu);
        return seen.size() >= 4;
    }));
    {
        std::lock_guard<std::mutex> g(mu);
        ck_assert_int_eq(seen.size(), 4);
        auto token_of = [&](const std::string &who) -> int64_t {
            for (const auto &e : seen)
                if (e.first == who)
                    return e.second;
            return -1;
        };
        ck_assert_int_eq(token_of("mutex"), tm);
        ck_assert_int_eq(token_of("write"), tw);
        ck_assert_int_eq(token_of("semmutex"), ts);
        ck_assert_int_eq(token_of("lease"), tl);
    }
    ck_assert(!m.is_held() && !rw.is_held() && !sm.is_held() && !l.is_held());
    bool threw_lost = false;
    try {
        (void)m.token();
    } catch (const zkl::error &e) {
        threw_lost = e.code() == zkl::errc::lost;
    }
    ck_assert(threw_lost);
    // The holds are gone: no exception (a lock_guard's destructor may call
    // unlock()).
    m.unlock();
    rw.unlock();
    sm.unlock();
    threw_lost = false;
    try {
        l.release();
    } catch (const zkl::error &e) {
        threw_lost = e.code() == zkl::errc::lost;
    }
    ck_assert(threw_lost);
    ck_assert(!l);
    m.set_on_lost(nullptr);
    rw.set_on_lost(nullptr);
    sm.set_on_lost(nullptr);
    sem.set_on_lost(nullptr);
    // Once the client has re-opened a session, the locks work again.
    ck_assert(wait_for([&] {
        return c.state() == zkl::state::connected && c.session_id() != session;
    }));
    ck_assert(m.try_lock_for(10s));
    ck_assert_int_gt(m.token(), tm);
    m.unlock();
    std::optional<zkl::lease> again = sem.try_acquire_for(10s);
    ck_assert(again.has_value());
    ck_assert_int_gt(again->token(), tl);
}
END_TEST

// Revocation requests reach each kind's hook with the token of the hold
// asked; the holder lets go and the waiter gets the lock.
START_TEST(test_revoke_hooks_hear_a_request_and_the_holder_lets_go)
{
    zkl::client c = make_client(), other = make_client();
    zkl::mutex m(c, P("rv/m")), mw(other, P("rv/m"));
    zkl::shared_mutex rw(c, P("rv/rw"));
    zkl::semaphore_mutex sm(c, P("rv/sm"));
    std::mutex mu;
    std::vector<std::pair<std::string, int64_t>> seen;
    auto note = [&](const std::string &who, int64_t t) {
        std::lock_guard<std::mutex> g(mu);
        seen.emplace_back(who, t);
    };
    auto token_of = [&](const std::string &who) -> int64_t {
        std::lock_guard<std::mutex> g(mu);
        for (const auto &e : seen)
            if (e.first == who)
                return e.second;
        return -1;
    };
    m.set_on_revoke([&](int64_t t) { note("mutex", t); });
    rw.set_on_revoke([&](bool write, int64_t t) { note(write ? "write" : "read", t); });
    sm.set_on_revoke([&](int64_t t) { note("semmutex", t); });
    ck_assert(!other.revoke(P("rv/m"))); // nobody holds yet
    m.lock();
    rw.lock_shared();
    sm.lock();
    ck_assert(other.revoke(P("rv/m")));
    ck_assert(other.revoke(P("rv/rw")));
    ck_assert(other.revoke(P("rv/sm")));
    ck_assert(wait_for([&] {
        std::lock_guard<std::mutex> g(mu);
        return seen.size() >= 3;
    }));
    ck_assert_int_eq(token_of("mutex"), m.token());
    ck_assert_int_eq(token_of("read"), rw.token_shared());
    ck_assert_int_eq(token_of("semmutex"), sm.token());
    // Cooperative: nothing was released by itself.
    ck_assert(m.is_held() && rw.is_held_shared() && sm.is_held());
    ck_assert(!mw.try_lock());
    m.unlock();
    ck_assert(mw.try_lock_for(10s));
    mw.unlock();
    rw.unlock_shared();
    sm.unlock();
    m.set_on_revoke(nullptr);
    rw.set_on_revoke(nullptr);
    sm.set_on_revoke(nullptr);
    {
        std::lock_guard<std::mutex> g(mu);
        ck_assert_int_eq(seen.size(), 3); // each request told once
    }
    ck_assert_int_eq(children(c, P("rv/m")) + children(c, P("rv/rw")) + children(c, P("rv/sm")),
                     0);
}
END_TEST

// Writes that the server applies only while the writer holds.
// A node `leaf` under the test's root, made with its ancestors, for
// guarded writes; read() gives its data.
struct data_node {
    std::string path;
    explicit data_node(const char *leaf) : path(P(leaf))
    {
        for (const std::string &p :
             {std::string("/zkl-test"), std::string(tu_fixture_root), path}) {
            int rc =
                zoo_create(tu_fixture_zk, p.c_str(), "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, nullptr, 0);
            ck_assert(rc == ZOK || rc == ZNODEEXISTS);
        }
    }
    std::string read() const
    {
        char buf[32] = {0};
        int len = sizeof buf - 1;
        ck_assert_int_eq(zoo_get(tu_fixture_zk, path.c_str(), 0, buf, &len, nullptr), ZOK);
        return std::string(buf, len > 0 ? static_cast<size_t>(len) : 0);
    }
};

START_TEST(test_guarded_set_writes_only_while_held)
{
    zkl::client c = make_client();
    data_node node("data");
    const std::string &data = node.path;
    auto read = [&] { return node.read(); };
    auto code_of = [](auto &&fn) -> int {
        try {
            fn();
        } catch (const zkl::error &err) {
            return err.code().value();
        }
        return 0;
    };
    zkl::mutex m(c, P("g/m"));
    ck_assert_int_eq(code_of([&] { m.guarded_set(data, "no"); }), ZKL_ENOTHELD);
    {
        std::lock_guard<zkl::mutex> g(m);
        m.guarded_set(data, "mutex");
    }
    ck_assert(read() == "mutex");
    zkl::shared_mutex rw(c, P("g/rw"));
    {
        std::shared_lock<zkl::shared_mutex> r(rw); // a read hold does not count
        ck_assert_int_eq(code_of([&] { rw.guarded_set(data, "no"); }), ZKL_ENOTHELD);
    }
    {
        std::lock_guard<zkl::shared_mutex> w(rw);
        rw.guarded_set(data, "writer");
    }
    ck_assert(read() == "writer");
    zkl::semaphore_mutex sm(c, P("g/sm"));
    ck_assert_int_eq(code_of([&] { sm.guarded_set(data, "no"); }), ZKL_ENOTHELD);
    {
        std::lock_guard<zkl::semaphore_mutex> g(sm);
        sm.guarded_set(data, "semmutex");
    }
    ck_assert(read() == "semmutex");
    zkl::semaphore s(c, P("g/s"), 1);
    {
        zkl::lease l = s.acquire();
        l.guarded_set(data, std::string("lease"));
    }
    ck_assert(read() == "lease");
    zkl::lease empty;
    ck_assert_int_eq(code_of([&] { empty.guarded_set(data, "no"); }), ZKL_ENOTHELD);
    ck_assert(read() == "lease");
}
END_TEST

// ---- what the C++ API adds over the blocking core ------------------------------

int code_of_call(const std::function<void()> &fn, std::string *what = nullptr,
                 std::string *detail = nullptr)
{
    try {
        fn();
    } catch (const zkl::error &err) {
        if (what)
            *what = err.what();
        if (detail)
            *detail = err.detail();
        return err.code().value();
    }
    return 0;
}

START_TEST(test_errc_names_every_code_and_what_carries_the_detail)
{
    // Every code of the C list has a zkl::errc name.
    auto named = [](int code) {
        for (zkl::errc e : zkl::detail::all_errc)
            if (static_cast<int>(e) == code)
                return true;
        return false;
    };
#define CHECK_NAMED(name, code, msg) ck_assert_msg(named(code), "no zkl::errc for ZKL_" #name);
    ZKL_ERRNO_MAP(CHECK_NAMED)
#undef CHECK_NAMED
    ck_assert_int_eq(static_cast<int>(zkl::errc::queue_too_long), ZKL_EQUEUE);
    ck_assert_int_eq(static_cast<int>(zkl::errc::forked), ZKL_EFORK);

    // what() carries the failure's detail ...
    std::string what, detail;
    ck_assert_int_eq(
        code_of_call([] { zkl::client bad("127.0.0.1:99999", 1000ms); }, &what, &detail),
        ZKL_EINVAL);
    ck_assert_msg(what.find("port 99999") != std::string::npos, "what(): %s", what.c_str());
    ck_assert_msg(what.find("zkl::client") != std::string::npos, "what(): %s", what.c_str());
    ck_assert_msg(detail.find("port 99999") != std::string::npos, "detail(): %s", detail.c_str());
    // ... and a failure without one shows none, not an older failure's:
    // neither the C++ one above nor one of a C call made since.
    zkl::client c = make_client();
    zkl::mutex m(c, P("d/m"));
    zkl_client *raw = nullptr;
    ck_assert_int_eq(zkl_client_open("127.0.0.1:0", 1000, &raw), ZKL_EINVAL);
    ck_assert(std::strlen(zkl_last_error_text()) > 0);
    ck_assert_int_eq(code_of_call([&] { m.unlock(); }, &what, &detail), ZKL_ENOTHELD);
    ck_assert_msg(detail.empty(), "detail(): %s", detail.c_str());
    ck_assert_msg(what.find("port") == std::string::npos, "what(): %s", what.c_str());
    ck_assert(what.find(zkl_strerror(ZKL_ENOTHELD)) != std::string::npos);
    // An error copies without throwing.
    static_assert(std::is_nothrow_copy_constructible_v<zkl::error>);
}
END_TEST

START_TEST(test_a_state_listener_hears_the_session_and_stops_with_its_handle)
{
    zkl::client c = make_client();
    std::mutex mu;
    std::vector<zkl::state> seen;
    auto has = [&](zkl::state st) {
        std::lock_guard<std::mutex> g(mu);
        for (zkl::state x : seen)
            if (x == st)
                return true;
        return false;
    };
    {
        zkl::listener l = c.listen([&](zkl::state st) {
            std::lock_guard<std::mutex> g(mu);
            seen.push_back(st);
        });
        tu_expire_session(c.native_handle());
        ck_assert(wait_for([&] { return has(zkl::state::lost) && has(zkl::state::connected); }));
    }
    std::size_t heard;
    {
        std::lock_guard<std::mutex> g(mu);
        heard = seen.size();
    }
    // Gone with its handle: the next session change is not heard.
    tu_expire_session(c.native_handle());
    ck_assert(wait_for([&] { return c.state() == zkl::state::connected; }));
    std::lock_guard<std::mutex> g(mu);
    ck_assert_uint_eq(seen.size(), heard);
}
END_TEST

START_TEST(test_metrics_as_structs_and_prometheus_text)
{
    zkl::client c(tu_hosts(), 10000ms, zkl::client_options().max_metric_paths(1));
    zkl::mutex m(c, P("mx/a")), other(c, P("mx/b"));
    for (int i = 0; i < 2; i++) {
        std::lock_guard<zkl::mutex> g(m);
    }
    {
        std::lock_guard<zkl::mutex> g(other); // beyond the limit: totals only
    }
    zkl_metrics t = c.metrics();
    ck_assert_uint_eq(t.acquired, 3);
    std::optional<zkl_metrics> pa = c.path_metrics(P("mx/a"));
    ck_assert(pa.has_value());
    ck_assert_uint_eq(pa->releases, 2);
    ck_assert(!c.path_metrics(P("mx/b")).has_value());
    std::vector<std::string> paths = c.metrics_paths();
    ck_assert_uint_eq(paths.size(), 1);
    ck_assert(paths[0] == P("mx/a"));
    std::string text = c.metrics_text();
    ck_assert(text.find("zkl_lock_acquired_total{path=\"" + P("mx/a") + "\"} 2\n") !=
              std::string::npos);
    ck_assert(text.find("\nzkl_client_lock_acquired_total 3\n") != std::string::npos);
}
END_TEST

struct outcome {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::error_code> codes;
    std::thread::id thread;
    std::function<void(std::error_code)> fn()
    {
        return [this](std::error_code ec) {
            std::lock_guard<std::mutex> g(mu);
            codes.push_back(ec);
            thread = std::this_thread::get_id();
            cv.notify_all();
        };
    }
    std::optional<std::error_code> wait(std::size_t n = 1)
    {
        std::unique_lock<std::mutex> g(mu);
        if (!cv.wait_for(g, 15s, [&] { return codes.size() >= n; }))
            return std::nullopt;
        return codes[n - 1];
    }
};

START_TEST(test_asynchronous_requests_of_every_recipe)
{
    zkl::client c = make_client(), other = make_client();
    // A mutex: held, its token and node, released.
    zkl::mutex m(c, P("as/m"));
    outcome o;
    zkl::request r = m.lock_async(5s, o.fn());
    auto ec = o.wait();
    ck_assert(ec && !*ec);
    ck_assert(r.is_held());
    ck_assert_int_gt(r.token(), 0);
    ck_assert(r.node().compare(0, P("as/m/").size(), P("as/m/")) == 0);
    r.release();
    ck_assert(!r.is_held());
    ck_assert_int_eq(children(c, P("as/m")), 0);
    // Cancelled while it waits: the callback hears canceled, no node stays.
    zkl::mutex held(other, P("as/m"));
    held.lock();
    outcome oc;
    zkl::request rc = m.lock_async(zkl::forever, oc.fn());
    ck_assert(wait_for([&] { return children(c, P("as/m")) == 2; }));
    ck_assert(rc.cancel());
    auto ecc = oc.wait();
    ck_assert(ecc && *ecc == zkl::errc::canceled);
    ck_assert(wait_for([&] { return children(c, P("as/m")) == 1; }));
    ck_assert(!rc.cancel()); // its callback ran: too late
    held.unlock();
    // The other recipes.
    zkl::shared_mutex rw(c, P("as/rw"));
    zkl::semaphore_mutex sm(c, P("as/sm"));
    zkl::semaphore sem(c, P("as/sem"), 3);
    zkl::multi_lock ml(c, {P("as/ml1"), P("as/ml2")});
    outcome o2;
    std::vector<zkl::request> rs;
    rs.push_back(rw.lock_shared_async(5s, o2.fn()));
    rs.push_back(rw.lock_async(5s, o2.fn())); // after the reader: waits for it
    rs.push_back(sm.lock_async(5s, o2.fn()));
    rs.push_back(sem.acquire_async(5s, o2.fn(), 2));
    rs.push_back(ml.lock_async(5s, o2.fn()));
    ck_assert(o2.wait(4).has_value()); // all but the writer
    ck_assert(rs[0].is_held() && !rs[1].is_held() && rs[2].is_held() && rs[3].is_held() &&
              rs[4].is_held());
    rs[0].release(); // the writer gets in
    ck_assert(o2.wait(5).has_value());
    ck_assert(rs[1].is_held());
    for (std::size_t i = 1; i < rs.size(); i++)
        rs[i].release();
    for (const char *leaf : {"as/rw", "as/sm", "as/sem", "as/ml1", "as/ml2"})
        ck_assert(wait_for([&] { return children(c, P(leaf)) == 0; }));
    // From an event loop: the callback runs on the thread that dispatches.
    zkl::client loop = make_client();
    int fd = loop.event_fd();
    zkl::mutex lm(loop, P("as/loop"));
    outcome ol;
    zkl::request lr = lm.lock_async(5s, ol.fn());
    auto end = clk::now() + 15s;
    while (ol.codes.empty() && clk::now() < end) {
        struct pollfd pfd = {fd, POLLIN, 0};
        if (poll(&pfd, 1, 100) == 1)
            loop.dispatch();
    }
    ck_assert(!ol.codes.empty() && !ol.codes[0]);
    ck_assert(ol.thread == std::this_thread::get_id());
}
END_TEST

// With lost_requests(true), a held request whose node someone else deletes
// hears it through the same `done`, which runs a second time.
START_TEST(test_a_lost_asynchronous_hold_is_told_when_asked)
{
    zkl::client c(tu_hosts(), 10000ms, zkl::client_options().lost_requests(true));
    zkl::mutex m(c, P("al/m"));
    outcome o;
    zkl::request r = m.lock_async(5s, o.fn());
    std::optional<std::error_code> held = o.wait();
    ck_assert(held.has_value() && !*held); // held: its node is there to delete
    const std::string node = r.node();
    ck_assert_int_eq(zoo_delete(tu_fixture_zk, node.c_str(), -1), ZOK);
    auto lost = o.wait(2);
    ck_assert_msg(lost.has_value(), "no second call of done");
    ck_assert(*lost == zkl::errc::lost);
    ck_assert(!r.is_held());
    bool threw_lost = false;
    try {
        r.release();
    } catch (const zkl::error &e) {
        threw_lost = e.code() == zkl::errc::lost;
    }
    ck_assert(threw_lost);
    ck_assert_int_eq(children(c, P("al/m")), 0);
    std::lock_guard<std::mutex> g(o.mu);
    ck_assert_int_eq(o.codes.size(), 2);
}
END_TEST

START_TEST(test_a_cancel_handle_ends_one_wait)
{
    zkl::client c = make_client(), other = make_client();
    zkl::mutex held(other, P("ch/m"));
    held.lock();
    zkl::mutex m(c, P("ch/m"));
    zkl::cancel_handle h;
    ck_assert(!h.is_fired());
    int got = 1;
    std::thread t([&] { got = code_of_call([&] { m.lock(h); }); });
    ck_assert(wait_for([&] { return children(c, P("ch/m")) == 2; }));
    h.fire();
    t.join();
    ck_assert_int_eq(got, ZKL_ECANCELED);
    ck_assert(h.is_fired());
    ck_assert_int_eq(children(c, P("ch/m")), 1);
    // A fired handle: at once; another handle: the usual wait.
    ck_assert_int_eq(code_of_call([&] { (void)m.try_lock_for(5s, h); }), ZKL_ECANCELED);
    zkl::cancel_handle fresh;
    ck_assert(!m.try_lock_for(100ms, fresh));
    held.unlock();
    ck_assert(m.try_lock_for(5s, fresh));
    m.unlock();
}
END_TEST

START_TEST(test_guarded_multi_writes_only_while_held)
{
    zkl::client c = make_client();
    data_node node("gm-data");
    const std::string &data = node.path;
    auto read = [&] { return node.read(); };
    auto set = [&](const char *v) {
        zoo_op_t op;
        zoo_set_op_init(&op, data.c_str(), v, static_cast<int>(std::strlen(v)), -1, nullptr);
        return op;
    };
    zkl::mutex m(c, P("gm/m"));
    zoo_op_t no = set("no");
    ck_assert_int_eq(code_of_call([&] { m.guarded_multi(&no, 1); }), ZKL_ENOTHELD);
    {
        std::lock_guard<zkl::mutex> g(m);
        zoo_op_t op = set("mutex");
        zoo_op_result_t res;
        m.guarded_multi(&op, 1, &res);
        ck_assert_int_eq(res.err, ZOK);
    }
    ck_assert(read() == "mutex");
    zkl::shared_mutex rw(c, P("gm/rw"));
    {
        std::lock_guard<zkl::shared_mutex> w(rw);
        zoo_op_t op = set("writer");
        rw.guarded_multi(&op, 1);
    }
    ck_assert(read() == "writer");
    zkl::semaphore_mutex sm(c, P("gm/sm"));
    {
        std::lock_guard<zkl::semaphore_mutex> g(sm);
        zoo_op_t op = set("semmutex");
        sm.guarded_multi(&op, 1);
    }
    ck_assert(read() == "semmutex");
    zkl::semaphore s(c, P("gm/s"), 1);
    {
        zkl::lease l = s.acquire();
        zoo_op_t op = set("lease");
        l.guarded_multi(&op, 1);
    }
    ck_assert(read() == "lease");
}
END_TEST

START_TEST(test_participants_and_the_semaphore_limit)
{
    zkl::client c = make_client(), other = make_client();
    zkl::mutex a(c, P("pt/m")), b(other, P("pt/m"));
    a.lock();
    std::thread t([&] { std::lock_guard<zkl::mutex> g(b); });
    ck_assert(wait_for([&] { return children(c, P("pt/m")) == 2; }));
    std::vector<zkl::participant> ps = c.participants(P("pt/m"));
    ck_assert_uint_eq(ps.size(), 2);
    ck_assert(ps[0].holds && !ps[1].holds);
    ck_assert(ps[0].kind == "lock-" && ps[0].readable);
    ck_assert_int_eq(ps[0].token, a.token());
    ck_assert(a.node() == P("pt/m") + "/" + ps[0].node);
    ck_assert(ps[0].owner.find(" " + std::to_string(getpid())) != std::string::npos);
    ck_assert_int_lt(ps[0].seq, ps[1].seq);
    a.unlock();
    t.join();
    ck_assert(c.participants(P("pt/none")).empty());
    ck_assert_int_eq(c.semaphore_limit(P("pt/m")), 0);
    zkl::semaphore s(c, P("pt/s"), 4);
    {
        zkl::lease l = s.acquire();
        ck_assert_int_eq(c.semaphore_limit(P("pt/s")), 4);
        std::vector<zkl::participant> sp = c.participants(P("pt/s"));
        ck_assert(sp.size() == 1 && sp[0].holds && sp[0].leases == 1);
    }
}
END_TEST

// zkl::latch: one leads, its token rises with each leadership, the listener
// hears each change, and the destructor leaves. A mutex with an id writes
// it as its node's data.
START_TEST(test_latch_raii_await_listener_and_token)
{
    zkl::client c = make_client(), other = make_client();
    std::atomic<int> ones{0}, zeros{0};
    std::int64_t first;
    {
        /* The listener is set before the latch joins: it hears the first
         * leadership, however soon that comes. */
        zkl::latch a(c, P("el/x"), "a", [&](bool leading) { (leading ? ones : zeros)++; });
        ck_assert(a.await(20s));
        ck_assert(a.is_leader());
        first = a.token();
        ck_assert(wait_for([&] { return ones.load() == 1; }));
        zkl::latch b(other, P("el/x"), "b");
        ck_assert(!b.await(0ms));
        ck_assert(wait_for([&] { return children(c, P("el/x")) == 2; }));
        std::vector<zkl::participant> ps = c.participants(P("el/x"));
        ck_assert(ps[0].kind == "latch-" && ps[0].owner == "a" && ps[1].owner == "b");
        a.close();
        ck_assert_int_eq(zeros.load(), 1);
        b.await();
        ck_assert_int_gt(b.token(), first);
        try {
            (void)a.token();
            ck_abort_msg("a closed latch has no token");
        } catch (const zkl::error &e) {
            ck_assert(e.code() == zkl::errc::closed || e.code() == zkl::errc::not_held);
        }
    } // b leaves here
    ck_assert_int_eq(children(c, P("el/x")), 0);
    zkl::mutex m(c, P("el/m"), zkl::mutex_options().id("worker-1"));
    m.lock();
    ck_assert(c.participants(P("el/m"))[0].owner == "worker-1");
    m.unlock();
}
END_TEST

// The security options. ACL entries: two identities share one lock tree and
// a third is kept out. TLS and SASL: where this zkl has them and the
// servers serve them (check-secure runs this suite under
// with-zk.sh --tls --sasl), a mutex is held through each; a zkl without
// them refuses them with errc::not_supported, naming the configure option.
START_TEST(test_security_options)
{
    // base64(sha1("user:password")), ZooKeeper's digest of each credential.
    const std::string alice_id = "alice:SQICbGEP3vUd4FffsXSLZ8/1XtI=";
    const std::string bob_id = "bob:EXcpcQQk6JBIDFnxSqkpDLIhkxw=";
    const int contend = ZKL_PERM_READ | ZKL_PERM_CREATE | ZKL_PERM_DELETE | ZKL_PERM_WRITE;
    // The fixture removes what the test leaves, as alice.
    const char *alice = "alice:alice-pw";
    zoo_add_auth(tu_fixture_zk, "digest", alice, (int)std::strlen(alice), nullptr, nullptr);
    // The test's root is open: the shared ACL starts below it.
    tu_mkdirs(tu_fixture_zk, tu_fixture_root);
    auto shared = [&](const char *who) {
        return zkl::client(tu_hosts(), 10000ms,
                           zkl::client_options()
                               .digest_auth(who)
                               .add_acl("digest", alice_id, ZKL_PERM_ALL)
                               .add_acl("digest", bob_id, contend));
    };
    {
        zkl::client a = shared(alice), b = shared("bob:bob-pw");
        zkl::mutex ma(a, P("acl/lock")), mb(b, P("acl/lock"));
        ma.lock();
        ck_assert(!mb.try_lock());
        ma.unlock();
        ck_assert(mb.try_lock_for(10s));
        ck_assert_int_gt(mb.token(), 0);
        mb.unlock();
        zkl::client stranger = make_client();
        zkl::mutex ms(stranger, P("acl/lock"));
        try {
            ms.try_lock_for(10s);
            ck_abort_msg("a client without either credential took the lock");
        } catch (const zkl::error &e) {
            ck_assert(e.code() == zkl::errc::not_authorized);
        }
        ck_assert_int_eq(children(a, P("acl/lock")), 0);
    }
    try {
        zkl::client_options().add_acl("nope", "x", ZKL_PERM_READ);
        ck_abort_msg("an unknown scheme was taken");
    } catch (const zkl::error &e) {
        ck_assert(e.code() == zkl::errc::invalid_argument);
        ck_assert_ptr_nonnull(std::strstr(e.what(), "zkl::client_options::add_acl"));
        ck_assert_ptr_nonnull(std::strstr(e.what(), "nope"));
    }
#ifdef HAVE_ZOOKEEPER_INIT_SSL
    const char *secure = std::getenv("ZKL_TEST_SECURE_HOSTS");
    const char *tls_dir = std::getenv("ZKL_TEST_TLS_DIR");
    const char *sasl_dir = std::getenv("ZKL_TEST_SASL_DIR");
    if (secure == nullptr || tls_dir == nullptr || sasl_dir == nullptr) {
        // A plain `make check` of a TLS build: the options are taken.
        zkl::client_options().tls("ca.pem", "client.pem", "client.key");
        zkl::client_options().sasl("DIGEST-MD5", "alice", "alice.pw");
        return;
    }
    const std::string t = tls_dir, d = sasl_dir;
    {
        zkl::client c(secure, 10000ms,
                      zkl::client_options().tls(t + "/ca.pem", t + "/client.pem",
                                                t + "/client.enc.key", "zkl-key-pw"));
        zkl::mutex m(c, P("tls/m"));
        std::lock_guard<zkl::mutex> g(m);
        ck_assert(m.is_held());
    }
    {
        zkl::client c(tu_hosts(), 10000ms,
                      zkl::client_options().sasl("DIGEST-MD5", "alice", d + "/alice.pw"));
        zkl::mutex m(c, P("sasl/m"));
        std::lock_guard<zkl::mutex> g(m);
        ck_assert(m.is_held());
    }
    try {
        zkl::client c(tu_hosts(), 10000ms,
                      zkl::client_options().sasl("DIGEST-MD5", "alice", d + "/bob.pw"));
        ck_abort_msg("a wrong SASL password was taken");
    } catch (const zkl::error &e) {
        ck_assert(e.code() == zkl::errc::not_authorized);
    }
    // A server the CA does not vouch for: the reason, and no word of an
    // ACL, which nothing consulted.
    try {
        zkl::client c(secure, 10000ms,
                      zkl::client_options().tls(t + "/other-ca.pem", t + "/client.pem",
                                                t + "/client.key"));
        ck_abort_msg("an untrusted server was taken");
    } catch (const zkl::error &e) {
        ck_assert(e.code() == zkl::errc::not_authorized);
        ck_assert_msg(std::strstr(e.what(), "not trusted") != nullptr, "%s", e.what());
        ck_assert_msg(std::strstr(e.what(), "not authorized by the ZooKeeper ACL") == nullptr,
                      "%s", e.what());
    }
#else
    for (int which = 0; which < 2; which++) {
        try {
            if (which == 0)
                zkl::client_options().tls("ca.pem", "client.pem", "client.key");
            else
                zkl::client_options().sasl("DIGEST-MD5", "alice", "alice.pw");
            ck_abort_msg("an option this zkl lacks was taken");
        } catch (const zkl::error &e) {
            ck_assert(e.code() == zkl::errc::not_supported);
            ck_assert_ptr_nonnull(std::strstr(e.what(), "--with-zookeeper"));
        }
    }
#endif
}
END_TEST

int main()
{
    Suite *s = suite_create("cpp");
    TCase *tc = tu_tcase("cpp", 120);
    tu_add_fixture(tc, "cpp");
    tcase_add_test(tc, test_the_readme_snippet);
    tcase_add_test(tc, test_lock_guard_excludes_threads_sharing_one_mutex);
    tcase_add_test(tc, test_lock_guard_excludes_threads_with_a_mutex_each);
    tcase_add_test(tc, test_mutex_is_reentrant_per_thread);
    tcase_add_test(tc, test_shared_lock_readers_together_writer_alone);
    tcase_add_test(tc, test_lease_raii_gives_the_lease_back);
    tcase_add_test(tc, test_try_lock_for_times_out_and_leaves_no_node);
    tcase_add_test(tc, test_error_codes_and_category);
    tcase_add_test(tc, test_timeouts_round_up_to_milliseconds);
    tcase_add_test(tc, test_objects_outlive_the_client_variable);
    tcase_add_test(tc, test_multi_lock_of_mixed_members);
    tcase_add_test(tc, test_lost_hold_calls_the_hook_and_unlock_does_not_throw);
    tcase_add_test(tc, test_guarded_set_writes_only_while_held);
    tcase_add_test(tc, test_revoke_hooks_hear_a_request_and_the_holder_lets_go);
    tcase_add_test(tc, test_errc_names_every_code_and_what_carries_the_detail);
    tcase_add_test(tc, test_a_state_listener_hears_the_session_and_stops_with_its_handle);
    tcase_add_test(tc, test_metrics_as_structs_and_prometheus_text);
    tcase_add_test(tc, test_asynchronous_requests_of_every_recipe);
    tcase_add_test(tc, test_a_lost_asynchronous_hold_is_told_when_asked);
    tcase_add_test(tc, test_a_cancel_handle_ends_one_wait);
    tcase_add_test(tc, test_guarded_multi_writes_only_while_held);
    tcase_add_test(tc, test_participants_and_the_semaphore_limit);
    tcase_add_test(tc, test_security_options);
    tcase_add_test(tc, test_latch_raii_await_listener_and_token);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
