/* The invariants, checked against the model's truth (the leader's tree, as
 * zsim_on_change reports it) and each client's belief (drv.h's struct
 * dhold: from the grant until the release call starts or the loss is told).
 * docs/simulation.md states each one; in short:
 *
 *   holders   per lock path, the believed holds whose node still exists on
 *             the leader: at most one exclusive (a mutex's, a writer's), no
 *             reader beside a writer but the writer's own (its downgrade),
 *             at most SEM_MAX leases. A hold whose node another session
 *             deleted (an outsider, a forced expiry) is in the lease window
 *             from then on, and counts no more; the window is bounded by
 *   told      a hold whose node is gone is told (its loss reported) by the
 *             loss rule's deadline from the deletion: zkl__loss_at(D, T),
 *             its own session's deletion too while the hold is believed;
 *   expired   the leader expires no session of a believed hold by itself
 *             (the loss rule presumed the loss before the earliest expiry);
 *   basis     a node comes to hold only on news (an answer, a watch event)
 *             from a time its node existed: not deleted in a transaction
 *             before the one behind the item that made it hold;
 *   token     per lock path, each hold's token is above every exclusive
 *             hold's granted before it;
 *   twice     a loss is told once; and never for a hold its owner never
 *             had (stray);
 *   prompt    a try once is decided within 2/3 of its session timeout
 *             and 200 ms (its first answer, or the connection lost);
 *   lost-grant no node is granted after its loss was told;
 *   deadline  every acquire ends by its deadline, or, when that passed
 *             before its node was made, a session timeout after (a try
 *             once), plus 500 ms for a failed attempt's delete;
 *   orphan    a node the core lets go of while its session lives is gone
 *             from the leader (no node of a failed, cancelled or released
 *             attempt stays); none of ours is left once everything settled;
 *   rate      at most RATE_MAX requests per client and virtual second. */
#include <stdlib.h>
#include <string.h>

#include "drv.h"

/* A real busy loop of one node (exists and getData on a held node whose
 * read is refused) ran at about 1,900 requests a second; the busiest
 * schedules of the default and outsider-heavy mixes stay under 600. */
#define RATE_MAX 600

const char *const violation_names[V_NKINDS] = {
    [V_HOLDERS] = "holders",   [V_BASIS] = "basis",     [V_TOLD] = "told",
    [V_EXPIRED] = "expired",   [V_TOKEN] = "token",     [V_TWICE] = "twice",
    [V_STRAY_LOSS] = "stray",  [V_DEADLINE] = "deadline", [V_ORPHAN] = "orphan",
    [V_RATE] = "rate",         [V_LOST_LIVE] = "lost-live", [V_STUCK] = "stuck",
    [V_LEFT] = "left",         [V_KEPT] = "kept",        [V_TABLE] = "table",
    [V_LOST_GRANT] = "lost-grant", [V_PROMPT] = "prompt", [V_PRED] = "pred",
    [V_ABSENT] = "absent", [V_SESSION] = "session", [V_SPIN] = "spin"};

static const char *const kind_names[] = {"exclusive", "read", "write", "lease"};

static int64_t now_of(const struct drv *d)
{
    return zsim_now(d->w);
}

/* ---- deletions the leader applied: a small cache by path -------------------------- */

#define GONE_SLOTS 8192
static struct {
    uint64_t hash;
    int64_t zxid;
} gone[GONE_SLOTS];

static uint64_t path_hash(const char *s)
{
    uint64_t h = 1469598103934665603u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h | 1;
}

