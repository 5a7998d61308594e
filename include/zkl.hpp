/*
 * zkl.hpp — the C++17 API of zkl, header-only, over the C API of zkl.h.
 *
 *   zkl::client c("zk1:2181,zk2:2181", std::chrono::seconds(10));
 *   zkl::mutex m(c, "/locks/orders");
 *   {
 *       std::lock_guard<zkl::mutex> hold(m);
 *       write_with_token(m.token());
 *   }
 *
 * Classes: zkl::error (a std::system_error of zkl::category()),
 * zkl::client_options, zkl::client (with its state listeners, metrics,
 * participants listing and event loop calls), zkl::listener, zkl::mutex
 * (TimedLockable), zkl::shared_mutex (SharedTimedLockable), zkl::semaphore
 * and its zkl::lease, zkl::semaphore_mutex (TimedLockable),
 * zkl::multi_lock (TimedLockable), zkl::lock_ref (a member of a
 * multi-lock), zkl::request (an asynchronous acquire), zkl::cancel_handle,
 * zkl::participant. Guarded multi-ops take libzookeeper_mt's zoo_op_t:
 * include zkl/zookeeper.h for them.
 *
 * Errors: every call that fails throws zkl::error, whose code() is
 * std::error_code(ZKL_E..., zkl::category()) (also comparable with the
 * zkl::errc names, one for every code), and whose what() names the call,
 * says the code's sentence and the failure's own detail if it has one
 * (zkl_last_error_text, cleared before each call: never an older
 * failure's); detail() gives that detail alone. Except:
 *  - try_lock*, try_acquire*: running out of time is `false` (an empty
 *    optional), not an exception; other failures throw;
 *  - unlock() and unlock_shared() do not throw for a hold that was lost
 *    with its session (ZKL_ELOST): the lock is not held afterwards, as
 *    unlock() promises, and std::lock_guard / std::unique_lock call it from
 *    their destructors, where an exception would end the program. A lost
 *    hold shows in is_held(), in token() (which throws) and in the hook of
 *    set_on_lost(). Other unlock failures (the thread holds nothing, a
 *    moved-from object) throw;
 *  - destructors never throw: a lease, or a lock object still held, is
 *    released on a best-effort basis and a failure is swallowed (its node
 *    goes with the session at the latest). Release explicitly to see it.
 *
 * Ownership: a zkl::client is a shared handle (copies share one session);
 * every lock object, lease and multi-lock keeps a share of what it uses (its
 * client; a lease its semaphore; a multi-lock its members). Objects can thus
 * be destroyed in any order: the C client is closed once its last user is
 * gone. Lock objects are movable, not copyable; a moved-from lock object or
 * client may only be destroyed or assigned to (a lock's calls then throw
 * errc::invalid_argument).
 *
 * Timeouts: any std::chrono duration, rounded up to whole milliseconds (a
 * negative one tries once without waiting; one above about 30 years waits
 * forever); try_*_until(t) waits for the time left until t on t's clock.
 *
 * Threads: as in zkl.h. A zkl::mutex, shared_mutex and multi_lock count
 * holds per thread (and are reentrant per thread); a semaphore_mutex holds
 * per object. Hooks (set_on_lost, set_on_revoke) run on the client's own
 * thread: they must not throw (an exception is swallowed) and must not
 * destroy the last owner of the client; a hook's setter is not called by
 * two threads at once on one object.
 */
#ifndef ZKL_HPP
#define ZKL_HPP

#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include "zkl.h"

/* libzookeeper_mt's multi-op types, defined by <zookeeper/zookeeper.h>
 * (include zkl/zookeeper.h to use the guarded multi-ops below). */
struct zoo_op;
struct zoo_op_result;

namespace zkl {

/* ------------------------------------------------------------------------
 * Errors
 * ---------------------------------------------------------------------- */

/* The zkl error codes by C++ names; their values are the C codes. */
enum class errc {
    invalid_argument = ZKL_EINVAL,
    out_of_memory = ZKL_ENOMEM,
    timed_out = ZKL_ETIMEDOUT,
    not_held = ZKL_ENOTHELD,
    lost = ZKL_ELOST,
    connection_loss = ZKL_ECONNLOSS,
    deadlock = ZKL_EDEADLK,
    closed = ZKL_ECLOSED,
    zookeeper = ZKL_EZK,
    not_authorized = ZKL_ENOAUTH,
    mismatch = ZKL_EMISMATCH,
    busy = ZKL_EBUSY,
    system = ZKL_ESYS,
    canceled = ZKL_ECANCELED,
    no_chroot = ZKL_ENOCHROOT,
    unresolved_host = ZKL_ERESOLVE,
    out_of_range = ZKL_ERANGE,
    no_entry = ZKL_ENOENT,
    queue_too_long = ZKL_EQUEUE,
    not_supported = ZKL_ENOTSUP,
    forked = ZKL_EFORK,
};

namespace detail {
/* Every name of errc, to prove the list whole: one per code of zkl.h's
 * ZKL_ERRNO_MAP, or the header does not compile. */
constexpr errc all_errc[] = {
    errc::invalid_argument, errc::out_of_memory, errc::timed_out,
    errc::not_held,         errc::lost,          errc::connection_loss,
    errc::deadlock,         errc::closed,        errc::zookeeper,
    errc::not_authorized,   errc::mismatch,      errc::busy,
    errc::system,           errc::canceled,      errc::no_chroot,
    errc::unresolved_host,  errc::out_of_range,  errc::no_entry,
    errc::queue_too_long,   errc::not_supported, errc::forked,
};
#define ZKL_HPP_ONE_(name, code, msg) +1
static_assert(sizeof all_errc / sizeof all_errc[0] == 0 ZKL_ERRNO_MAP(ZKL_HPP_ONE_),
              "zkl::errc lacks a code of ZKL_ERRNO_MAP");
#undef ZKL_HPP_ONE_
} // namespace detail

namespace detail {
class category_impl final : public std::error_category {
public:
    const char *name() const noexcept override { return "zkl"; }
    std::string message(int ev) const override { return zkl_strerror(ev); }
    /* The portable condition of each code, where there is one, so that
     * e.g. code() == std::errc::timed_out holds. */
    std::error_condition default_error_condition(int ev) const noexcept override
    {
        switch (ev) {
        case ZKL_EINVAL: return std::errc::invalid_argument;
        case ZKL_ENOMEM: return std::errc::not_enough_memory;
        case ZKL_ETIMEDOUT: return std::errc::timed_out;
        case ZKL_ENOTHELD: return std::errc::operation_not_permitted;
        case ZKL_EDEADLK: return std::errc::resource_deadlock_would_occur;
        case ZKL_ENOAUTH: return std::errc::permission_denied;
        case ZKL_EBUSY: return std::errc::device_or_resource_busy;
        case ZKL_ECANCELED: return std::errc::operation_canceled;
        default: return std::error_condition(ev, *this);
        }
    }
};
} // namespace detail

/* The category of zkl's codes: name() "zkl", message() zkl_strerror(). One
 * object per program. */
inline const std::error_category &category() noexcept
{
    static const detail::category_impl instance;
    return instance;
}

inline std::error_code make_error_code(errc e) noexcept
{
    return std::error_code(static_cast<int>(e), category());
}

/* What every failing call throws: code() is the negative ZKL_E... code in
 * zkl::category(); what() names the call, says the code's sentence and,
 * when the failure had one, its detail (zkl_last_error_text: which path,
 * entry or chroot, and why), which detail() gives alone ("" if none). */
class error : public std::system_error {
public:
    explicit error(int code, const std::string &what = "zkl", const std::string &detail = {})
        : std::system_error(code, category(), what), text_(make(detail))
    {
    }
    explicit error(errc e, const std::string &what = "zkl", const std::string &detail = {})
        : std::system_error(make_error_code(e), what), text_(make(detail))
    {
    }
    const char *what() const noexcept override { return text_->second.c_str(); }
    const std::string &detail() const noexcept { return text_->first; }

private:
    /* Shared, so that copying an error cannot throw. */
    std::shared_ptr<const std::pair<std::string, std::string>> make(const std::string &detail)
    {
        std::string all = std::system_error::what();
        if (!detail.empty())
            all += " (" + detail + ")";
        return std::make_shared<const std::pair<std::string, std::string>>(detail, all);
    }
    std::shared_ptr<const std::pair<std::string, std::string>> text_;
};

} // namespace zkl

namespace std {
template <> struct is_error_code_enum<zkl::errc> : true_type {};
} // namespace std

