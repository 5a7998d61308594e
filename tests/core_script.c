/* The script runner of tests/core_script.h: a stand-in shell for the core. */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "areq.h"
#include "core_script.h"
#include "kit.h"
#include "machine.h" /* zkl__cnode_move, for "force" */

#define DIR "/locks/t"
#define MAXN 8
#define MAXP 256
#define SID 0x1000

struct tnode {
    zkl__cnode cn; /* first: the core's */
    char letter;
    bool freed;
};

struct pend {
    enum zkl__act_type type;
    char letter;           /* the node it answers (a joint: its first) */
    struct zkl__joint *j;
    int slot;
    char path[ZKL__MAX_PATH + 96];
};

struct treq {
    zkl__areq m;
    char letter; /* R, S, ... */
    zkl__cnode *kept[4];
    int step_rc;      /* what its step answers: 0, 1 or a code */
    char step_next;   /* ... and with 0, the node to wait on next ('-': none) */
};

#define MAXR 4

struct world {
    struct zkl__core *k;
    struct treq *reqs[MAXR]; /* R, S, T, U */
    struct tnode *nodes[MAXN]; /* A, B, ... */
    struct zkl__gate_arg gate[MAXN];
    bool down_arg[MAXN];
    struct pend pend[MAXP];
    size_t npend;
    char log[4096];
    size_t loglen;
    int64_t now;
    uint64_t gen;
    int64_t sid;
    int fail_next; /* the next send fails with this code (0: none) */
    int nomem;     /* the nomem-th allocation of the core from now fails */
    char *why;
    size_t whylen;
    int line;
};

static unsigned moves[ZKL__N_COUNT][ZKL__N_COUNT];
static unsigned rmoves[ZKL__R_COUNT][ZKL__R_COUNT];
static unsigned omoves[ZKL__OWN_COUNT][ZKL__OWN_COUNT];
static unsigned lmoves[ZKL__L_COUNT][ZKL__L_COUNT];
static unsigned rdmoves[ZKL__READING_COUNT][ZKL__READING_COUNT];
static unsigned amoves[ZKL__ARM_COUNT][ZKL__ARM_COUNT];

unsigned core_script_rmoves(int from, int to)
{
    return rmoves[from][to];
}
static unsigned actions[ZKL__A_FREE + 1];

unsigned core_script_moves(int from, int to)
{
    return moves[from][to];
}

unsigned core_script_omoves(int from, int to)
{
    return omoves[from][to];
}

const char *const core_script_own_states[ZKL__OWN_COUNT] = {"OFF", "ASKED", "BLIND", "SET"};

unsigned core_script_lmoves(int from, int to)
{
    return lmoves[from][to];
}

const char *const core_script_listing_states[ZKL__L_COUNT] = {"IDLE", "OUT", "OUT_AGAIN"};

unsigned core_script_rdmoves(int from, int to)
{
    return rdmoves[from][to];
}

const char *const core_script_reading_states[ZKL__READING_COUNT] = {"NODES", "KIDS_OFF",
                                                                   "KIDS_SET"};

unsigned core_script_amoves(int from, int to)
{
    return amoves[from][to];
}

const char *const core_script_armed_states[ZKL__ARM_COUNT] = {"OFF", "ON"};

unsigned core_script_actions(int type)
{
    return actions[type];
}

static bool failf(struct world *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static bool failf(struct world *w, const char *fmt, ...)
{
    int k = snprintf(w->why, w->whylen, "line %d: ", w->line);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->why + k, w->whylen - (size_t)k, fmt, ap);
    va_end(ap);
    return false;
}

static struct tnode *node_of(struct world *w, char letter)
{
    int i = letter - 'A';
    return i >= 0 && i < MAXN ? w->nodes[i] : NULL;
}

static char letter_of(struct world *w, const zkl__cnode *cn)
{
    for (int i = 0; i < MAXN; i++)
        if (w->nodes[i] && &w->nodes[i]->cn == cn)
            return (char)('A' + i);
    return '?';
}

/* ---- names: script shorthand <-> node names ------------------------------------ */

static const char *foreign_uuid = "0f0e0d0c-0b0a-4908-8706-050403020100";

/* "A7" -> node A's name with sequence 7; "x:lock-3" -> another client's. */
static bool make_name(struct world *w, const char *s, char *out, size_t size)
{
    /* A7, or A-2147483647: a sequence past the 32-bit wrap, as the server
     * names it */
    if (s[0] >= 'A' && s[0] <= 'Z' &&
        ((s[1] >= '0' && s[1] <= '9') || (s[1] == '-' && s[2] >= '0' && s[2] <= '9'))) {
        struct tnode *t = node_of(w, s[0]);
        if (t == NULL)
            return false;
        char uuid[37];
        zkl__uuid_text(t->cn.uuid, uuid);
        snprintf(out, size, "_c_%s-%s%010ld", uuid, zkl__cnode_kind(&t->cn), atol(s + 1));
        return true;
    }
    if (strncmp(s, "x:", 2) == 0 || strncmp(s, "y:", 2) == 0) {
        const char *d = s + strlen(s); /* the sequence: the digits at the end */
        while (d > s + 2 && d[-1] >= '0' && d[-1] <= '9')
            d--;
        char uuid[37];
        snprintf(uuid, sizeof uuid, "%s", foreign_uuid);
        uuid[0] = s[0] == 'x' ? '0' : '1';
        snprintf(out, size, "_c_%s-%.*s%010ld", uuid, (int)(d - s - 2), s + 2, atol(d));
        return true;
    }
    snprintf(out, size, "%s", s); /* a raw name */
    return true;
}