void check_change(void *arg, const struct zsim_change *c)
{
    struct drv *d = arg;
    if (c->created)
        return;
    uint64_t h = path_hash(c->path);
    gone[h % GONE_SLOTS].hash = h;
    gone[h % GONE_SLOTS].zxid = c->zxid;
    dnode *n = drv_find_node(d, c->path);
    if (n == NULL || n->deleted_at != 0)
        return;
    n->deleted_at = now_of(d);
    n->deleted_zxid = c->zxid;
    struct sinfo *si = n->sess >= 0 ? drv_sinfo(d, n->sess) : NULL;
    if (c->origin == n->sess && c->origin >= 0) {
        /* A request of its own session: a release, a leave, which end
         * the owner's belief first. A hold still believed is lost, and
         * must be told as any other loss (told). */
        n->deleted_held = n->hold != NULL && n->hold->live;
        return;
    }
    if (c->closing && c->owner == n->sess && si != NULL) {
        if (si->forced || now_of(d) < n->cl->paused_until + 10 * MS)
            n->deleted_by_other = true; /* no ensemble expires before the timeout; a
                                           paused process can only be told once it runs
                                           again, its threads in any order */
        else if (!si->closed)
            n->deleted_expired = true;
        return;
    }
    n->deleted_by_other = true;
    drv_trace(d, "the leader deletes node %u (%s/%s), client %d's", n->uid, drv_paths[n->path],
              n->name, n->cl->ix);
}

/* A node got its name: deleted already (before the client learned it)? */
void check_named(struct drv *d, dnode *n)
{
    char path[ZKL__MAX_PATH + 96];
    snprintf(path, sizeof path, "%s/%s", drv_paths[n->path], n->name);
    if (zsim_truth_stat(d->w, path, NULL) == ZOK)
        return;
    uint64_t h = path_hash(path);
    n->deleted_at = now_of(d);
    n->deleted_zxid = gone[h % GONE_SLOTS].hash == h ? gone[h % GONE_SLOTS].zxid : 0;
    n->deleted_by_other = true; /* its own session deletes nothing it does not know */
    drv_trace(d, "client %d: node %u was deleted before it learned its name", n->cl->ix, n->uid);
}

/* ---- holds ---------------------------------------------------------------------------- */

void check_grant(struct drv *d, dnode *n, int owner, enum hkind kind, int leases)
{
    bool again = n->ever_held; /* held again after a refused release: same hold */
    if (n->lost_told > 0)
        drv_violation(d, V_LOST_GRANT,
                      "client %d: node %u granted to its owner after the client was told its loss",
                      n->cl->ix, n->uid);
    struct dhold *h = calloc(1, sizeof *h);
    if (h == NULL)
        abort();
    h->cl = n->cl;
    h->owner = owner;
    h->path = n->path;
    h->kind = kind;
    h->leases = leases;
    h->n = n;
    h->token = n->cn.token;
    h->granted = now_of(d);
    h->sess = n->sess;
    h->live = true;
    h->next = d->holds;
    d->holds = h;
    if (n->hold != NULL)
        check_end(d, n->hold, "granted again");
    n->hold = h;
    n->ever_held = true;
    drv_trace(d, "client %d %s %d holds %s (%s, node %u, token %lld)", n->cl->ix,
              owner >= 1000 ? "request" : "worker", owner >= 1000 ? owner - 1000 : owner,
              drv_paths[n->path], kind_names[kind], n->uid, (long long)h->token);
    /* A hold granted on a node already gone is in the lease window from the
     * start: its token orders nothing. */
    if (again || kind == HK_LEASE || n->deleted_at != 0)
        return;
    if (h->token <= d->max_excl[n->path])
        drv_violation(d, V_TOKEN,
                      "%s: client %d's %s hold has token %lld, not above %lld of an exclusive "
                      "hold granted before it",
                      drv_paths[n->path], n->cl->ix, kind_names[kind], (long long)h->token,
                      (long long)d->max_excl[n->path]);
    if (kind == HK_EXCL || kind == HK_WRITE)
        if (h->token > d->max_excl[n->path])
            d->max_excl[n->path] = h->token;
}

void check_end(struct drv *d, struct dhold *h, const char *why)
{
    if (!h->live)
        return;
    h->live = false;
    for (struct dhold **p = &d->holds; *p; p = &(*p)->next)
        if (*p == h) {
            *p = h->next;
            break;
        }
    if (h->n != NULL && h->n->hold == h)
        h->n->hold = NULL;
    drv_trace(d, "client %d's hold of %s (token %lld) ends: %s", h->cl->ix, drv_paths[h->path],
              (long long)h->token, why);
    h->next = d->ended; /* kept until the run ends: requests still point at it */
    d->ended = h;
}