namespace zkl {

namespace detail {

/* Run one C call, `f()`, with the thread's details cleared first, so that
 * a failure without details of its own is not told with an older one's. */
template <class F> int run(F &&f)
{
    zkl_last_error_clear();
    return f();
}

/* Throw for a failed call (with run()): its code and its details. */
inline void check(int rc, const char *what)
{
    if (rc != 0)
        throw error(rc, what, zkl_last_error_text());
}

/* Beyond this many milliseconds (about 31 years) a wait is forever: the C
 * library counts its deadlines in 64-bit nanoseconds. */
constexpr long max_wait_ms = 1000L * 1000 * 1000 * 1000;

/* A duration as zkl's timeout: rounded up to whole milliseconds; negative
 * or zero: try once; too large to count: forever. */
template <class Rep, class Period>
long timeout_ms(const std::chrono::duration<Rep, Period> &d)
{
    using fms = std::chrono::duration<long double, std::milli>;
    const long double ms = std::chrono::duration_cast<fms>(d).count();
    if (!(ms > 0)) /* also NaN */
        return 0;
    if (ms >= static_cast<long double>(max_wait_ms))
        return ZKL_WAIT_FOREVER;
    /* Exact for integer durations: rounding up in their own type. */
    if constexpr (std::is_integral_v<Rep>)
        return static_cast<long>(std::chrono::ceil<std::chrono::milliseconds>(d).count());
    else {
        long whole = static_cast<long>(ms);
        return static_cast<long double>(whole) < ms ? whole + 1 : whole;
    }
}

template <class Clock, class Duration>
long timeout_ms_until(const std::chrono::time_point<Clock, Duration> &t)
{
    return timeout_ms(t - Clock::now());
}

/* Acquire with a timeout: true when held, false when the time ran out; any
 * other failure throws. */
inline bool timed(int rc, const char *what)
{
    if (rc == ZKL_ETIMEDOUT)
        return false;
    check(rc, what);
    return true;
}

/* A release called by unlock(): a hold lost with its session is gone all
 * the same (see the top of this file); other failures throw. */
inline void unlocked(int rc, const char *what)
{
    if (rc != ZKL_ELOST)
        check(rc, what);
}

/* A hook called by C with the token of a lost hold: exceptions cannot
 * cross the C frames, so they stop here. */
using lost_hook = std::function<void(std::int64_t)>;
inline void run_hook(void *arg, std::int64_t token) noexcept
{
    try {
        (*static_cast<lost_hook *>(arg))(token);
    } catch (...) {
    }
}

struct client_close {
    void operator()(zkl_client *c) const noexcept { zkl_client_close(c); }
};
struct lock_handle_free {
    void operator()(zkl_lock *l) const noexcept { zkl_lock_free(l); }
};
using lock_handle = std::unique_ptr<zkl_lock, lock_handle_free>;

} // namespace detail

/* ------------------------------------------------------------------------
 * Client
 * ---------------------------------------------------------------------- */

/* Options of a client (zkl_client_opts). Setters return *this to chain:
 *   zkl::client c(hosts, 10s, zkl::client_options().digest_auth("u:p"));
 * Not shared between threads while being set. */
class client_options {
public:
    client_options()
    {
        zkl_client_opts *o = nullptr;
        detail::check(detail::run([&] { return zkl_client_opts_new(&o); }), "zkl::client_options");
        o_.reset(o);
    }
    /* Open a new session by itself after expiry (default true). */
    client_options &reopen(bool on)
    {
        detail::check(detail::run([&] { return zkl_client_opts_set_reopen(o_.get(), on); }),
                      "zkl::client_options::reopen");
        return *this;
    }
    /* Create missing lock parents as container nodes (default true). */
    client_options &container_parents(bool on)
    {
        detail::check(
            detail::run([&] { return zkl_client_opts_set_container_parents(o_.get(), on); }),
            "zkl::client_options::container_parents");
        return *this;
    }
    /* Digest credentials "user:password" for every session. */
    client_options &digest_auth(const std::string &user_password)
    {
        detail::check(detail::run([&] {
                          return zkl_client_opts_set_digest_auth(o_.get(), user_password.c_str());
                      }),
                      "zkl::client_options::digest_auth");
        return *this;
    }
    /* Nodes only their authenticated creator may use (needs digest_auth);
     * false: open to anyone (the default). */
    client_options &creator_only_acl(bool on)
    {
        detail::check(detail::run([&] {
                          return zkl_client_opts_set_acl(o_.get(),
                                                         on ? ZKL_ACL_CREATOR : ZKL_ACL_OPEN);
                      }),
                      "zkl::client_options::creator_only_acl");
        return *this;
    }
    /* An entry of the ACL of every node the client creates (scheme
     * "world", "auth", "digest", "sasl", "x509" or "ip"; perms a nonzero
     * combination of ZKL_PERM_*); once one is added, the entries are that
     * ACL and creator_only_acl() no longer counts. See
     * zkl_client_opts_add_acl and docs/production.md. */
    client_options &add_acl(const std::string &scheme, const std::string &id, int perms)
    {
        detail::check(detail::run([&] {
                          return zkl_client_opts_add_acl(o_.get(), scheme.c_str(), id.c_str(),
                                                         perms);
                      }),
                      "zkl::client_options::add_acl");
        return *this;
    }
    /* TLS to the servers' secureClientPort, with a client certificate
     * (mutual TLS): PEM files; key_password empty for a key that is not
     * encrypted. Throws errc::not_supported when zkl was built on a
     * libzookeeper_mt without TLS (what() names the configure option). See
     * zkl_client_opts_set_tls. */
    client_options &tls(const std::string &ca_file, const std::string &cert_file,
                        const std::string &key_file, const std::string &key_password = {})
    {
        detail::check(detail::run([&] {
                          return zkl_client_opts_set_tls(
                              o_.get(), ca_file.c_str(), cert_file.c_str(), key_file.c_str(),
                              key_password.empty() ? nullptr : key_password.c_str());
                      }),
                      "zkl::client_options::tls");
        return *this;
    }
    /* SASL authentication: mechanism "DIGEST-MD5" with a user and the file
     * that holds its password, or "GSSAPI" (Kerberos, the ticket of
     * KRB5CCNAME) with both empty. Throws errc::not_supported when zkl was
     * built on a libzookeeper_mt without SASL. See zkl_client_opts_set_sasl. */
    client_options &sasl(const std::string &mechanism, const std::string &user = {},
                         const std::string &password_file = {})
    {
        detail::check(detail::run([&] {
                          return zkl_client_opts_set_sasl(
                              o_.get(), mechanism.c_str(), user.empty() ? nullptr : user.c_str(),
                              password_file.empty() ? nullptr : password_file.c_str());
                      }),
                      "zkl::client_options::sasl");
        return *this;
    }
    /* The largest request the servers accept, in bytes: their jute.maxbuffer
     * (see zkl_client_opts_set_max_request). */
    client_options &max_request(int bytes)
    {
        detail::check(
            detail::run([&] { return zkl_client_opts_set_max_request(o_.get(), bytes); }),
            "zkl::client_options::max_request");
        return *this;
    }
    /* Silence libzookeeper_mt's process-wide log at the first open (default
     * true); false leaves it as the program set it (see
     * zkl_client_opts_set_quiet_zk_log). */
    client_options &quiet_zk_log(bool on)
    {
        detail::check(detail::run([&] { return zkl_client_opts_set_quiet_zk_log(o_.get(), on); }),
                      "zkl::client_options::quiet_zk_log");
        return *this;
    }
    /* Collect lock metrics (default true); see client::metrics(). */
    client_options &metrics(bool on)
    {
        detail::check(detail::run([&] { return zkl_client_opts_set_metrics(o_.get(), on); }),
                      "zkl::client_options::metrics");
        return *this;
    }
    /* The most lock paths with metrics of their own (default 100; 0: the
     * client's totals only). */
    client_options &max_metric_paths(int n)
    {
        detail::check(
            detail::run([&] { return zkl_client_opts_set_max_metric_paths(o_.get(), n); }),
            "zkl::client_options::max_metric_paths");
        return *this;
    }
    /* How long the client's constructor waits for the first session, apart
     * from the session timeout (default: about one session timeout). */
    client_options &connect_timeout(std::chrono::milliseconds d)
    {
        const auto ms = d.count();
        if (ms <= 0 || ms > INT_MAX)
            throw error(ZKL_EINVAL, "zkl::client_options::connect_timeout");
        detail::check(detail::run([&] {
                          return zkl_client_opts_set_connect_timeout(o_.get(),
                                                                     static_cast<int>(ms));
                      }),
                      "zkl::client_options::connect_timeout");
        return *this;
    }
    /* A held asynchronous request whose hold is lost (its node deleted, its
     * session ended) has its `done` run once more, with lost (default
     * false, as zkl 1.0; see zkl_client_opts_set_lost_requests). */
    client_options &lost_requests(bool on)
    {
        detail::check(
            detail::run([&] { return zkl_client_opts_set_lost_requests(o_.get(), on ? 1 : 0); }),
            "zkl::client_options::lost_requests");
        return *this;
    }
    const zkl_client_opts *native_handle() const noexcept { return o_.get(); }

private:
    struct opts_free {
        void operator()(zkl_client_opts *o) const noexcept { zkl_client_opts_free(o); }
    };
    std::unique_ptr<zkl_client_opts, opts_free> o_;
};

/* Session states (enum zkl_state). */
enum class state {
    connecting = ZKL_STATE_CONNECTING,
    connected = ZKL_STATE_CONNECTED,
    suspended = ZKL_STATE_SUSPENDED,
    reconnected = ZKL_STATE_RECONNECTED,
    lost = ZKL_STATE_LOST,
    closed = ZKL_STATE_CLOSED,
};

/* A state listener's registration (client::listen): move-only; destroying
 * it (or reset()) removes the listener, and once that returns the function
 * is not running and will not be called (so it may go). Not from within
 * the listener itself. */
class listener {
public:
    listener() noexcept = default;
    listener(listener &&o) noexcept : c_(std::move(o.c_)), fn_(std::move(o.fn_)) {}
    listener &operator=(listener &&o) noexcept
    {
        if (this != &o) {
            reset();
            c_ = std::move(o.c_);
            fn_ = std::move(o.fn_);
        }
        return *this;
    }
    listener(const listener &) = delete;
    listener &operator=(const listener &) = delete;
    ~listener() { reset(); }
    void reset() noexcept
    {
        if (fn_)
            (void)zkl_client_remove_listener(c_.get(), &call, fn_.get());
        fn_.reset();
        c_.reset();
    }
    explicit operator bool() const noexcept { return fn_ != nullptr; }

private:
    friend class client;
    using fn = std::function<void(zkl::state)>;
    static void call(zkl_client *, enum zkl_state st, void *arg) noexcept
    {
        try {
            (*static_cast<fn *>(arg))(static_cast<zkl::state>(st));
        } catch (...) {
        }
    }
    std::shared_ptr<zkl_client> c_;
    std::unique_ptr<fn> fn_;
};

/* A cancel handle (zkl_cancel): pass it to an acquire (lock(h),
 * try_lock_for(d, h), ...), and fire() it from any thread to end that wait
 * with errc::canceled, the attempt's node removed. Fired for good; copies
 * share one handle. */
class cancel_handle {
public:
    cancel_handle()
    {
        zkl_cancel *h = nullptr;
        detail::check(detail::run([&] { return zkl_cancel_new(&h); }), "zkl::cancel_handle");
        h_.reset(h, [](zkl_cancel *p) { zkl_cancel_free(p); });
    }
    void fire() const noexcept { (void)zkl_cancel_fire(h_.get()); }
    bool is_fired() const noexcept { return zkl_cancel_is_fired(h_.get()) == 1; }
    zkl_cancel *native_handle() const noexcept { return h_.get(); }

private:
    std::shared_ptr<zkl_cancel> h_;
};

/* No limit to a wait: a timeout for the asynchronous acquires (and any
 * other timeout argument). */
inline constexpr std::chrono::milliseconds forever = std::chrono::milliseconds::max();

/* An asynchronous acquire (zkl_request): made by lock_async(),
 * lock_shared_async() or acquire_async(), whose `done(code)` runs exactly
 * once, on the client's own thread or, after client::event_fd(), on the
 * thread that calls client::dispatch(): with no error when held, else
 * canceled, timed_out, lost, closed, ... with nothing of the attempt left;
 * and, with client_options::lost_requests(true), once more with lost when
 * a hold it was told of is lost.
 * The hold belongs to the request (any thread may release it).
 * Move-only; destroying it cancels a pending request (its `done` then does
 * not run) or releases a held one without waiting for the server, and
 * waits for a `done` running on another thread. `done` must not throw (an
 * exception is swallowed); it may destroy its request. */
class request {
public:
    using done_fn = std::function<void(std::error_code)>;
    request() noexcept = default;
    request(request &&o) noexcept
        : c_(std::move(o.c_)), r_(std::exchange(o.r_, nullptr)), done_(std::move(o.done_))
    {
    }
    request &operator=(request &&o) noexcept
    {
        if (this != &o) {
            reset();
            c_ = std::move(o.c_);
            r_ = std::exchange(o.r_, nullptr);
            done_ = std::move(o.done_);
        }
        return *this;
    }
    request(const request &) = delete;
    request &operator=(const request &) = delete;
    ~request() { reset(); }