static void short_name(struct world *w, const char *name, char *out, size_t size)
{
    zkl__entry e;
    if (zkl__entry_parse(name, &e) != 0) {
        snprintf(out, size, "%s", name);
        return;
    }
    for (int i = 0; i < MAXN; i++) {
        struct tnode *t = w->nodes[i];
        char uuid[37];
        if (t == NULL || t->freed)
            continue;
        zkl__uuid_text(t->cn.uuid, uuid);
        if (zkl__name_has_uuid(name, uuid)) {
            snprintf(out, size, "%c%ld", 'A' + i, (long)e.seq);
            return;
        }
    }
    char x[37];
    snprintf(x, sizeof x, "%s", foreign_uuid);
    for (char c = '0'; c <= '1'; c++) {
        x[0] = c;
        if (zkl__name_has_uuid(name, x)) {
            snprintf(out, size, "%c:%.*s%ld", c == '0' ? 'x' : 'y',
                     (int)(strlen(e.kind) - 10), e.kind, (long)e.seq);
            return;
        }
    }
    snprintf(out, size, "%s", name);
}

/* ---- the sink ------------------------------------------------------------------ */

static const char *const act_names[] = {
    [ZKL__A_CREATE] = "create", [ZKL__A_PARENT] = "parent",   [ZKL__A_LIST] = "list",
    [ZKL__A_SYNC] = "sync",     [ZKL__A_WATCH_AHEAD] = "ahead", [ZKL__A_WATCH_MEMBER] = "member",
    [ZKL__A_WATCH_KIDS] = "kids", [ZKL__A_WATCH_OWN] = "own", [ZKL__A_READ_OWN] = "readown",
    [ZKL__A_FIND] = "find",     [ZKL__A_WATCH_DIR] = "dir",   [ZKL__A_DELETE] = "delete",
    [ZKL__A_WAKE] = "wake",     [ZKL__A_LOST] = "lost",       [ZKL__A_REVOKE] = "revoke",
    [ZKL__A_KICK] = "kick",     [ZKL__A_BROKEN] = "broken", [ZKL__A_FREE] = "free",
};

/* Append one action's word to the log the script's expect lines read (a
 * log too long for it is cut, and then differs from any expect). */
static void log_item(struct world *w, const char *item)
{
    size_t len = strlen(item);
    if (w->loglen + len + 2 < sizeof w->log) {
        if (w->loglen)
            w->log[w->loglen++] = ' ';
        memcpy(w->log + w->loglen, item, len + 1);
        w->loglen += len;
    }
}

static void log_action(struct world *w, char letter, const zkl__act *a)
{
    char item[300], nm[200] = "";
    const char *base = a->path ? strrchr(a->path, '/') : NULL;
    switch (a->type) {
    case ZKL__A_WATCH_AHEAD:
    case ZKL__A_WATCH_MEMBER:
    case ZKL__A_FIND:
        short_name(w, base + 1, nm, sizeof nm);
        break;
    case ZKL__A_PARENT:
        snprintf(nm, sizeof nm, "%s", a->path);
        break;
    default:
        break;
    }
    if (a->type == ZKL__A_WATCH_AHEAD)
        snprintf(item, sizeof item, "%c:ahead%d:%s", letter, a->slot, nm);
    else if (nm[0])
        snprintf(item, sizeof item, "%c:%s:%s", letter, act_names[a->type], nm);
    else
        snprintf(item, sizeof item, "%c:%s", letter, act_names[a->type]);
    log_item(w, item);
}

static int sink(void *ctx, const zkl__act *a)
{
    struct world *w = ctx;
    actions[a->type]++;
    const zkl__cnode *cn = a->j ? zkl__joint_first(a->j) : a->n;
    char letter = letter_of(w, cn);
    log_action(w, letter, a);
    if (a->type == ZKL__A_FREE) {
        struct tnode *t = (struct tnode *)a->n;
        t->freed = true;
        return 0;
    }
    if (a->type >= ZKL__A_WAKE)
        return 0;
    if (w->fail_next != 0) {
        int rc = w->fail_next;
        w->fail_next = 0;
        return rc;
    }
    if (w->npend == MAXP)
        return ZSYSTEMERROR;
    struct pend *p = &w->pend[w->npend++];
    p->type = a->type;
    p->letter = letter;
    p->j = a->j;
    p->slot = a->slot;
    snprintf(p->path, sizeof p->path, "%s", a->path ? a->path : "");
    return ZOK;
}

static bool refuse(void *ctx)
{
    struct world *w = ctx;
    return w->nomem > 0 && --w->nomem == 0;
}

/* ---- commands ------------------------------------------------------------------ */