void check_lost(struct drv *d, dnode *n)
{
    d->losses++;
    if (++n->lost_told > 1)
        drv_violation(d, V_TWICE, "client %d: node %u's loss told %u times", n->cl->ix, n->uid,
                      n->lost_told);
    if (n->hold != NULL) {
        check_end(d, n->hold, "its loss told");
        return;
    }
    if (n->hooks && !n->ever_held)
        drv_violation(d, V_STRAY_LOSS,
                      "client %d: a lost callback for node %u, a hold its owner never had (the "
                      "acquire was still waiting on it)",
                      n->cl->ix, n->uid);
}

void check_basis(struct drv *d, dnode *n)
{
    if (d->basis <= 0 || n->name[0] == '\0')
        return;
    char path[ZKL__MAX_PATH + 96];
    snprintf(path, sizeof path, "%s/%s", drv_paths[n->path], n->name);
    if (zsim_truth_stat(d->w, path, NULL) == ZOK)
        return; /* it exists: it existed at the basis too */
    int64_t z = n->deleted_zxid;
    uint64_t h = path_hash(path);
    if (z == 0 && gone[h % GONE_SLOTS].hash == h)
        z = gone[h % GONE_SLOTS].zxid;
    /* Strictly before: a session's end deletes all its nodes in one
     * transaction, in any order (the server's killSession), so the news of
     * a predecessor's end can come before that of our own node in it. */
    if (z != 0 && z < d->basis)
        drv_violation(d, V_BASIS,
                      "client %d: node %u (%s) came to hold on news of zxid %lld, but the "
                      "leader had deleted it at zxid %lld",
                      n->cl->ix, n->uid, path, (long long)d->basis, (long long)z);
}

struct look {
    const char *prefix;
    char found[DRV_NAME];
};

static void look_one(void *arg, const char *name)
{
    struct look *look = arg;
    if (look->found[0] == '\0' && strncmp(name, look->prefix, strlen(look->prefix)) == 0)
        snprintf(look->found, sizeof look->found, "%s", name);
}

void check_freed(struct drv *d, dnode *n)
{
    struct dcl *c = n->cl;
    if (c->closing || n->cn.gen != zkl__core_gen(c->core) || c->s == NULL || c->sid == 0 ||
        !drv_connected(c))
        return;
    /* The attempt is over and its session lives: no node of it may stay. */
    char uuid[37];
    struct look look = {NULL, ""};
    char prefix[48];
    zkl__uuid_text(n->cn.uuid, uuid);
    snprintf(prefix, sizeof prefix, "_c_%s-", uuid);
    look.prefix = prefix;
    zsim_truth_children(d->w, drv_paths[n->path], look_one, &look);
    if (look.found[0] == '\0')
        return;
    char path[ZKL__MAX_PATH + 96];
    snprintf(path, sizeof path, "%s/%s", drv_paths[n->path], look.found);
    struct zsim_stat st;
    if (zsim_truth_stat(d->w, path, &st) == ZOK && st.ephemeralOwner == c->sid)
        drv_violation(d, V_ORPHAN,
                      "client %d: node %u let go of (state %d, error %s) while %s stays on the "
                      "server in its live session",
                      c->ix, n->uid, n->cn.st, n->cn.err ? zkl_err_name(n->cn.err) : "none", path);
}

/* Whether a pause of the process or a blocked callback overlapped what
 * began at `since`: its time bounds do not hold then. */
bool check_stood(const struct dcl *c, int64_t since)
{
    return c->paused_until > since || c->blocked_until > since;
}

void check_acquire_end(struct drv *d, struct dcl *c, int64_t started, int64_t bound, int rc,
                       uint64_t gen, const char *what)
{
    (void)gen, (void)rc;
    if (bound != ZKL__NO_DEADLINE && now_of(d) > bound && !check_stood(c, started))
        drv_violation(d, V_DEADLINE, "client %d: an %s ended %.3f s after its bound", c->ix,
                      what, (double)(now_of(d) - bound) / SEC);
}

/* A try once is decided by the policy's first answer, or by the loss of
 * the connection, which the client notices within two thirds of the
 * session timeout of silence: never by the session timeout itself. */
#define PROMPT_SLACK (200 * MS)