    /* Whether the request holds its lock and is not known lost. */
    bool is_held() const noexcept { return zkl_request_is_held(r_) == 1; }
    /* The fencing token of its hold; throws not_held or lost. */
    std::int64_t token() const
    {
        std::int64_t t = 0;
        if (r_ == nullptr)
            throw error(ZKL_ENOTHELD, "zkl::request::token");
        detail::check(detail::run([&] { return zkl_request_token(r_, &t); }),
                      "zkl::request::token");
        return t;
    }
    /* The path of its node while held; empty otherwise. */
    std::string node() const
    {
        const char *n = zkl_request_node(r_);
        return n ? std::string(n) : std::string();
    }
    /* Release its hold (without waiting for the server). Throws not_held,
     * lost (the hold had gone). */
    void release()
    {
        if (r_ == nullptr)
            throw error(ZKL_ENOTHELD, "zkl::request::release");
        detail::check(detail::run([&] { return zkl_request_release(r_); }),
                      "zkl::request::release");
    }
    /* Cancel it while pending (or granted but not yet told): true, and its
     * `done` hears canceled; false if too late (held: release it; or told
     * already). */
    bool cancel()
    {
        if (r_ == nullptr)
            return false;
        int rc = detail::run([&] { return zkl_request_cancel(r_); });
        if (rc == ZKL_EBUSY || rc == ZKL_EINVAL)
            return false;
        detail::check(rc, "zkl::request::cancel");
        return true;
    }
    void reset() noexcept
    {
        if (r_ != nullptr)
            zkl_request_free(std::exchange(r_, nullptr));
        done_.reset(); /* after the free: no `done` runs any more */
        c_.reset();
    }
    explicit operator bool() const noexcept { return r_ != nullptr; }
    zkl_request *native_handle() const noexcept { return r_; }

    /* Start one through `start(fn, arg, &r)`, a zkl_*_acquire_async call
     * with its other arguments bound (for the classes of this file). */
    template <class Start>
    static request make(std::shared_ptr<void> keep, done_fn done, const char *what, Start start)
    {
        request q;
        q.c_ = std::move(keep); /* what the request uses: its client, at least */
        q.done_ = std::make_unique<std::shared_ptr<done_fn>>(
            std::make_shared<done_fn>(std::move(done)));
        zkl_request *r = nullptr;
        detail::check(detail::run([&] { return start(&request::call, q.done_.get(), &r); }), what);
        q.r_ = r;
        return q;
    }

private:
    static void call(zkl_request *, int result, void *arg) noexcept
    {
        /* A share first: `done` may destroy its request, and with it the
         * function's home. */
        std::shared_ptr<done_fn> fn = *static_cast<std::shared_ptr<done_fn> *>(arg);
        try {
            if (*fn)
                (*fn)(std::error_code(result, category()));
        } catch (...) {
        }
    }
    std::shared_ptr<void> c_;
    zkl_request *r_ = nullptr;
    std::unique_ptr<std::shared_ptr<done_fn>> done_;
};

/* One contender of a lock path (zkl_participant), as client::participants
 * lists them: the holders first, then the waiters in order. */
struct participant {
    std::string node; /* its name under the lock path */
    std::string kind; /* "lock-", "__READ__", "__WRIT__", "zkl-lease-", ... */
    std::int64_t seq = 0;
    bool holds = false;
    int leases = 0; /* a semaphore lease's count, else 0 */
    std::int64_t token = 0;
    std::int64_t session = 0;
    std::int64_t ctime_ms = 0;
    bool readable = false; /* false: the node's ACL refused its data */
    std::string owner;     /* the node's data: zkl writes "host pid" */
};

/* One ZooKeeper session (zkl_client). Copies share it; it is closed when
 * the last copy and the last object made on it are gone. Thread-safe. */
class client {
public:
    /* Connect to `hosts` ("host:port[,...][/chroot]") and wait until
     * connected, for about `session_timeout`. Throws zkl::error
     * (connection_loss when no server answered in time). */
    client(const std::string &hosts, std::chrono::milliseconds session_timeout)
        : client(hosts, session_timeout, nullptr)
    {
    }
    client(const std::string &hosts, std::chrono::milliseconds session_timeout,
           const client_options &opts)
        : client(hosts, session_timeout, opts.native_handle())
    {
    }

    /* The current session state; the session id (0 while none). */
    zkl::state state() const noexcept
    {
        return static_cast<zkl::state>(zkl_client_state(c_.get()));
    }
    std::int64_t session_id() const noexcept
    {
        std::int64_t id = 0;
        (void)zkl_client_session_id(c_.get(), &id); /* fails only for NULL */
        return id;
    }
    /* Make every acquire on this client, waiting now or later, fail with
     * errc::canceled (zkl_client_cancel): for shutting down. */
    void cancel()
    {
        detail::check(detail::run([&] { return zkl_client_cancel(c_.get()); }),
                      "zkl::client::cancel");
    }
    /* Ask the holder(s) of lock path `path` to let go (zkl_revoke): every
     * holder, or the one whose node is `node`. Returns false if nobody
     * holds (or `node` does not exist); throws zkl::error otherwise. */
    bool revoke(const std::string &path, const std::string &node = {})
    {
        int rc = detail::run([&] {
            return zkl_revoke(c_.get(), path.c_str(), node.empty() ? nullptr : node.c_str());
        });
        if (rc == ZKL_ENOTHELD)
            return false;
        detail::check(rc, "zkl::client::revoke");
        return true;
    }

    /* Call `fn(state)` on every state change of the session, on the
     * client's own thread, until the returned listener is destroyed.
     * `fn` must not throw (an exception is swallowed) and must not destroy
     * the last owner of the client. */
    [[nodiscard]] listener listen(std::function<void(zkl::state)> fn) const
    {
        listener l;
        l.c_ = c_;
        l.fn_ = std::make_unique<listener::fn>(std::move(fn));
        detail::check(detail::run([&] {
                          return zkl_client_add_listener(c_.get(), &listener::call, l.fn_.get());
                      }),
                      "zkl::client::listen");
        return l;
    }

    /* The lock metrics (docs/metrics.md): the client's totals over every
     * lock path; one tracked path's (empty for a path without metrics of
     * its own); the tracked paths; all of it as Prometheus text. */
    zkl_metrics metrics() const
    {
        zkl_metrics m{};
        m.version = ZKL_METRICS_VERSION;
        detail::check(detail::run([&] { return zkl_client_metrics(c_.get(), &m); }),
                      "zkl::client::metrics");
        return m;
    }
    std::optional<zkl_metrics> path_metrics(const std::string &path) const
    {
        zkl_metrics m{};
        m.version = ZKL_METRICS_VERSION;
        int rc = detail::run([&] { return zkl_client_path_metrics(c_.get(), path.c_str(), &m); });
        if (rc == ZKL_ENOENT)
            return std::nullopt;
        detail::check(rc, "zkl::client::path_metrics");
        return m;
    }
    std::vector<std::string> metrics_paths() const
    {
        char **p = nullptr;
        std::size_t n = 0;
        detail::check(detail::run([&] { return zkl_client_metrics_paths(c_.get(), &p, &n); }),
                      "zkl::client::metrics_paths");
        std::unique_ptr<char *, std::function<void(char **)>> owner(
            p, [n](char **q) { zkl_client_metrics_paths_free(q, n); });
        return std::vector<std::string>(p, p + n);
    }
    std::string metrics_text() const
    {
        for (;;) {
            std::size_t need = 0;
            int rc =
                detail::run([&] { return zkl_client_metrics_write(c_.get(), nullptr, 0, &need); });
            if (rc != ZKL_ERANGE)
                detail::check(rc, "zkl::client::metrics_text");
            std::string text(need + 256, '\0'); /* room for counters that grow meanwhile */
            rc = detail::run([&] {
                return zkl_client_metrics_write(c_.get(), text.data(), text.size(), &need);
            });
            if (rc == ZKL_ERANGE)
                continue;
            detail::check(rc, "zkl::client::metrics_text");
            text.resize(need);
            return text;
        }
    }

    /* The contenders of lock path `path` (zkl_participants_list), holders
     * first; empty if there are none. The limit a counting semaphore at
     * `path` recorded, or 0 if none. */
    std::vector<participant> participants(const std::string &path) const
    {
        zkl_participant *p = nullptr;
        std::size_t n = 0;
        detail::check(
            detail::run([&] { return zkl_participants_list(c_.get(), path.c_str(), &p, &n); }),
            "zkl::client::participants");
        std::unique_ptr<zkl_participant, std::function<void(zkl_participant *)>> owner(
            p, [n](zkl_participant *q) { zkl_participants_free(q, n); });
        std::vector<participant> v;
        v.reserve(n);
        for (std::size_t i = 0; i < n; i++) {
            participant x;
            x.node = p[i].node;
            x.kind = p[i].kind;
            x.seq = p[i].seq;
            x.holds = p[i].holds != 0;
            x.leases = p[i].leases;
            x.token = p[i].token;
            x.session = p[i].session;
            x.ctime_ms = p[i].ctime_ms;
            x.readable = p[i].readable != 0;
            x.owner.assign(p[i].owner ? p[i].owner : "", p[i].owner_len);
            v.push_back(std::move(x));
        }
        return v;
    }
    int semaphore_limit(const std::string &path) const
    {
        int limit = 0;
        detail::check(
            detail::run([&] { return zkl_participants_limit(c_.get(), path.c_str(), &limit); }),
            "zkl::client::semaphore_limit");
        return limit;
    }