static int code_of(const char *s)
{
    static const struct {
        const char *name;
        int code;
    } codes[] = {{"ok", ZOK},           {"NONODE", ZNONODE},     {"NOAUTH", ZNOAUTH},
                 {"CONNLOSS", ZCONNECTIONLOSS}, {"EXPIRED", ZSESSIONEXPIRED},
                 {"CLOSING", ZCLOSING}, {"NODEEXISTS", ZNODEEXISTS}, {"BADVERSION", ZBADVERSION},
                 {"INVALIDACL", ZINVALIDACL}, {"MOVED", ZSESSIONMOVED},
                 {"TIMEOUT", ZOPERATIONTIMEOUT}, {"APIERROR", ZAPIERROR},
                 {"MARSHALLING", ZMARSHALLINGERROR}, {"INVALIDSTATE", ZINVALIDSTATE}};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        if (strcmp(codes[i].name, s) == 0)
            return codes[i].code;
    return 1; /* unknown: no ZooKeeper code is 1 */
}

static int err_of(const char *s)
{
    if (strcmp(s, "0") == 0)
        return 0;
    if (strcmp(s, "1") == 0)
        return 1;
    for (int e = -1; e > -64; e--)
        if (strcmp(zkl_err_name(e), s[0] == 'Z' ? s + 4 : s) == 0)
            return e;
    return 99;
}

static const char *const state_names[ZKL__N_COUNT] = {
    "NEW", "CREATING", "RECOVER", "QUEUED", "HELD", "RELEASING", "DELETING", "BACKOFF", "LOST",
    "GONE"};

static const zkl__policy *policy_of(const char *s)
{
    if (strcmp(s, "lock") == 0)
        return &zkl__lock_policy;
    if (strcmp(s, "read") == 0)
        return &zkl__read_policy;
    if (strcmp(s, "write") == 0)
        return &zkl__write_policy;
    if (strcmp(s, "gate") == 0)
        return &zkl__gate_policy;
    if (strcmp(s, "lease") == 0)
        return &zkl__lease_policy;
    return NULL;
}

static bool cmd_node(struct world *w, char **tok, int nt)
{
    int i = tok[1][0] - 'A';
    const zkl__policy *pol = nt > 2 ? policy_of(tok[2]) : NULL;
    if (i < 0 || i >= MAXN || w->nodes[i] || pol == NULL)
        return failf(w, "bad node command");
    struct tnode *t = calloc(1, sizeof *t);
    char kind[40] = "", fixed[11] = "";
    zkl__cnode_opts o = {.pol = pol, .dir = DIR};
    w->gate[i] = (struct zkl__gate_arg){1, 1};
    bool has_max = false;
    for (int k = 3; k < nt; k++) {
        if (strcmp(tok[k], "prefetch") == 0)
            o.prefetch = true;
        else if (strcmp(tok[k], "once") == 0)
            o.try_once = true;
        else if (strncmp(tok[k], "down=", 5) == 0)
            snprintf(fixed, sizeof fixed, "%010ld", atol(tok[k] + 5));
        else if (strncmp(tok[k], "max=", 4) == 0)
            w->gate[i].max = atoi(tok[k] + 4), has_max = true;
        else if (strncmp(tok[k], "need=", 5) == 0)
            w->gate[i].need = atoi(tok[k] + 5);
    }
    /* A lease takes the limit only when the script gives one. */
    if (pol == &zkl__gate_policy || (pol == &zkl__lease_policy && has_max))
        o.arg = &w->gate[i];
    if (pol == &zkl__read_policy && fixed[0]) {
        w->down_arg[i] = true;
        o.arg = &w->down_arg[i];
        o.fixed_seq = fixed;
    }
    if (pol == &zkl__lease_policy && w->gate[i].need > 1) {
        zkl__lease_kind(kind, sizeof kind, w->gate[i].need);
        o.kind = kind;
    }
    if (zkl__cnode_init(w->k, &t->cn, &o) != 0) {
        free(t);
        return failf(w, "init failed");
    }
    t->letter = (char)('A' + i);
    w->nodes[i] = t;
    return true;
}

/* The oldest pending request of `letter` of type `type` (slot -1: any). */
static struct pend *take(struct world *w, char letter, enum zkl__act_type type, int slot,
                         struct pend *out)
{
    for (size_t i = 0; i < w->npend; i++) {
        struct pend *p = &w->pend[i];
        if (p->letter == letter && p->type == type && (slot < 0 || p->slot == slot)) {
            *out = *p;
            memmove(p, p + 1, (w->npend - i - 1) * sizeof *p);
            w->npend--;
            return out;
        }
    }
    return NULL;
}

/* The listing's names (freed with kids_free). */
static bool names_of(struct world *w, char **tok, int from, int nt, struct String_vector *kids)
{
    kids->count = 0;
    kids->data = calloc((size_t)(nt > from ? nt - from : 1), sizeof *kids->data);
    for (int k = from; k < nt; k++) {
        char name[ZKL__MAX_PATH];
        if (!make_name(w, tok[k], name, sizeof name))
            return failf(w, "bad name %s", tok[k]);
        kids->data[kids->count++] = strdup(name);
    }
    return true;
}

static void kids_free(struct String_vector *kids)
{
    for (int i = 0; i < kids->count; i++)
        free(kids->data[i]);
    free(kids->data);
}