void check_prompt(struct drv *d, struct dcl *c, const zkl__cnode *n, int64_t started)
{
    int t = zkl__loss_timeout_ms(c->negotiated_ms, c->timeout_ms);
    /* a silent link that came back meanwhile, or a leader that answers
     * again, was heard: the client's two thirds of silence start again */
    int64_t from = c->link_back > started ? c->link_back : started;
    int64_t back = d->lead_back <= now_of(d) ? d->lead_back : d->lead_back_was;
    if (back > from)
        from = back;
    int64_t took = now_of(d) - from;
    int64_t bound = 2 * (int64_t)t * MS / 3 + PROMPT_SLACK;
    if (n->patience != ZKL__P_DEADLINE && took > bound && !check_stood(c, started))
        drv_violation(d, V_PROMPT,
                      "client %d: a try once decided %.3f s after its call, over %.3f s (two "
                      "thirds of its session timeout, and %.3f s)",
                      c->ix, (double)took / SEC, (double)bound / SEC,
                      (double)PROMPT_SLACK / SEC);
}

static void rate_second(struct dcl *c)
{
    int64_t sec = zsim_now(c->d->w) / SEC;
    if (sec != c->rate_sec) {
        c->rate_sec = sec;
        c->rate_n = 0;
        c->rate_ups = 0;
        c->rate_allow = 0;
    }
}

static void count_live(zkl__cnode *n, void *arg)
{
    (void)n;
    ++*(uint32_t *)arg;
}

/* The connection up again: each of the client's nodes may look at its own
 * node once more (a reconnection's missed events) and send again what the
 * lost connection failed (its create, listing, sync or delete), and the
 * keeper a keepalive: a client of hundreds of waiters whose connection
 * breaks again at once (a setWatches over the servers' limit) does that
 * at each reconnection, proportional work and no loop, until the loss
 * rule gives the session up. */
void check_rate_up(struct dcl *c)
{
    rate_second(c);
    uint32_t nodes = 0;
    zkl__core_each(c->core, count_live, &nodes);
    c->rate_ups++;
    c->rate_allow += 2 * nodes + 4;
}

void check_rate(struct dcl *c)
{
    rate_second(c);
    if (++c->rate_n > c->d->max_rate)
        c->d->max_rate = c->rate_n;
    if (c->rate_n == RATE_MAX + c->rate_allow + 1)
        drv_violation(c->d, V_RATE,
                      "client %d: more than %u requests in virtual second %lld (%d, and %u for "
                      "its nodes at %u connections up again)",
                      c->ix, RATE_MAX + c->rate_allow, (long long)c->rate_sec, RATE_MAX,
                      c->rate_allow, c->rate_ups);
}

/* ---- at every step ---------------------------------------------------------------------- */

static void holders(struct drv *d)
{
    for (int p = 0; p < NPATHS; p++) {
        const struct dhold *excl = NULL, *writer = NULL, *reader = NULL;
        int leases = 0, nexcl = 0;
        const struct dhold *other = NULL;
        for (const struct dhold *h = d->holds; h; h = h->next) {
            if (h->path != p || h->n == NULL || h->n->deleted_at != 0)
                continue;
            switch (h->kind) {
            case HK_EXCL:
                nexcl++;
                other = excl ? excl : other;
                excl = h;
                break;
            case HK_WRITE:
                nexcl++;
                other = writer ? writer : other;
                writer = h;
                break;
            case HK_READ:
                if (reader == NULL || writer == NULL || reader->owner != writer->owner ||
                    reader->cl != writer->cl)
                    reader = h;
                break;
            case HK_LEASE:
                leases += h->leases;
                break;
            }
        }
        const struct dhold *a = writer ? writer : excl;
        if (nexcl > 1) {
            const struct dhold *b = other;
            drv_violation(d, V_HOLDERS,
                          "%s: two exclusive holders: client %d %s %d (token %lld, since %.3f s) "
                          "and client %d %s %d (token %lld, since %.3f s)",
                          drv_paths[p], a->cl->ix, a->owner >= 1000 ? "request" : "worker",
                          a->owner % 1000, (long long)a->token, (double)a->granted / SEC,
                          b->cl->ix, b->owner >= 1000 ? "request" : "worker", b->owner % 1000,
                          (long long)b->token, (double)b->granted / SEC);
            return;
        }
        if (writer != NULL) {
            for (const struct dhold *h = d->holds; h; h = h->next)
                if (h->path == p && h->kind == HK_READ && h->n && h->n->deleted_at == 0 &&
                    (h->owner != writer->owner || h->cl != writer->cl || h->owner >= 1000)) {
                    drv_violation(d, V_HOLDERS,
                                  "%s: client %d %d holds the write lock (token %lld) while "
                                  "client %d %d holds a read lock (token %lld)",
                                  drv_paths[p], writer->cl->ix, writer->owner,
                                  (long long)writer->token, h->cl->ix, h->owner,
                                  (long long)h->token);
                    return;
                }
        }
        if (leases > SEM_MAX) {
            drv_violation(d, V_HOLDERS, "%s: %d leases held (limit %d)", drv_paths[p], leases,
                          SEM_MAX);
            return;
        }
    }
}