    /* Event loops (zkl_client_event_fd): a descriptor that is readable when
     * requests' `done` functions are ready to run; dispatch() runs them on
     * the calling thread and returns how many ran. */
    int event_fd() const
    {
        int fd = -1;
        detail::check(detail::run([&] { return zkl_client_event_fd(c_.get(), &fd); }),
                      "zkl::client::event_fd");
        return fd;
    }
    int dispatch() const
    {
        int n = detail::run([&] { return zkl_client_dispatch(c_.get()); });
        if (n < 0)
            detail::check(n, "zkl::client::dispatch");
        return n;
    }

    /* The C client, borrowed: valid while this object (or any object made
     * on it) lives. Do not close it. */
    zkl_client *native_handle() const noexcept { return c_.get(); }
    /* A share of the C client, to keep it open. */
    const std::shared_ptr<zkl_client> &shared() const noexcept { return c_; }

private:
    client(const std::string &hosts, std::chrono::milliseconds session_timeout,
           const zkl_client_opts *opts)
    {
        /* Out of range, the C call says so (with the value clamped). */
        const auto ms = session_timeout.count();
        const int arg = ms <= 0 ? 0 : ms > INT_MAX ? INT_MAX : static_cast<int>(ms);
        zkl_client *c = nullptr;
        detail::check(
            detail::run([&] { return zkl_client_open_opts(hosts.c_str(), arg, opts, &c); }),
            "zkl::client");
        c_.reset(c, detail::client_close());
    }
    std::shared_ptr<zkl_client> c_;
};

/* ------------------------------------------------------------------------
 * A member of a multi-lock: a zkl_lock handle and a share of the lock
 * object behind it. Made implicitly from a zkl::mutex, a zkl::shared_mutex
 * (its write side; read_side() / write_side() choose), a
 * zkl::semaphore_mutex or a zkl::multi_lock.
 * ---------------------------------------------------------------------- */
class lock_ref {
public:
    lock_ref(std::shared_ptr<void> owner, zkl_lock *handle) noexcept
        : owner_(std::move(owner)), handle_(handle)
    {
    }
    zkl_lock *native_handle() const noexcept { return handle_; }
    const std::shared_ptr<void> &owner() const noexcept { return owner_; }

private:
    std::shared_ptr<void> owner_;
    zkl_lock *handle_;
};

/* ------------------------------------------------------------------------
 * Reentrant mutex (zkl_mutex): TimedLockable, so std::lock_guard,
 * std::unique_lock and std::scoped_lock work. Held per thread; a thread
 * that holds it may lock it again (only a count goes up).
 * ---------------------------------------------------------------------- */

/* Options of a mutex or a semaphore-mutex (zkl_lock_opts): prefetch() also
 * watches the node two ahead, so the handoff needs no listing. */
class mutex_options {
public:
    mutex_options &prefetch(bool on = true) noexcept
    {
        prefetch_ = on;
        return *this;
    }
    bool prefetch() const noexcept { return prefetch_; }
    /* The nodes' data instead of "host pid" (zkl_lock_opts_set_id). */
    mutex_options &id(std::string v)
    {
        id_ = std::move(v);
        has_id_ = true;
        return *this;
    }
    /* Make a lock object with these options through `make(opts, out)`,
     * a zkl_<recipe>_new_opts call; returns its code. */
    template <class T, class Make> int make(Make make, T **out) const
    {
        zkl_lock_opts *lo = nullptr;
        int rc = zkl_lock_opts_new(&lo);
        if (rc == 0)
            rc = zkl_lock_opts_set_prefetch(lo, prefetch_ ? 1 : 0);
        if (rc == 0 && has_id_)
            rc = zkl_lock_opts_set_id(lo, id_.c_str());
        if (rc == 0)
            rc = make(lo, out);
        zkl_lock_opts_free(lo);
        return rc;
    }

private:
    bool prefetch_ = false;
    bool has_id_ = false;
    std::string id_;
};

namespace detail {
struct mutex_state {
    std::shared_ptr<zkl_client> client; /* first: goes last */
    zkl_mutex *m = nullptr;
    lock_handle as_lock;
    std::unique_ptr<lost_hook> hook, revoke;
    mutex_state() = default;
    mutex_state(const mutex_state &) = delete;
    mutex_state &operator=(const mutex_state &) = delete;
    ~mutex_state()
    {
        if (hook)
            zkl_mutex_set_lost_fn(m, nullptr, nullptr);
        if (revoke)
            zkl_mutex_set_revoke_fn(m, nullptr, nullptr);
        as_lock.reset();
        zkl_mutex_free(m); /* releases holds still open, best effort */
    }
    static void on_lost(zkl_mutex *, std::int64_t token, void *arg) { run_hook(arg, token); }
};
} // namespace detail

class mutex {
public:
    /* A mutex on `path` (absolute; nothing is sent yet). Throws zkl::error
     * (invalid_argument for a bad path). */
    mutex(const client &c, const std::string &path, const mutex_options &opts = {})
        : s_(std::make_shared<detail::mutex_state>())
    {
        s_->client = c.shared();
        zkl_mutex *m = nullptr;
        detail::check(detail::run([&] {
                          return opts.make(
                              [&](const zkl_lock_opts *lo, zkl_mutex **out) {
                                  return zkl_mutex_new_opts(c.native_handle(), path.c_str(), lo,
                                                            out);
                              },
                              &m);
                      }),
                      "zkl::mutex");
        s_->m = m;
        zkl_lock *l = nullptr;
        detail::check(detail::run([&] { return zkl_mutex_as_lock(m, &l); }), "zkl::mutex");
        s_->as_lock.reset(l);
    }
    mutex(mutex &&) noexcept = default;
    mutex &operator=(mutex &&) noexcept = default;

    /* Wait until held (forever). Throws zkl::error on failure (lost,
     * canceled, ...). */
    void lock()
    {
        detail::check(detail::run([&] { return zkl_mutex_acquire(get(), ZKL_WAIT_FOREVER); }),
                      "zkl::mutex::lock");
    }
    /* One try without waiting: false if another holds it. */
    bool try_lock()
    {
        return detail::timed(detail::run([&] { return zkl_mutex_acquire(get(), 0); }),
                             "zkl::mutex::try_lock");
    }
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period> &d)
    {
        return detail::timed(
            detail::run([&] { return zkl_mutex_acquire(get(), detail::timeout_ms(d)); }),
            "zkl::mutex::try_lock_for");
    }
    template <class Clock, class Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration> &t)
    {
        return detail::timed(
            detail::run([&] { return zkl_mutex_acquire(get(), detail::timeout_ms_until(t)); }),
            "zkl::mutex::try_lock_until");
    }
    /* lock() and try_lock_for() that also end, with errc::canceled, once
     * `h` fires (zkl_mutex_acquire_cancellable). */
    void lock(const cancel_handle &h)
    {
        detail::check(detail::run([&] {
                          return zkl_mutex_acquire_cancellable(get(), ZKL_WAIT_FOREVER,
                                                               h.native_handle());
                      }),
                      "zkl::mutex::lock");
    }
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period> &d, const cancel_handle &h)
    {
        return detail::timed(detail::run([&] {
                                 return zkl_mutex_acquire_cancellable(get(), detail::timeout_ms(d),
                                                                      h.native_handle());
                             }),
                             "zkl::mutex::try_lock_for");
    }
    /* An asynchronous acquire (zkl_mutex_acquire_async): the hold is the
     * request's, not the thread's. */
    template <class Rep, class Period> [[nodiscard]] request
    lock_async(const std::chrono::duration<Rep, Period> &timeout, request::done_fn done)
    {
        return request::make(state().client, std::move(done), "zkl::mutex::lock_async",
                             [&](zkl_request_fn fn, void *arg, zkl_request **out) {
                                 return zkl_mutex_acquire_async(get(), detail::timeout_ms(timeout),
                                                                fn, arg, out);
                             });
    }
    /* Release one count of the calling thread's hold. Throws if the thread
     * holds nothing; a hold lost with its session is released silently
     * (see the top of this file). */
    void unlock()
    {
        detail::unlocked(detail::run([&] { return zkl_mutex_release(get()); }),
                         "zkl::mutex::unlock");
    }

    /* Whether the calling thread holds it and the hold is not lost. */
    bool is_held() const noexcept { return zkl_mutex_is_held(get()) == 1; }
    /* The fencing token of the calling thread's hold; throws not_held or
     * lost. */
    std::int64_t token() const
    {
        std::int64_t t = 0;
        detail::check(detail::run([&] { return zkl_mutex_token(get(), &t); }), "zkl::mutex::token");
        return t;
    }
    /* The path of the calling thread's node; empty if it holds nothing. */
    std::string node() const
    {
        const char *n = zkl_mutex_node(get());
        return n ? std::string(n) : std::string();
    }
    /* Set the data of the existing znode `path` only while the calling
     * thread holds the mutex, atomically on the server. Throws not_held,
     * lost (nothing written), connection_loss (outcome unknown), ... */
    void guarded_set(const std::string &path, std::string_view data)
    {
        if (data.size() > static_cast<std::size_t>(INT_MAX))
            throw error(ZKL_EINVAL, "zkl::mutex::guarded_set");
        detail::check(detail::run([&] {
                          return zkl_mutex_guarded_set(get(), path.c_str(), data.data(),
                                                       static_cast<int>(data.size()));
                      }),
                      "zkl::mutex::guarded_set");
    }
    /* A guarded multi-op (zkl_mutex_guarded_multi; include zkl/zookeeper.h
     * for zoo_op_t): `ops[0..count-1]`, applied only while the calling
     * thread holds the mutex; each op's result into `results` if not NULL.
     * Throws as guarded_set, and zookeeper for an op that failed. */
    template <class Op = ::zoo_op, class Result = ::zoo_op_result>
    void guarded_multi(const Op *ops, std::size_t count, Result *results = nullptr)
    {
        detail::check(detail::run([&] {
                          return count > INT_MAX
                                     ? ZKL_EINVAL
                                     : zkl_mutex_guarded_multi(get(), static_cast<int>(count), ops,
                                                               results);
                      }),
                      "zkl::mutex::guarded_multi");
    }
    /* Call `fn(token)` once per hold lost with its session, on the
     * client's thread; an empty function removes the hook (once that
     * returns, the old hook is not running). */
    void set_on_lost(std::function<void(std::int64_t)> fn)
    {
        auto &s = state();
        detail::check(detail::run([&] { return zkl_mutex_set_lost_fn(s.m, nullptr, nullptr); }),
                      "zkl::mutex::set_on_lost");
        s.hook.reset();
        if (!fn)
            return;
        s.hook = std::make_unique<detail::lost_hook>(std::move(fn));
        detail::check(detail::run([&] {
                          return zkl_mutex_set_lost_fn(s.m, &detail::mutex_state::on_lost,
                                                       s.hook.get());
                      }),
                      "zkl::mutex::set_on_lost");
    }
    /* Call `fn(token)` when someone asks the hold with that token to let go
     * (zkl::client::revoke, `zkl revoke`, Curator's Revoker), on the
     * client's thread. Cooperative: `fn` should tell the holder to finish
     * and unlock(), and return soon. An empty function removes the hook. */
    void set_on_revoke(std::function<void(std::int64_t)> fn)
    {
        auto &s = state();
        detail::check(detail::run([&] { return zkl_mutex_set_revoke_fn(s.m, nullptr, nullptr); }),
                      "zkl::mutex::set_on_revoke");
        s.revoke.reset();
        if (!fn)
            return;
        s.revoke = std::make_unique<detail::lost_hook>(std::move(fn));
        detail::check(detail::run([&] {
                          return zkl_mutex_set_revoke_fn(s.m, &detail::mutex_state::on_lost,
                                                         s.revoke.get());
                      }),
                      "zkl::mutex::set_on_revoke");
    }

    operator lock_ref() const { return lock_ref(s_, s_ ? s_->as_lock.get() : nullptr); }
    zkl_mutex *native_handle() const noexcept { return get(); }