static bool answer(struct world *w, char **tok, int nt)
{
    static const struct {
        const char *cmd;
        enum zkl__act_type act;
        enum zkl__ev_type ev;
    } map[] = {
        {"create", ZKL__A_CREATE, ZKL__E_CREATED}, {"parent", ZKL__A_PARENT, ZKL__E_PARENT},
        {"list", ZKL__A_LIST, ZKL__E_LISTED},      {"sync", ZKL__A_SYNC, ZKL__E_SYNCED},
        {"ahead", ZKL__A_WATCH_AHEAD, ZKL__E_AHEAD}, {"member", ZKL__A_WATCH_MEMBER, ZKL__E_MEMBER},
        {"kids", ZKL__A_WATCH_KIDS, ZKL__E_KIDS},  {"own", ZKL__A_WATCH_OWN, ZKL__E_OWN},
        {"owndata", ZKL__A_READ_OWN, ZKL__E_OWN_DATA}, {"found", ZKL__A_FIND, ZKL__E_FOUND},
        {"dir", ZKL__A_WATCH_DIR, ZKL__E_DIR},     {"delete", ZKL__A_DELETE, ZKL__E_DELETED},
    };
    size_t m = 0;
    while (m < sizeof map / sizeof map[0] && strcmp(map[m].cmd, tok[0]) != 0)
        m++;
    if (m == sizeof map / sizeof map[0] || nt < 2)
        return failf(w, "unknown command %s", tok[0]);
    char letter = tok[1][0];
    int at = 2, slot = -1;
    if (map[m].act == ZKL__A_WATCH_AHEAD && nt > 3)
        slot = atoi(tok[at++]);
    struct pend p;
    if (take(w, letter, map[m].act, slot, &p) == NULL)
        return failf(w, "no %s of %c pending", tok[0], letter);
    zkl__event ev = {.type = map[m].ev, .rc = nt > at ? code_of(tok[at]) : ZOK, .now = w->now,
                     .slot = p.slot};
    at++;
    char created[ZKL__MAX_PATH];
    struct String_vector kids = {0, NULL};
    if (ev.type == ZKL__E_CREATED && ev.rc == ZOK) {
        struct tnode *t = node_of(w, letter);
        char uuid[37];
        zkl__uuid_text(t->cn.uuid, uuid);
        long seq = nt > at ? atol(tok[at]) : 0;
        /* the name the create asked for, with the server's sequence */
        const char *base = strrchr(p.path, '/') + 1;
        if (nt > at && strcmp(tok[at], "raw") == 0)
            snprintf(created, sizeof created, "%snot-a-sequence", base);
        else if (t->cn.side && t->cn.side->fixed_seq[0])
            snprintf(created, sizeof created, "%s", base);
        else
            snprintf(created, sizeof created, "%s%010ld", base, seq);
        ev.name = created;
        ev.czxid = 1000 + seq;
    }
    if ((ev.type == ZKL__E_LISTED || ev.type == ZKL__E_KIDS) && ev.rc == ZOK &&
        !names_of(w, tok, at, nt, &kids)) {
        kids_free(&kids);
        return false;
    }
    if (ev.type == ZKL__E_OWN || ev.type == ZKL__E_OWN_DATA)
        ev.version = nt > at ? atoi(tok[nt - 1]) : 0;
    if (ev.type == ZKL__E_OWN_DATA && nt > at) {
        ev.data = tok[at];
        ev.len = (int)strlen(tok[at]);
    }
    if (ev.type == ZKL__E_FOUND)
        ev.owner = nt > at && strcmp(tok[at], "other") == 0 ? w->sid + 1 : w->sid;
    if (ev.rc == ZOK)
        ev.kids = &kids;
    if (p.j != NULL) {
        zkl__joint_on(p.j, ev.rc, ev.rc == ZOK ? &kids : NULL, w->now);
    } else {
        struct tnode *t = node_of(w, letter);
        zkl__cnode_on(&t->cn, &ev);
    }
    kids_free(&kids);
    return true;
}

static bool expect(struct world *w, char **tok, int nt)
{
    char want[4096] = "";
    size_t len = 0;
    for (int k = 1; k < nt; k++) {
        if (strcmp(tok[k], "-") == 0)
            continue;
        len += (size_t)snprintf(want + len, sizeof want - len, "%s%s", len ? " " : "", tok[k]);
    }
    bool ok = strcmp(want, w->log) == 0;
    if (!ok)
        failf(w, "expected \"%s\", got \"%s\"", want, w->log);
    w->loglen = 0;
    w->log[0] = '\0';
    return ok;
}

static bool caller(struct world *w, char **tok, int nt)
{
    struct tnode *t = nt > 1 ? node_of(w, tok[1][0]) : NULL;
    if (t == NULL || t->freed)
        return failf(w, "no node %s", nt > 1 ? tok[1] : "?");
    zkl__event ev = {.now = w->now};
    if (strcmp(tok[0], "start") == 0) {
        zkl__cnode_start(&t->cn, w->now);
        return true;
    }
    if (strcmp(tok[0], "leave") == 0)
        ev.type = ZKL__E_LEAVE;
    else if (strcmp(tok[0], "release") == 0)
        ev.type = ZKL__E_RELEASE;
    else if (strcmp(tok[0], "taken") == 0)
        ev.type = ZKL__E_TAKEN;
    else
        ev.type = ZKL__E_DETACH;
    zkl__cnode_on(&t->cn, &ev);
    return true;
}