void check_step(struct drv *d)
{
    int64_t now = now_of(d);
    for (const struct dhold *h = d->holds; h; h = h->next) {
        const dnode *n = h->n;
        if (n == NULL || n->deleted_at == 0)
            continue;
        if (n->deleted_expired) {
            drv_violation(d, V_EXPIRED,
                          "the leader expired client %d's session %d while it believed it held "
                          "%s (token %lld): the loss rule presumed too late",
                          h->cl->ix, h->sess, drv_paths[h->path], (long long)h->token);
            return;
        }
        int64_t by = zkl__loss_at(n->deleted_at,
                                  zkl__loss_timeout_ms(h->cl->negotiated_ms, h->cl->timeout_ms));
        if (by < h->cl->paused_until + 10 * MS)
            by = h->cl->paused_until + 10 * MS; /* told as it runs again */
        if (h->cl->late_until + h->cl->late_ns >= n->deleted_at)
            by += h->cl->late_ns; /* by its keeper's late tick */
        if ((n->deleted_by_other || n->deleted_held) && now >= by) {
            drv_violation(d, V_TOLD,
                          "client %d still believes it holds %s (token %lld): its node went "
                          "at %.3f s%s, and nothing told it by %.3f s",
                          h->cl->ix, drv_paths[h->path], (long long)h->token,
                          (double)n->deleted_at / SEC,
                          n->deleted_held ? " (deleted by its own session)" : "",
                          (double)by / SEC);
            return;
        }
    }
    holders(d);
    for (int i = 0; i < d->nclients; i++) {
        struct dcl *c = d->cl[i];
        for (int k = 0; c && k < c->nwk; k++) {
            const struct dwk *w = &c->wk[k];
            if ((w->phase == W_ACQ || w->phase == W_SETTLE) && w->bound != ZKL__NO_DEADLINE &&
                now > w->bound && w->prim != 0 && !check_stood(c, w->call_started)) {
                drv_violation(d, V_DEADLINE,
                              "client %d worker %d: an acquire (%s) still runs %.3f s after its "
                              "bound",
                              c->ix, w->id, op_name(w->op), (double)(now - w->bound) / SEC);
                return;
            }
        }
    }
}

/* Once everything settled: no node of ours is left on the server. */
static void left_one(void *arg, const char *name)
{
    struct {
        struct drv *d;
        int path;
    } *a = arg;
    char path[ZKL__MAX_PATH + 96];
    snprintf(path, sizeof path, "%s/%s", drv_paths[a->path], name);
    struct zsim_stat st;
    if (zsim_truth_stat(a->d->w, path, &st) != ZOK || st.ephemeralOwner == 0)
        return;
    for (int i = 0; i < a->d->nclients; i++) {
        struct dcl *c = a->d->cl[i];
        if (c != NULL && c->sid != 0 && st.ephemeralOwner == c->sid &&
            !(a->path == P_LATCH && latch_takes_part(c, name)))
            drv_violation(a->d, V_LEFT, "%s stays on the server (client %d's live session) "
                          "after every operation ended", path, c->ix);
    }
}

void check_quiet(struct drv *d, struct dcl *c)
{
    (void)c;
    for (int p = 0; p < NPATHS; p++) {
        struct {
            struct drv *d;
            int path;
        } a = {d, p};
        zsim_truth_children(d->w, drv_paths[p], left_one, &a);
    }
}