private:
    zkl_mutex *get() const noexcept { return s_ ? s_->m : nullptr; }
    detail::mutex_state &state() const
    {
        if (!s_)
            throw error(ZKL_EINVAL, "zkl::mutex (moved from)");
        return *s_;
    }
    std::shared_ptr<detail::mutex_state> s_;
};

/* ------------------------------------------------------------------------
 * Read-write lock (zkl_rwlock): SharedTimedLockable, for std::shared_lock
 * (read side) and std::unique_lock / std::lock_guard (write side). Held per
 * thread and per side, each side reentrant; a writer may take the read
 * side and then unlock() (downgrade); lock() while holding only the read
 * side throws errc::deadlock.
 * ---------------------------------------------------------------------- */
namespace detail {
struct rwlock_state {
    std::shared_ptr<zkl_client> client;
    zkl_rwlock *rw = nullptr;
    lock_handle read, write;
    std::unique_ptr<std::function<void(bool, std::int64_t)>> hook, revoke;
    rwlock_state() = default;
    rwlock_state(const rwlock_state &) = delete;
    rwlock_state &operator=(const rwlock_state &) = delete;
    ~rwlock_state()
    {
        if (hook)
            zkl_rwlock_set_lost_fn(rw, nullptr, nullptr);
        if (revoke)
            zkl_rwlock_set_revoke_fn(rw, nullptr, nullptr);
        read.reset();
        write.reset();
        zkl_rwlock_free(rw);
    }
    static void on_lost(zkl_rwlock *, int write, std::int64_t token, void *arg)
    {
        try {
            (*static_cast<std::function<void(bool, std::int64_t)> *>(arg))(write != 0, token);
        } catch (...) {
        }
    }
};
} // namespace detail

class shared_mutex {
public:
    shared_mutex(const client &c, const std::string &path)
        : s_(std::make_shared<detail::rwlock_state>())
    {
        s_->client = c.shared();
        zkl_rwlock *rw = nullptr;
        detail::check(
            detail::run([&] { return zkl_rwlock_new(c.native_handle(), path.c_str(), &rw); }),
            "zkl::shared_mutex");
        s_->rw = rw;
        zkl_lock *r = nullptr, *w = nullptr;
        detail::check(detail::run([&] { return zkl_rwlock_read_as_lock(rw, &r); }),
                      "zkl::shared_mutex");
        s_->read.reset(r);
        detail::check(detail::run([&] { return zkl_rwlock_write_as_lock(rw, &w); }),
                      "zkl::shared_mutex");
        s_->write.reset(w);
    }
    shared_mutex(shared_mutex &&) noexcept = default;
    shared_mutex &operator=(shared_mutex &&) noexcept = default;

    /* The write side. */
    void lock()
    {
        detail::check(
            detail::run([&] { return zkl_rwlock_write_acquire(get(), ZKL_WAIT_FOREVER); }),
            "zkl::shared_mutex::lock");
    }
    bool try_lock()
    {
        return detail::timed(detail::run([&] { return zkl_rwlock_write_acquire(get(), 0); }),
                             "zkl::shared_mutex::try_lock");
    }
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period> &d)
    {
        return detail::timed(
            detail::run([&] { return zkl_rwlock_write_acquire(get(), detail::timeout_ms(d)); }),
            "zkl::shared_mutex::try_lock_for");
    }
    template <class Clock, class Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration> &t)
    {
        return detail::timed(detail::run([&] {
                                 return zkl_rwlock_write_acquire(get(),
                                                                 detail::timeout_ms_until(t));
                             }),
                             "zkl::shared_mutex::try_lock_until");
    }
    void unlock()
    {
        detail::unlocked(detail::run([&] { return zkl_rwlock_write_release(get()); }),
                         "zkl::shared_mutex::unlock");
    }
    /* The write side, ending with errc::canceled once `h` fires. */
    void lock(const cancel_handle &h)
    {
        detail::check(detail::run([&] {
                          return zkl_rwlock_write_acquire_cancellable(get(), ZKL_WAIT_FOREVER,
                                                                      h.native_handle());
                      }),
                      "zkl::shared_mutex::lock");
    }
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period> &d, const cancel_handle &h)
    {
        return detail::timed(detail::run([&] {
                                 return zkl_rwlock_write_acquire_cancellable(
                                     get(), detail::timeout_ms(d), h.native_handle());
                             }),
                             "zkl::shared_mutex::try_lock_for");
    }
    /* The write side, asynchronously: the hold is the request's. */
    template <class Rep, class Period> [[nodiscard]] request
    lock_async(const std::chrono::duration<Rep, Period> &timeout, request::done_fn done)
    {
        return request::make(keep(), std::move(done), "zkl::shared_mutex::lock_async",
                             [&](zkl_request_fn fn, void *arg, zkl_request **out) {
                                 return zkl_rwlock_write_acquire_async(
                                     get(), detail::timeout_ms(timeout), fn, arg, out);
                             });
    }

    /* The read side. */
    void lock_shared()
    {
        detail::check(detail::run([&] { return zkl_rwlock_read_acquire(get(), ZKL_WAIT_FOREVER); }),
                      "zkl::shared_mutex::lock_shared");
    }
    bool try_lock_shared()
    {
        return detail::timed(detail::run([&] { return zkl_rwlock_read_acquire(get(), 0); }),
                             "zkl::shared_mutex::try_lock_shared");
    }
    template <class Rep, class Period>
    bool try_lock_shared_for(const std::chrono::duration<Rep, Period> &d)
    {
        return detail::timed(
            detail::run([&] { return zkl_rwlock_read_acquire(get(), detail::timeout_ms(d)); }),
            "zkl::shared_mutex::try_lock_shared_for");
    }
    template <class Clock, class Duration>
    bool try_lock_shared_until(const std::chrono::time_point<Clock, Duration> &t)
    {
        return detail::timed(detail::run([&] {
                                 return zkl_rwlock_read_acquire(get(), detail::timeout_ms_until(t));
                             }),
                             "zkl::shared_mutex::try_lock_shared_until");
    }
    void unlock_shared()
    {
        detail::unlocked(detail::run([&] { return zkl_rwlock_read_release(get()); }),
                         "zkl::shared_mutex::unlock_shared");
    }
    /* The read side, ending with errc::canceled once `h` fires. */
    void lock_shared(const cancel_handle &h)
    {
        detail::check(detail::run([&] {
                          return zkl_rwlock_read_acquire_cancellable(get(), ZKL_WAIT_FOREVER,
                                                                     h.native_handle());
                      }),
                      "zkl::shared_mutex::lock_shared");
    }
    template <class Rep, class Period>
    bool try_lock_shared_for(const std::chrono::duration<Rep, Period> &d, const cancel_handle &h)
    {
        return detail::timed(detail::run([&] {
                                 return zkl_rwlock_read_acquire_cancellable(
                                     get(), detail::timeout_ms(d), h.native_handle());
                             }),
                             "zkl::shared_mutex::try_lock_shared_for");
    }
    /* The read side, asynchronously: the hold is the request's. */
    template <class Rep, class Period> [[nodiscard]] request
    lock_shared_async(const std::chrono::duration<Rep, Period> &timeout, request::done_fn done)
    {
        return request::make(keep(), std::move(done), "zkl::shared_mutex::lock_shared_async",
                             [&](zkl_request_fn fn, void *arg, zkl_request **out) {
                                 return zkl_rwlock_read_acquire_async(
                                     get(), detail::timeout_ms(timeout), fn, arg, out);
                             });
    }

    bool is_held() const noexcept { return zkl_rwlock_write_is_held(get()) == 1; }
    bool is_held_shared() const noexcept { return zkl_rwlock_read_is_held(get()) == 1; }
    /* Fencing tokens of the calling thread's write / read hold. */
    std::int64_t token() const
    {
        std::int64_t t = 0;
        detail::check(detail::run([&] { return zkl_rwlock_write_token(get(), &t); }),
                      "zkl::shared_mutex::token");
        return t;
    }
    std::int64_t token_shared() const
    {
        std::int64_t t = 0;
        detail::check(detail::run([&] { return zkl_rwlock_read_token(get(), &t); }),
                      "zkl::shared_mutex::token_shared");
        return t;
    }
    /* As zkl::mutex::guarded_set, for the calling thread's write hold. */
    void guarded_set(const std::string &path, std::string_view data)
    {
        if (data.size() > static_cast<std::size_t>(INT_MAX))
            throw error(ZKL_EINVAL, "zkl::shared_mutex::guarded_set");
        detail::check(detail::run([&] {
                          return zkl_rwlock_write_guarded_set(get(), path.c_str(), data.data(),
                                                              static_cast<int>(data.size()));
                      }),
                      "zkl::shared_mutex::guarded_set");
    }
    /* As zkl::mutex::guarded_multi, for the calling thread's write hold. */
    template <class Op = ::zoo_op, class Result = ::zoo_op_result>
    void guarded_multi(const Op *ops, std::size_t count, Result *results = nullptr)
    {
        detail::check(detail::run([&] {
                          return count > INT_MAX
                                     ? ZKL_EINVAL
                                     : zkl_rwlock_write_guarded_multi(
                                           get(), static_cast<int>(count), ops, results);
                      }),
                      "zkl::shared_mutex::guarded_multi");
    }
    /* `fn(write, token)` once per lost hold (write: true for the write
     * side); empty removes it. */
    void set_on_lost(std::function<void(bool, std::int64_t)> fn)
    {
        if (!s_)
            throw error(ZKL_EINVAL, "zkl::shared_mutex (moved from)");
        detail::check(detail::run([&] { return zkl_rwlock_set_lost_fn(s_->rw, nullptr, nullptr); }),
                      "zkl::shared_mutex::set_on_lost");
        s_->hook.reset();
        if (!fn)
            return;
        s_->hook = std::make_unique<std::function<void(bool, std::int64_t)>>(std::move(fn));
        detail::check(detail::run([&] {
                          return zkl_rwlock_set_lost_fn(s_->rw, &detail::rwlock_state::on_lost,
                                                        s_->hook.get());
                      }),
                      "zkl::shared_mutex::set_on_lost");
    }
    /* `fn(write, token)` when someone asks a hold (write: true for the write
     * side) to let go; as zkl::mutex::set_on_revoke. Empty removes it. */
    void set_on_revoke(std::function<void(bool, std::int64_t)> fn)
    {
        if (!s_)
            throw error(ZKL_EINVAL, "zkl::shared_mutex (moved from)");
        detail::check(
            detail::run([&] { return zkl_rwlock_set_revoke_fn(s_->rw, nullptr, nullptr); }),
            "zkl::shared_mutex::set_on_revoke");
        s_->revoke.reset();
        if (!fn)
            return;
        s_->revoke = std::make_unique<std::function<void(bool, std::int64_t)>>(std::move(fn));
        detail::check(detail::run([&] {
                          return zkl_rwlock_set_revoke_fn(s_->rw, &detail::rwlock_state::on_lost,
                                                          s_->revoke.get());
                      }),
                      "zkl::shared_mutex::set_on_revoke");
    }

    /* The sides as multi-lock members (the two cannot share one). */
    lock_ref read_side() const { return lock_ref(s_, s_ ? s_->read.get() : nullptr); }
    lock_ref write_side() const { return lock_ref(s_, s_ ? s_->write.get() : nullptr); }
    operator lock_ref() const { return write_side(); }
    zkl_rwlock *native_handle() const noexcept { return get(); }