static bool check(struct world *w, char **tok, int nt)
{
    struct tnode *t = nt > 1 ? node_of(w, tok[1][0]) : NULL;
    if (t == NULL)
        return failf(w, "no node %s", nt > 1 ? tok[1] : "?");
    if (strcmp(tok[0], "freed") == 0)
        return t->freed ? true : failf(w, "%c not freed", t->letter);
    if (t->freed)
        return failf(w, "%c was freed", t->letter);
    if (strcmp(tok[0], "state") == 0) {
        const char *have = state_names[t->cn.st];
        return nt > 2 && strcmp(have, tok[2]) == 0 ? true
                                                    : failf(w, "%c is %s", t->letter, have);
    }
    if (strcmp(tok[0], "ownstate") == 0) {
        const char *have = core_script_own_states[t->cn.own];
        return nt > 2 && strcmp(have, tok[2]) == 0 ? true
                                                    : failf(w, "%c's own watch is %s", t->letter,
                                                            have);
    }
    if (strcmp(tok[0], "reading") == 0) {
        const char *have = core_script_reading_states[t->cn.reading];
        return nt > 2 && strcmp(have, tok[2]) == 0 ? true
                                                    : failf(w, "%c's reading is %s", t->letter,
                                                            have);
    }
    if (strcmp(tok[0], "armed") == 0) {
        int slot = nt > 2 ? atoi(tok[2]) & 1 : 0;
        const char *have = core_script_armed_states[t->cn.armed[slot]];
        return nt > 3 && strcmp(have, tok[3]) == 0
                   ? true
                   : failf(w, "%c's watch %d is %s", t->letter, slot, have);
    }
    if (strcmp(tok[0], "err") == 0) {
        int want = nt > 2 ? err_of(tok[2]) : 99;
        return t->cn.err == want ? true : failf(w, "%c err %d", t->letter, t->cn.err);
    }
    if (strcmp(tok[0], "pending") == 0) {
        unsigned want = nt > 2 ? (unsigned)atoi(tok[2]) : 0;
        return t->cn.refs == want ? true : failf(w, "%c has %u answers due", t->letter, t->cn.refs);
    }
    /* verdict */
    zkl__wait_view v = {0};
    for (int k = 3; k < nt; k++) {
        if (strcmp(tok[k], "cancelled") == 0)
            v.cancelled = true;
        else if (strcmp(tok[k], "past") == 0)
            v.deadline_past = true;
        else if (strcmp(tok[k], "client") == 0)
            v.client_cancel = true;
    }
    int have = zkl__verdict(&t->cn, &v), want = nt > 2 ? err_of(tok[2]) : 99;
    return have == want ? true : failf(w, "%c verdict %d (%s)", t->letter, have,
                                       have < 0 ? zkl_err_name(have) : "-");
}

/* A move the engine would make only by a bug of its own: of the node's
 * state (force), of the watch on its own node (forceown), of its listing
 * (forcelisting), of how it reads the nodes ahead (forcereading), of its
 * watch on another's node (forcearmed A <slot> ON). */
static bool force(struct world *w, char **tok, int nt)
{
    static const struct {
        const char *cmd;
        int count;
        const char *const *names;
    } kinds[] = {{"force", ZKL__N_COUNT, state_names},
                 {"forceown", ZKL__OWN_COUNT, core_script_own_states},
                 {"forcelisting", ZKL__L_COUNT, core_script_listing_states},
                 {"forcereading", ZKL__READING_COUNT, core_script_reading_states},
                 {"forcearmed", ZKL__ARM_COUNT, core_script_armed_states}};
    int kind = 0, nk = (int)(sizeof kinds / sizeof kinds[0]);
    while (kind < nk && strcmp(kinds[kind].cmd, tok[0]) != 0)
        kind++;
    int at = kind == nk - 1 ? 3 : 2, to = 0; /* forcearmed names a slot first */
    struct tnode *t = kind < nk && nt > at ? node_of(w, tok[1][0]) : NULL;
    while (t != NULL && to < kinds[kind].count && strcmp(kinds[kind].names[to], tok[at]) != 0)
        to++;
    if (t == NULL || to == kinds[kind].count)
        return failf(w, "bad %s", tok[0]);
    switch (kind) {
    case 0:
        zkl__cnode_move(&t->cn, (enum zkl__nstate)to);
        break;
    case 1:
        zkl__cnode_own(&t->cn, (enum zkl__own)to);
        break;
    case 2:
        zkl__cnode_listing(&t->cn, (enum zkl__listing)to);
        break;
    case 3:
        zkl__cnode_reading(&t->cn, (enum zkl__reading)to);
        break;
    default:
        zkl__cnode_armed(&t->cn, &t->cn.armed[atoi(tok[2]) & 1], (enum zkl__armed)to);
        break;
    }
    return true;
}

static bool world_event(struct world *w, char **tok, int nt)
{
    if (strcmp(tok[0], "down") == 0) {
        zkl__core_connection(w->k, false, w->now);
    } else if (strcmp(tok[0], "up") == 0) {
        if (w->sid == 0)
            w->sid = SID + (int64_t)w->gen;
        zkl__core_session(w->k, w->gen, w->sid, false, w->now);
        zkl__core_connection(w->k, true, w->now);
    } else if (strcmp(tok[0], "expire") == 0) {
        w->gen++;
        w->sid = 0;
        zkl__core_session(w->k, w->gen, 0, false, w->now);
        zkl__core_connection(w->k, false, w->now);
    } else if (strcmp(tok[0], "cancel") == 0) {
        zkl__core_cancel(w->k);
    } else if (strcmp(tok[0], "close") == 0) {
        zkl__core_session(w->k, w->gen, w->sid, true, w->now);
    } else if (strcmp(tok[0], "wait") == 0) {
        w->now += (int64_t)(nt > 1 ? atol(tok[1]) : 0) * 1000000;
        zkl__core_tick(w->k, w->now);
    } else if (strcmp(tok[0], "maxreq") == 0) {
        zkl__core_set_max_request(w->k, nt > 1 ? atoi(tok[1]) : 0xfffff);
    } else if (strcmp(tok[0], "nomem") == 0) {
        w->nomem = nt > 1 ? atoi(tok[1]) : 1;
    } else if (strcmp(tok[0], "fail") == 0) {
        w->fail_next = nt > 1 ? code_of(tok[1]) : ZCONNECTIONLOSS;
    } else if (strncmp(tok[0], "force", 5) == 0) {
        return force(w, tok, nt);
    } else {
        /* a watch event: deleted / changed <name>, child */
        char name[ZKL__MAX_PATH], path[ZKL__MAX_PATH + 96];
        int type = strcmp(tok[0], "deleted") == 0   ? ZKL__WT_DELETED
                   : strcmp(tok[0], "changed") == 0 ? ZKL__WT_CHANGED
                   : strcmp(tok[0], "child") == 0   ? ZKL__WT_CHILD
                                                    : 0;
        if (type == 0)
            return failf(w, "unknown command %s", tok[0]);
        if (type == ZKL__WT_CHILD || nt < 2) {
            snprintf(path, sizeof path, "%s", DIR); /* the lock path itself */
        } else {
            if (nt < 2 || !make_name(w, tok[1], name, sizeof name))
                return failf(w, "bad watch event");
            snprintf(path, sizeof path, "%s/%s", DIR, name);
        }
        zkl__core_watch_event(w->k, type, path, w->now);
    }
    return true;
}

/* ---- requests ------------------------------------------------------------------- */

static const char *const ract_names[] = {
    [ZKL__RA_STEP] = "step",       [ZKL__RA_TAKE] = "take",       [ZKL__RA_COUNT] = "count",
    [ZKL__RA_RELEASED] = "released", [ZKL__RA_LEAVE] = "leave",   [ZKL__RA_DETACH] = "detach",
    [ZKL__RA_READY] = "ready",     [ZKL__RA_UNREADY] = "unready", [ZKL__RA_TIMER] = "timer",
    [ZKL__RA_UNTIMED] = "untimed", [ZKL__RA_LOOK] = "look",       [ZKL__RA_HAND] = "hand",
};

static unsigned ractions[ZKL__RA_HAND + 1];

unsigned core_script_ractions(int type)
{
    return ractions[type];
}

static struct world *rworld; /* the world of the script running (one at a time) */

static int rsink(void *ctx, const zkl__ract *a)
{
    struct treq *q = ctx;
    struct world *w = rworld;
    ractions[a->type]++;
    char item[64];
    if (a->n != NULL && a->type == ZKL__RA_COUNT)
        snprintf(item, sizeof item, "%c:%s:%c:%s", q->letter, ract_names[a->type],
                 letter_of(w, a->n), a->rc == 0 ? "0" : zkl_err_name(a->rc));
    else if (a->n != NULL)
        snprintf(item, sizeof item, "%c:%s:%c", q->letter, ract_names[a->type], letter_of(w, a->n));
    else
        snprintf(item, sizeof item, "%c:%s", q->letter, ract_names[a->type]);
    log_item(w, item);
    zkl__event ev = {.now = w->now};
    switch (a->type) {
    case ZKL__RA_STEP:
        if (q->step_rc == 0 && q->step_next != '-') {
            struct tnode *t = node_of(w, q->step_next);
            *a->next = t ? &t->cn : NULL;
        }
        return q->step_rc;
    case ZKL__RA_TAKE:
        if (w->nomem > 0 && --w->nomem == 0)
            return ZKL_ENOMEM;
        ev.type = ZKL__E_TAKEN;
        break;
    case ZKL__RA_LEAVE:
        ev.type = ZKL__E_LEAVE;
        break;
    case ZKL__RA_DETACH:
        ev.type = ZKL__E_DETACH;
        break;
    default:
        return 0;
    }
    zkl__cnode_on(a->n, &ev);
    return 0;
}

static const char *const rstate_names[ZKL__R_COUNT] = {"PENDING", "CLEANING", "READY", "HELD",
                                                      "LOSING",  "LOST",     "DONE"};

static struct treq *req_of(struct world *w, const char *s)
{
    int i = s[0] - 'R';
    return i >= 0 && i < MAXR && s[1] == '\0' ? w->reqs[i] : NULL;
}

/* request R on A [deadline=ms] [steps] [keep] [tell]; rlook R; rdeliver R 1;
 * rcancel R 0; rrelease R ELOST; rfree R; rtake R 0; rstate R HELD; rresult R ELOST;
 * rfailed R NOAUTH 0 (the failed node's ZooKeeper code and listing's length);
 * rdue R 500 | rdue R none (when a caller waiting on it looks again, from now);
 * step R next=B | step R deliver | step R wait | step R EMISMATCH */