private:
    zkl_rwlock *get() const noexcept { return s_ ? s_->rw : nullptr; }
    std::shared_ptr<void> keep() const
    {
        if (!s_)
            throw error(ZKL_EINVAL, "zkl::shared_mutex (moved from)");
        return s_->client;
    }
    std::shared_ptr<detail::rwlock_state> s_;
};

/* ------------------------------------------------------------------------
 * Counting semaphore (zkl_semaphore) and its leases.
 * ---------------------------------------------------------------------- */
namespace detail {
struct semaphore_state {
    std::shared_ptr<zkl_client> client;
    zkl_semaphore *s = nullptr;
    std::unique_ptr<lost_hook> hook;
    semaphore_state() = default;
    semaphore_state(const semaphore_state &) = delete;
    semaphore_state &operator=(const semaphore_state &) = delete;
    ~semaphore_state()
    {
        if (hook)
            zkl_semaphore_set_lost_fn(s, nullptr, nullptr);
        /* Every lease holds a share of this state: none is left. */
        zkl_semaphore_free(s);
    }
    static void on_lost(zkl_semaphore *, std::int64_t token, void *arg) { run_hook(arg, token); }
};
} // namespace detail

/* A lease of a semaphore: move-only, given back by release() or by its
 * destructor (which swallows a failure). Any thread may release it; one
 * lease object is not used by two threads at once. */
class lease {
public:
    lease() noexcept = default;
    lease(lease &&o) noexcept : sem_(std::move(o.sem_)), l_(std::exchange(o.l_, nullptr)) {}
    lease &operator=(lease &&o) noexcept
    {
        if (this != &o) {
            reset();
            sem_ = std::move(o.sem_);
            l_ = std::exchange(o.l_, nullptr);
        }
        return *this;
    }
    lease(const lease &) = delete;
    lease &operator=(const lease &) = delete;
    ~lease() { reset(); }

    /* Give the lease back and wait for the server. Afterwards the object
     * is empty, also when it throws (lost: the lease had gone with its
     * session; not_held: the object was empty). */
    void release()
    {
        if (l_ == nullptr)
            throw error(ZKL_ENOTHELD, "zkl::lease::release");
        int rc = detail::run([&] { return zkl_lease_release(std::exchange(l_, nullptr)); });
        sem_.reset();
        detail::check(rc, "zkl::lease::release");
    }
    /* Whether the object has a lease whose session is not known lost. */
    bool is_held() const noexcept { return zkl_lease_is_held(l_) == 1; }
    explicit operator bool() const noexcept { return l_ != nullptr; }
    std::int64_t token() const
    {
        std::int64_t t = 0;
        int rc = detail::run([&] { return zkl_lease_token(l_, &t); });
        if (rc != 0 && l_ == nullptr)
            throw error(ZKL_ENOTHELD, "zkl::lease::token");
        detail::check(rc, "zkl::lease::token");
        return t;
    }
    /* How many leases it stands for; the path of its node ("" if empty). */
    int count() const noexcept { return l_ ? zkl_lease_count(l_) : 0; }
    std::string node() const
    {
        const char *n = zkl_lease_node(l_);
        return n ? std::string(n) : std::string();
    }
    void guarded_set(const std::string &path, std::string_view data)
    {
        if (l_ == nullptr)
            throw error(ZKL_ENOTHELD, "zkl::lease::guarded_set");
        if (data.size() > static_cast<std::size_t>(INT_MAX))
            throw error(ZKL_EINVAL, "zkl::lease::guarded_set");
        detail::check(detail::run([&] {
                          return zkl_lease_guarded_set(l_, path.c_str(), data.data(),
                                                       static_cast<int>(data.size()));
                      }),
                      "zkl::lease::guarded_set");
    }
    /* As zkl::mutex::guarded_multi, guarded by the lease's node. */
    template <class Op = ::zoo_op, class Result = ::zoo_op_result>
    void guarded_multi(const Op *ops, std::size_t count, Result *results = nullptr)
    {
        if (l_ == nullptr)
            throw error(ZKL_ENOTHELD, "zkl::lease::guarded_multi");
        detail::check(detail::run([&] {
                          return count > INT_MAX ? ZKL_EINVAL
                                                 : zkl_lease_guarded_multi(
                                                       l_, static_cast<int>(count), ops, results);
                      }),
                      "zkl::lease::guarded_multi");
    }
    zkl_lease *native_handle() const noexcept { return l_; }

private:
    friend class semaphore;
    lease(std::shared_ptr<detail::semaphore_state> sem, zkl_lease *l) noexcept
        : sem_(std::move(sem)), l_(l)
    {
    }
    void reset() noexcept
    {
        if (l_)
            (void)zkl_lease_release(std::exchange(l_, nullptr));
        sem_.reset();
    }
    std::shared_ptr<detail::semaphore_state> sem_; /* kept until released */
    zkl_lease *l_ = nullptr;
};

/* A counting semaphore of at most `max_leases` leases on `path`, across
 * processes. The constructor sends nothing (it throws invalid_argument for
 * a bad path or limit); each acquire reads, or records, the limit on the
 * server and throws mismatch for another one. */
class semaphore {
public:
    semaphore(const client &c, const std::string &path, int max_leases)
        : s_(std::make_shared<detail::semaphore_state>())
    {
        s_->client = c.shared();
        zkl_semaphore *s = nullptr;
        detail::check(detail::run([&] {
                          return zkl_semaphore_new(c.native_handle(), path.c_str(), max_leases, &s);
                      }),
                      "zkl::semaphore");
        s_->s = s;
    }
    semaphore(semaphore &&) noexcept = default;
    semaphore &operator=(semaphore &&) noexcept = default;