static bool request_cmd(struct world *w, char **tok, int nt)
{
    if (strcmp(tok[0], "request") == 0) {
        int i = nt > 3 ? tok[1][0] - 'R' : -1;
        struct tnode *t = nt > 3 ? node_of(w, tok[3][0]) : NULL;
        if (i < 0 || i >= MAXR || w->reqs[i] || t == NULL)
            return failf(w, "bad request command");
        struct treq *q = calloc(1, sizeof *q);
        int64_t deadline = ZKL__NO_DEADLINE;
        bool steps = false, keep = false, tell = false;
        for (int k = 4; k < nt; k++) {
            if (strncmp(tok[k], "deadline=", 9) == 0)
                deadline = w->now + (int64_t)atol(tok[k] + 9) * 1000000;
            steps |= strcmp(tok[k], "steps") == 0;
            keep |= strcmp(tok[k], "keep") == 0;
            tell |= strcmp(tok[k], "tell") == 0;
        }
        q->letter = tok[1][0];
        q->step_next = '-';
        zkl__areq_init(&q->m, &t->cn, q->kept, deadline, steps, keep, tell);
        w->reqs[i] = q;
        return true;
    }
    struct treq *q = nt > 1 ? req_of(w, tok[1]) : NULL;
    if (q == NULL)
        return failf(w, "no request %s", nt > 1 ? tok[1] : "?");
    if (strcmp(tok[0], "step") == 0) {
        const char *v = nt > 2 ? tok[2] : "deliver";
        q->step_next = '-';
        if (strncmp(v, "next=", 5) == 0) {
            q->step_rc = 0;
            q->step_next = v[5];
        } else if (strcmp(v, "deliver") == 0) {
            q->step_rc = 0;
        } else if (strcmp(v, "wait") == 0) {
            q->step_rc = 1;
        } else {
            q->step_rc = err_of(v);
        }
        return true;
    }
    if (strcmp(tok[0], "rstate") == 0) {
        const char *have = rstate_names[q->m.st];
        return nt > 2 && strcmp(have, tok[2]) == 0 ? true : failf(w, "%s is %s", tok[1], have);
    }
    if (strcmp(tok[0], "runmaking") == 0) { /* the front's parent deletes out (1) or not */
        q->m.unmaking = nt > 2 && strcmp(tok[2], "1") == 0;
        return true;
    }
    if (strcmp(tok[0], "rfailed") == 0) { /* what a failure keeps for its detail text */
        int zk = nt > 2 ? code_of(tok[2]) : 1;
        long qlen = nt > 3 ? atol(tok[3]) : 0;
        return q->m.zk_rc == zk && (long)q->m.qlen == qlen
                   ? true
                   : failf(w, "%s failed with %d, %ld listed", tok[1], q->m.zk_rc, (long)q->m.qlen);
    }
    if (strcmp(tok[0], "rdue") == 0) {
        int64_t due = zkl__areq_due(&q->m, w->now);
        bool none = nt > 2 && strcmp(tok[2], "none") == 0;
        int64_t want = none ? ZKL__NO_DEADLINE
                            : w->now + (int64_t)atol(nt > 2 ? tok[2] : "-1") * 1000000;
        if (due == want)
            return true;
        if (due == ZKL__NO_DEADLINE)
            return failf(w, "%s is due never", tok[1]);
        return failf(w, "%s is due in %lld ms", tok[1], (long long)((due - w->now) / 1000000));
    }
    if (strcmp(tok[0], "rresult") == 0) {
        int want = nt > 2 ? err_of(tok[2]) : 99;
        return q->m.result == want ? true : failf(w, "%s result %d", tok[1], q->m.result);
    }
    static const struct {
        const char *cmd;
        enum zkl__rev_type ev;
    } evs[] = {{"rlook", ZKL__RE_LOOK},       {"rdeliver", ZKL__RE_DELIVER},
               {"rcancel", ZKL__RE_CANCEL},   {"rrelease", ZKL__RE_RELEASE},
               {"rfree", ZKL__RE_FREE},       {"rtake", ZKL__RE_TAKE}};
    for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++) {
        if (strcmp(evs[i].cmd, tok[0]) != 0)
            continue;
        rworld = w;
        int rc = zkl__areq_on(&q->m, evs[i].ev, w->now, rsink, q);
        if (nt > 2 && rc != err_of(tok[2]))
            return failf(w, "%s %s returned %d", tok[0], tok[1], rc);
        return true;
    }
    return failf(w, "unknown command %s", tok[0]);
}

static bool run_line(struct world *w, char *line)
{
    char *tok[200];
    int nt = 0;
    for (char *s = strtok(line, " \t"); s && nt < 200; s = strtok(NULL, " \t"))
        tok[nt++] = s;
    if (nt == 0 || tok[0][0] == '#')
        return true;
    if (strcmp(tok[0], "node") == 0)
        return nt > 2 ? cmd_node(w, tok, nt) : failf(w, "bad node");
    if (strcmp(tok[0], "request") == 0 || tok[0][0] == 'r' || strcmp(tok[0], "step") == 0)
        if (strcmp(tok[0], "release") != 0 && strcmp(tok[0], "reading") != 0)
            return request_cmd(w, tok, nt);
    if (strcmp(tok[0], "expect") == 0)
        return expect(w, tok, nt);
    if (strcmp(tok[0], "start") == 0 || strcmp(tok[0], "leave") == 0 ||
        strcmp(tok[0], "release") == 0 || strcmp(tok[0], "taken") == 0 ||
        strcmp(tok[0], "detach") == 0)
        return caller(w, tok, nt);
    if (strcmp(tok[0], "state") == 0 || strcmp(tok[0], "err") == 0 ||
        strcmp(tok[0], "verdict") == 0 || strcmp(tok[0], "freed") == 0 ||
        strcmp(tok[0], "pending") == 0 || strcmp(tok[0], "ownstate") == 0 ||
        strcmp(tok[0], "reading") == 0 || strcmp(tok[0], "armed") == 0)
        return check(w, tok, nt);
    if (strchr("ABCDEFGH", tok[1 < nt ? 1 : 0][0]) && nt > 1 && tok[1][1] == '\0' &&
        strncmp(tok[0], "force", 5) != 0)
        return answer(w, tok, nt);
    return world_event(w, tok, nt);
}

bool core_script_run(const char *script, char *why, size_t whylen)
{
    struct world w = {.why = why, .whylen = whylen, .gen = 1, .sid = SID, .now = 1000000000};
    uint64_t seed[4] = {1, 2, 3, 4};
    w.k = zkl__core_new(sink, &w, seed);
    zkl__core_set_fail(w.k, refuse, &w);
    zkl__core_set_max_request(w.k, 0xfffff);
    zkl__core_session(w.k, w.gen, w.sid, false, w.now);
    zkl__core_connection(w.k, true, w.now);
    char *copy = strdup(script);
    bool ok = true;
    char *save = NULL;
    for (char *line = strtok_r(copy, "\n", &save); line && ok; line = strtok_r(NULL, "\n", &save)) {
        w.line++;
        ok = run_line(&w, line);
    }
    if (ok && w.loglen != 0)
        ok = failf(&w, "actions left unchecked: %s", w.log);
    for (int from = 0; from < ZKL__N_COUNT; from++)
        for (int to = 0; to < ZKL__N_COUNT; to++)
            moves[from][to] += zkl__core_moves(w.k, from, to);
    for (int from = 0; from < ZKL__R_COUNT; from++)
        for (int to = 0; to < ZKL__R_COUNT; to++)
            rmoves[from][to] += zkl__core_rmoves(w.k, from, to);
    for (int from = 0; from < ZKL__OWN_COUNT; from++)
        for (int to = 0; to < ZKL__OWN_COUNT; to++)
            omoves[from][to] += zkl__core_omoves(w.k, from, to);
    for (int from = 0; from < ZKL__L_COUNT; from++)
        for (int to = 0; to < ZKL__L_COUNT; to++)
            lmoves[from][to] += zkl__core_lmoves(w.k, from, to);
    for (int from = 0; from < ZKL__READING_COUNT; from++)
        for (int to = 0; to < ZKL__READING_COUNT; to++)
            rdmoves[from][to] += zkl__core_rdmoves(w.k, from, to);
    for (int from = 0; from < ZKL__ARM_COUNT; from++)
        for (int to = 0; to < ZKL__ARM_COUNT; to++)
            amoves[from][to] += zkl__core_amoves(w.k, from, to);
    /* Whatever is left goes with the client. */
    zkl__core_drop_nodes(w.k);
    zkl__core_free(w.k);
    for (int i = 0; i < MAXN; i++)
        free(w.nodes[i]);
    for (int i = 0; i < MAXR; i++)
        free(w.reqs[i]);
    free(copy);
    return ok;
}

/* ---- the suites' runner ------------------------------------------------------ */

static const core_case *run_cases;
static const core_table *run_table;

START_TEST(test_script)
{
    char why[512];
    bool ok = core_script_run(run_cases[_i].script, why, sizeof why);
    ck_assert_msg(ok, "%s: %s", run_cases[_i].name, why);
}
END_TEST

START_TEST(test_every_move_of_the_table_is_taken)
{
    char missing[2048] = "";
    size_t len = 0;
    for (const core_table *t = run_table; t != NULL; t = t->also)
        for (int from = 0; from < t->count; from++)
            for (int to = 0; to < t->count; to++)
                if (t->legal(from, to) && t->taken(from, to) == 0 && len < sizeof missing)
                    len += (size_t)snprintf(missing + len, sizeof missing - len, " %s->%s",
                                            t->names[from], t->names[to]);
    ck_assert_msg(len == 0, "moves never taken:%s", missing);
}
END_TEST

int core_script_main(const char *suite, const core_case *cases, int ncases,
                     const core_table *table)
{
    run_cases = cases;
    run_table = table;
    Suite *s = suite_create(suite);
    TCase *tc = tcase_create("scripts");
    tcase_add_loop_test(tc, test_script, 0, ncases);
    suite_add_tcase(s, tc);
    if (table != NULL) {
        TCase *cov = tcase_create("coverage");
        tcase_add_test(cov, test_every_move_of_the_table_is_taken);
        suite_add_tcase(s, cov);
    }
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