    /* Wait for `n` leases taken as one (default 1). Throws on failure. */
    lease acquire(int n = 1) { return take(n, ZKL_WAIT_FOREVER, "zkl::semaphore::acquire"); }
    /* One try without waiting; empty if no lease was free. */
    std::optional<lease> try_acquire(int n = 1) { return try_take(n, 0); }
    template <class Rep, class Period>
    std::optional<lease> try_acquire_for(const std::chrono::duration<Rep, Period> &d, int n = 1)
    {
        return try_take(n, detail::timeout_ms(d));
    }
    template <class Clock, class Duration>
    std::optional<lease> try_acquire_until(const std::chrono::time_point<Clock, Duration> &t,
                                           int n = 1)
    {
        return try_take(n, detail::timeout_ms_until(t));
    }
    /* acquire(), try_acquire_for() that also end, with errc::canceled, once
     * `h` fires (zkl_semaphore_acquire_many_cancellable). */
    lease acquire(const cancel_handle &h, int n = 1)
    {
        zkl_lease *l = nullptr;
        detail::check(detail::run([&] {
                          return zkl_semaphore_acquire_many_cancellable(get(), n, ZKL_WAIT_FOREVER,
                                                                        h.native_handle(), &l);
                      }),
                      "zkl::semaphore::acquire");
        return lease(s_, l);
    }
    template <class Rep, class Period> std::optional<lease>
    try_acquire_for(const std::chrono::duration<Rep, Period> &d, const cancel_handle &h, int n = 1)
    {
        zkl_lease *l = nullptr;
        if (!detail::timed(detail::run([&] {
                               return zkl_semaphore_acquire_many_cancellable(
                                   get(), n, detail::timeout_ms(d), h.native_handle(), &l);
                           }),
                           "zkl::semaphore::try_acquire_for"))
            return std::nullopt;
        return lease(s_, l);
    }
    /* `n` leases taken as one, asynchronously
     * (zkl_semaphore_acquire_many_async): they belong to the request, and
     * go with its release. */
    template <class Rep, class Period>
    [[nodiscard]] request acquire_async(const std::chrono::duration<Rep, Period> &timeout,
                                        request::done_fn done, int n = 1)
    {
        if (!s_)
            throw error(ZKL_EINVAL, "zkl::semaphore (moved from)");
        return request::make(s_->client, std::move(done), "zkl::semaphore::acquire_async",
                             [&](zkl_request_fn fn, void *arg, zkl_request **out) {
                                 return zkl_semaphore_acquire_many_async(
                                     get(), n, detail::timeout_ms(timeout), fn, arg, out);
                             });
    }
    int max_leases() const noexcept { return zkl_semaphore_max_leases(get()); }
    /* `fn(token)` once per lease lost with its session; empty removes it. */
    void set_on_lost(std::function<void(std::int64_t)> fn)
    {
        if (!s_)
            throw error(ZKL_EINVAL, "zkl::semaphore (moved from)");
        detail::check(
            detail::run([&] { return zkl_semaphore_set_lost_fn(s_->s, nullptr, nullptr); }),
            "zkl::semaphore::set_on_lost");
        s_->hook.reset();
        if (!fn)
            return;
        s_->hook = std::make_unique<detail::lost_hook>(std::move(fn));
        detail::check(detail::run([&] {
                          return zkl_semaphore_set_lost_fn(s_->s, &detail::semaphore_state::on_lost,
                                                           s_->hook.get());
                      }),
                      "zkl::semaphore::set_on_lost");
    }
    zkl_semaphore *native_handle() const noexcept { return get(); }

private:
    lease take(int n, long ms, const char *what)
    {
        zkl_lease *l = nullptr;
        detail::check(detail::run([&] { return zkl_semaphore_acquire_many(get(), n, ms, &l); }),
                      what);
        return lease(s_, l);
    }
    std::optional<lease> try_take(int n, long ms)
    {
        zkl_lease *l = nullptr;
        int rc = detail::run([&] { return zkl_semaphore_acquire_many(get(), n, ms, &l); });
        if (rc == ZKL_ETIMEDOUT)
            return std::nullopt;
        detail::check(rc, "zkl::semaphore::try_acquire");
        return lease(s_, l);
    }
    zkl_semaphore *get() const noexcept { return s_ ? s_->s : nullptr; }
    std::shared_ptr<detail::semaphore_state> s_;
};

/* ------------------------------------------------------------------------
 * Semaphore-mutex (zkl_semmutex): TimedLockable, held per object (any
 * thread may unlock it), not reentrant: locking an object that holds throws
 * errc::deadlock. Threads that exclude each other need one object each.
 * ---------------------------------------------------------------------- */
namespace detail {
struct semmutex_state {
    std::shared_ptr<zkl_client> client;
    zkl_semmutex *s = nullptr;
    lock_handle as_lock;
    std::unique_ptr<lost_hook> hook, revoke;
    semmutex_state() = default;
    semmutex_state(const semmutex_state &) = delete;
    semmutex_state &operator=(const semmutex_state &) = delete;
    ~semmutex_state()
    {
        if (hook)
            zkl_semmutex_set_lost_fn(s, nullptr, nullptr);
        if (revoke)
            zkl_semmutex_set_revoke_fn(s, nullptr, nullptr);
        as_lock.reset();
        zkl_semmutex_free(s);
    }
    static void on_lost(zkl_semmutex *, std::int64_t token, void *arg) { run_hook(arg, token); }
};
} // namespace detail

class semaphore_mutex {
public:
    semaphore_mutex(const client &c, const std::string &path, const mutex_options &opts = {})
        : s_(std::make_shared<detail::semmutex_state>())
    {
        s_->client = c.shared();
        zkl_semmutex *s = nullptr;
        detail::check(detail::run([&] {
                          return opts.make(
                              [&](const zkl_lock_opts *lo, zkl_semmutex **out) {
                                  return zkl_semmutex_new_opts(c.native_handle(), path.c_str(), lo,
                                                               out);
                              },
                              &s);
                      }),
                      "zkl::semaphore_mutex");
        s_->s = s;
        zkl_lock *l = nullptr;
        detail::check(detail::run([&] { return zkl_semmutex_as_lock(s, &l); }),
                      "zkl::semaphore_mutex");
        s_->as_lock.reset(l);
    }
    semaphore_mutex(semaphore_mutex &&) noexcept = default;
    semaphore_mutex &operator=(semaphore_mutex &&) noexcept = default;

    void lock()
    {
        detail::check(detail::run([&] { return zkl_semmutex_acquire(get(), ZKL_WAIT_FOREVER); }),
                      "zkl::semaphore_mutex::lock");
    }
    bool try_lock()
    {
        return detail::timed(detail::run([&] { return zkl_semmutex_acquire(get(), 0); }),
                             "zkl::semaphore_mutex::try_lock");
    }
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period> &d)
    {
        return detail::timed(
            detail::run([&] { return zkl_semmutex_acquire(get(), detail::timeout_ms(d)); }),
            "zkl::semaphore_mutex::try_lock_for");
    }
    template <class Clock, class Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration> &t)
    {
        return detail::timed(
            detail::run([&] { return zkl_semmutex_acquire(get(), detail::timeout_ms_until(t)); }),
            "zkl::semaphore_mutex::try_lock_until");
    }
    void unlock()
    {
        detail::unlocked(detail::run([&] { return zkl_semmutex_release(get()); }),
                         "zkl::semaphore_mutex::unlock");
    }
    /* lock() and try_lock_for() that also end, with errc::canceled, once
     * `h` fires. */
    void lock(const cancel_handle &h)
    {
        detail::check(detail::run([&] {
                          return zkl_semmutex_acquire_cancellable(get(), ZKL_WAIT_FOREVER,
                                                                  h.native_handle());
                      }),
                      "zkl::semaphore_mutex::lock");
    }
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period> &d, const cancel_handle &h)
    {
        return detail::timed(detail::run([&] {
                                 return zkl_semmutex_acquire_cancellable(
                                     get(), detail::timeout_ms(d), h.native_handle());
                             }),
                             "zkl::semaphore_mutex::try_lock_for");
    }
    /* Asynchronously: the hold is the request's, not the object's. */
    template <class Rep, class Period> [[nodiscard]] request
    lock_async(const std::chrono::duration<Rep, Period> &timeout, request::done_fn done)
    {
        if (!s_)
            throw error(ZKL_EINVAL, "zkl::semaphore_mutex (moved from)");
        return request::make(s_->client, std::move(done), "zkl::semaphore_mutex::lock_async",
                             [&](zkl_request_fn fn, void *arg, zkl_request **out) {
                                 return zkl_semmutex_acquire_async(
                                     get(), detail::timeout_ms(timeout), fn, arg, out);
                             });
    }
    /* As zkl::mutex::guarded_multi, for the object's hold. */
    template <class Op = ::zoo_op, class Result = ::zoo_op_result>
    void guarded_multi(const Op *ops, std::size_t count, Result *results = nullptr)
    {
        detail::check(detail::run([&] {
                          return count > INT_MAX
                                     ? ZKL_EINVAL
                                     : zkl_semmutex_guarded_multi(get(), static_cast<int>(count),
                                                                  ops, results);
                      }),
                      "zkl::semaphore_mutex::guarded_multi");
    }
    bool is_held() const noexcept { return zkl_semmutex_is_held(get()) == 1; }
    std::int64_t token() const
    {
        std::int64_t t = 0;
        detail::check(detail::run([&] { return zkl_semmutex_token(get(), &t); }),
                      "zkl::semaphore_mutex::token");
        return t;
    }
    void guarded_set(const std::string &path, std::string_view data)
    {
        if (data.size() > static_cast<std::size_t>(INT_MAX))
            throw error(ZKL_EINVAL, "zkl::semaphore_mutex::guarded_set");
        detail::check(detail::run([&] {
                          return zkl_semmutex_guarded_set(get(), path.c_str(), data.data(),
                                                          static_cast<int>(data.size()));
                      }),
                      "zkl::semaphore_mutex::guarded_set");
    }
    void set_on_lost(std::function<void(std::int64_t)> fn)
    {
        if (!s_)
            throw error(ZKL_EINVAL, "zkl::semaphore_mutex (moved from)");
        detail::check(
            detail::run([&] { return zkl_semmutex_set_lost_fn(s_->s, nullptr, nullptr); }),
            "zkl::semaphore_mutex::set_on_lost");
        s_->hook.reset();
        if (!fn)
            return;
        s_->hook = std::make_unique<detail::lost_hook>(std::move(fn));
        detail::check(detail::run([&] {
                          return zkl_semmutex_set_lost_fn(s_->s, &detail::semmutex_state::on_lost,
                                                          s_->hook.get());
                      }),
                      "zkl::semaphore_mutex::set_on_lost");
    }
    /* As zkl::mutex::set_on_revoke. */
    void set_on_revoke(std::function<void(std::int64_t)> fn)
    {
        if (!s_)
            throw error(ZKL_EINVAL, "zkl::semaphore_mutex (moved from)");
        detail::check(
            detail::run([&] { return zkl_semmutex_set_revoke_fn(s_->s, nullptr, nullptr); }),
            "zkl::semaphore_mutex::set_on_revoke");
        s_->revoke.reset();
        if (!fn)
            return;
        s_->revoke = std::make_unique<detail::lost_hook>(std::move(fn));
        detail::check(detail::run([&] {
                          return zkl_semmutex_set_revoke_fn(s_->s, &detail::semmutex_state::on_lost,
                                                            s_->revoke.get());
                      }),
                      "zkl::semaphore_mutex::set_on_revoke");
    }
    operator lock_ref() const { return lock_ref(s_, s_ ? s_->as_lock.get() : nullptr); }
    zkl_semmutex *native_handle() const noexcept { return get(); }

private:
    zkl_semmutex *get() const noexcept { return s_ ? s_->s : nullptr; }
    std::shared_ptr<detail::semmutex_state> s_;
};

/* ------------------------------------------------------------------------
 * Multi-lock (zkl_multilock): several locks taken as one, all or nothing,
 * in a canonical order (no deadlock between multi-locks), within one
 * deadline. TimedLockable; held per thread, reentrant.
 * ---------------------------------------------------------------------- */
namespace detail {
struct multilock_state {
    std::shared_ptr<zkl_client> client; /* for the paths form */
    std::vector<lock_ref> members;      /* kept until the multi-lock goes */
    zkl_multilock *ml = nullptr;
    lock_handle as_lock;
    multilock_state() = default;
    multilock_state(const multilock_state &) = delete;
    multilock_state &operator=(const multilock_state &) = delete;
    ~multilock_state()
    {
        as_lock.reset();
        zkl_multilock_free(ml);
    }
};
} // namespace detail

class multi_lock {
public:
    /* Of other lock objects (mutexes, shared_mutex sides, semaphore
     * mutexes, multi-locks): it keeps a share of each. Throws
     * invalid_argument for an empty list or two members on one path. */
    multi_lock(std::initializer_list<lock_ref> members)
        : multi_lock(std::vector<lock_ref>(members))
    {
    }
    explicit multi_lock(std::vector<lock_ref> members)
        : s_(std::make_shared<detail::multilock_state>())
    {
        std::vector<zkl_lock *> handles;
        handles.reserve(members.size());
        for (const auto &m : members)
            handles.push_back(m.native_handle());
        s_->members = std::move(members);
        zkl_multilock *ml = nullptr;
        detail::check(detail::run([&] {
                          return zkl_multilock_new_locks(handles.data(), handles.size(), &ml);
                      }),
                      "zkl::multi_lock");
        finish(ml);
    }
    /* Of one new mutex per path. */
    multi_lock(const client &c, const std::vector<std::string> &paths)
        : s_(std::make_shared<detail::multilock_state>())
    {
        s_->client = c.shared();
        std::vector<const char *> p;
        p.reserve(paths.size());
        for (const auto &s : paths)
            p.push_back(s.c_str());
        zkl_multilock *ml = nullptr;
        detail::check(detail::run([&] {
                          return zkl_multilock_new(c.native_handle(), p.data(), p.size(), &ml);
                      }),
                      "zkl::multi_lock");
        finish(ml);
    }
    multi_lock(multi_lock &&) noexcept = default;
    multi_lock &operator=(multi_lock &&) noexcept = default;

    void lock()
    {
        detail::check(detail::run([&] { return zkl_multilock_acquire(get(), ZKL_WAIT_FOREVER); }),
                      "zkl::multi_lock::lock");
    }
    bool try_lock()
    {
        return detail::timed(detail::run([&] { return zkl_multilock_acquire(get(), 0); }),
                             "zkl::multi_lock::try_lock");
    }
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period> &d)
    {
        return detail::timed(
            detail::run([&] { return zkl_multilock_acquire(get(), detail::timeout_ms(d)); }),
            "zkl::multi_lock::try_lock_for");
    }
    template <class Clock, class Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration> &t)
    {
        return detail::timed(
            detail::run([&] { return zkl_multilock_acquire(get(), detail::timeout_ms_until(t)); }),
            "zkl::multi_lock::try_lock_until");
    }
    void unlock()
    {
        detail::unlocked(detail::run([&] { return zkl_multilock_release(get()); }),
                         "zkl::multi_lock::unlock");
    }
    /* lock() and try_lock_for() that also end, with errc::canceled, once
     * `h` fires. */
    void lock(const cancel_handle &h)
    {
        detail::check(detail::run([&] {
                          return zkl_multilock_acquire_cancellable(get(), ZKL_WAIT_FOREVER,
                                                                   h.native_handle());
                      }),
                      "zkl::multi_lock::lock");
    }
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period> &d, const cancel_handle &h)
    {
        return detail::timed(detail::run([&] {
                                 return zkl_multilock_acquire_cancellable(
                                     get(), detail::timeout_ms(d), h.native_handle());
                             }),
                             "zkl::multi_lock::try_lock_for");
    }
    /* Every member, asynchronously (zkl_multilock_acquire_async): one
     * request holds them all. Its members must be zkl's recipes on one
     * client. */
    template <class Rep, class Period> [[nodiscard]] request
    lock_async(const std::chrono::duration<Rep, Period> &timeout, request::done_fn done)
    {
        if (!s_)
            throw error(ZKL_EINVAL, "zkl::multi_lock (moved from)");
        return request::make(s_, std::move(done), "zkl::multi_lock::lock_async",
                             [&](zkl_request_fn fn, void *arg, zkl_request **out) {
                                 return zkl_multilock_acquire_async(
                                     get(), detail::timeout_ms(timeout), fn, arg, out);
                             });
    }
    bool is_held() const noexcept { return zkl_multilock_is_held(get()) == 1; }

    operator lock_ref() const { return lock_ref(s_, s_ ? s_->as_lock.get() : nullptr); }
    zkl_multilock *native_handle() const noexcept { return get(); }

private:
    void finish(zkl_multilock *ml)
    {
        s_->ml = ml;
        zkl_lock *l = nullptr;
        detail::check(detail::run([&] { return zkl_multilock_as_lock(ml, &l); }),
                      "zkl::multi_lock");
        s_->as_lock.reset(l);
    }
    zkl_multilock *get() const noexcept { return s_ ? s_->ml : nullptr; }
    std::shared_ptr<detail::multilock_state> s_;
};

/* ------------------------------------------------------------------------
 * Leader election (zkl_latch, Curator's LeaderLatch protocol). The latch
 * joins when made and leaves when destroyed (RAII): its node is deleted.
 *   zkl::latch l(c, "/election/orders", "node-a");
 *   l.on_change([](bool leading) { ... });   // where request callbacks run
 *   if (l.await(10s)) { auto t = l.token(); ... }
 * ---------------------------------------------------------------------- */
namespace detail {
struct latch_state {
    std::shared_ptr<zkl_client> client; /* first: goes last */
    zkl_latch *l = nullptr;
    std::unique_ptr<std::function<void(bool)>> fn;
    latch_state() = default;
    latch_state(const latch_state &) = delete;
    latch_state &operator=(const latch_state &) = delete;
    ~latch_state() { zkl_latch_free(l); /* leaves: its node is deleted */ }
    static void call(zkl_latch *, int leader, void *arg) noexcept
    {
        try {
            (*static_cast<std::function<void(bool)> *>(arg))(leader != 0);
        } catch (...) {
        }
    }
};
} // namespace detail

class latch {
public:
    /* Join the election on `path` with `id` as the node's data. Throws
     * zkl::error (invalid_argument for a bad path). */
    latch(const client &c, const std::string &path, const std::string &id = "")
        : latch(c, path, id, nullptr)
    {
    }
    /* The same with a listener set before the latch joins, so that it hears
     * the first change too (see on_change). */
    latch(const client &c, const std::string &path, const std::string &id,
          std::function<void(bool)> on_change_fn)
        : s_(std::make_shared<detail::latch_state>())
    {
        s_->client = c.shared();
        zkl_latch *l = nullptr;
        detail::check(detail::run([&] {
                          return zkl_latch_new(c.native_handle(), path.c_str(), id.c_str(), &l);
                      }),
                      "zkl::latch");
        s_->l = l;
        if (on_change_fn)
            on_change(std::move(on_change_fn));
        detail::check(detail::run([&] { return zkl_latch_start(l); }), "zkl::latch");
    }
    latch(latch &&) noexcept = default;
    latch &operator=(latch &&) noexcept = default;

    /* Wait until leading: true, or false when the time ran out; throws for
     * a latch that can take no part (no_auth, closed, ...). */
    template <class Rep, class Period> bool await(const std::chrono::duration<Rep, Period> &d)
    {
        return detail::timed(
            detail::run([&] { return zkl_latch_await(get(), detail::timeout_ms(d)); }),
            "zkl::latch::await");
    }
    void await()
    {
        detail::check(detail::run([&] { return zkl_latch_await(get(), ZKL_WAIT_FOREVER); }),
                      "zkl::latch::await");
    }
    bool is_leader() const noexcept { return zkl_latch_is_leader(get()) == 1; }
    /* The fencing token of the current leadership; throws not_held when
     * not leading. */
    std::int64_t token() const
    {
        std::int64_t t = 0;
        detail::check(detail::run([&] { return zkl_latch_token(get(), &t); }),
                      "zkl::latch::token");
        return t;
    }
    /* Told true when the latch becomes leader, false when it stops (see
     * zkl_latch_set_listener); an empty function removes it. Exceptions it
     * throws are dropped. The latch joins in its constructor: a listener set
     * here may miss a leadership that began before; pass it to the
     * constructor to hear every change. */
    void on_change(std::function<void(bool)> fn)
    {
        auto next = fn ? std::make_unique<std::function<void(bool)>>(std::move(fn)) : nullptr;
        detail::check(detail::run([&] {
                          return zkl_latch_set_listener(get(), next ? &detail::latch_state::call
                                                                    : nullptr,
                                                        next.get());
                      }),
                      "zkl::latch::on_change");
        s_->fn = std::move(next); /* the old one no longer runs */
    }
    /* Leave now, before the destructor (zkl_latch_close). */
    void close() { detail::check(detail::run([&] { return zkl_latch_close(get()); }), "zkl::latch::close"); }
    zkl_latch *native_handle() const noexcept { return get(); }

private:
    zkl_latch *get() const noexcept { return s_ ? s_->l : nullptr; }
    std::shared_ptr<detail::latch_state> s_;
};

} // namespace zkl

#endif /* ZKL_HPP */
