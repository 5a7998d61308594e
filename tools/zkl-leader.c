/* zkl leader: who leads the election at PATH, as Curator's getLeader()
 * names it (the id in the first candidate's node), for zkl and Curator
 * candidates alike; --watch prints one line per change of leader until a
 * signal. Public API only (and the client's ZooKeeper handle, for the
 * watch). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "lockrun.h"
#include "zkl/zookeeper.h"

/* The leader's node name (empty: none), for telling changes. */
struct leader {
    char node[256];
};

/* Print the leader of `path` (a line of text or of JSON) and keep its node
 * in *now. 0, or a ZKL_E... code. */
static int show(zkl_client *c, const char *path, bool json, struct leader *now, bool print)
{
    zkl_participant *ps;
    size_t n;
    int err = zkl_participants_list(c, path, &ps, &n);
    if (err != 0)
        return err;
    /* Holders come first. A latch node that leads goes before any other
     * holder: a foreign child (a "lock-" node, say) first by sequence
     * holds as a mutex's node would, but Curator orders it behind every
     * latch node (recipes/latch.c). */
    const zkl_participant *p = NULL;
    for (size_t i = 0; i < n && ps[i].holds; i++)
        if (p == NULL || (strcmp(p->kind, "latch-") != 0 && strcmp(ps[i].kind, "latch-") == 0))
            p = &ps[i];
    struct leader was = *now;
    snprintf(now->node, sizeof now->node, "%s", p ? p->node : "");
    if (print && strcmp(was.node, now->node) != 0) {
        if (json) {
            printf("{\"path\": ");
            cli_json_str(stdout, path, strlen(path));
            printf(", \"leader\": ");
            if (p == NULL) {
                printf("null");
            } else {
                printf("{\"id\": ");
                if (!p->readable)
                    printf("null");
                else
                    cli_json_str(stdout, p->owner, p->owner_len);
                printf(", \"node\": ");
                cli_json_str(stdout, p->node, strlen(p->node));
                printf(", \"token\": %lld, \"session\": \"0x%llx\"}", (long long)p->token,
                       (unsigned long long)p->session);
            }
            printf("}\n");
        } else if (p != NULL) {
            char id[600] = "(unreadable: the node's ACL refuses its data)";
            if (p->readable)
                cli_printable(p->owner, id, sizeof id);
            printf("%s\n", id);
        } else {
            printf("(no leader)\n");
        }
    }
    zkl_participants_free(ps, n);
    return 0;
}

static void on_watch(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh, (void)type, (void)state, (void)path;
    loop_notify(*(int *)ctx, LOOP_NEWS);
}

/* Arm a watch that fires on the next change of the path's children (or
 * on its creation): 0, or a ZKL_E... code. The handle is borrowed, as the
 * client's keeper closes it when a session ends, which --watch outlives. */
static int arm(zkl_client *c, const char *path, int *wfd)
{
    zhandle_t *zh;
    int err = zkl_client_handle_borrow(c, &zh);
    if (err != 0)
        return err;
    int rc;
    for (;;) {
        struct String_vector kids = {0, NULL};
        rc = zoo_wget_children(zh, path, on_watch, wfd, &kids);
        deallocate_String_vector(&kids);
        if (rc != ZNONODE)
            break;
        /* No path yet: watch for its creation. If it was created since the
         * listing, the exists call sets a watch on its data, which a new
         * child does not fire: watch its children then, as above. */
        struct Stat st;
        rc = zoo_wexists(zh, path, on_watch, wfd, &st);
        if (rc != ZOK) {
            rc = rc == ZNONODE ? ZOK : rc;
            break;
        }
    }
    zkl_client_handle_return(c, zh);
    return rc == ZOK ? 0 : rc == ZNOAUTH ? ZKL_ENOAUTH : ZKL_ECONNLOSS;
}

/* Print each change of leader until a signal (loop l opened before the
 * client's threads started, so that they do not take the signals). */
static int watch(zkl_client *c, const char *path, bool json, struct loop *lp)
{
    int rc = 0;
    struct leader now = {"-"}; /* no node has this name: the first is news */
    int err = zkl_client_add_listener(c, loop_on_state, &lp->wfd);
    while (err == 0) {
        /* Armed before the listing: a change after it fires the watch. */
        if ((err = arm(c, path, &lp->wfd)) != 0 || (err = show(c, path, json, &now, true)) != 0)
            break;
        if ((rc = cli_flush_stdout()) != 0)
            break;
        struct event ev;
        loop_next(lp, -1, &ev);
        if (ev.type == EV_SIGNAL && ev.sig != SIGCHLD)
            break;
        if (ev.type == EV_STATE && (ev.state == ZKL_STATE_LOST || ev.state == ZKL_STATE_CLOSED))
            err = ZKL_ELOST;
    }
    zkl_client_remove_listener(c, loop_on_state, &lp->wfd);
    return err != 0 ? cli_report(path, err) : rc;
}

int cli_leader(int argc, char **argv)
{
    enum { OPT_JSON = 256, OPT_SESSION, OPT_WATCH };
    static const struct option longopts[] = {
        {"json", no_argument, NULL, OPT_JSON},
        {"watch", no_argument, NULL, OPT_WATCH},
        {"servers", required_argument, NULL, 'S'},
        {"session-timeout", required_argument, NULL, OPT_SESSION},
        {"help", no_argument, NULL, 'h'},
        CLI_SECURE_LONGOPTS,
        {NULL, 0, NULL, 0},
    };
    const char *servers = NULL;
    bool json = false, watching = false;
    long session_ms = CLI_DEFAULT_SESSION_MS;
    int c, rc;
    while ((c = getopt_long(argc, argv, "S:h", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_JSON:
            json = true;
            break;
        case OPT_WATCH:
            watching = true;
            break;
        case 'S':
            servers = optarg;
            break;
        default:
            /* --session-timeout, -h, the security options; or a bad one */
            if ((rc = cli_other_option(c, OPT_SESSION, &session_ms)) >= 0)
                return rc;
        }
    }
    const char *path;
    if ((rc = cli_one_path("leader", argc, argv, optind, &path)) != 0)
        return rc;

    struct loop l;
    if (watching && (rc = loop_open(&l)) != 0)
        return rc;
    zkl_client *cl;
    rc = cli_connect(cli_servers(servers), (int)session_ms, &cl);
    if (rc == 0 && watching) {
        rc = watch(cl, path, json, &l);
        zkl_client_close(cl);
    }
    if (watching) {
        loop_close(&l);
        return rc;
    }
    if (rc != 0)
        return rc;
    struct leader now = {"-"};
    int err = show(cl, path, json, &now, true);
    zkl_client_close(cl);
    if (err != 0)
        return cli_report(path, err);
    rc = cli_flush_stdout();
    /* No leader: exit 1, as a lock that is not acquired. */
    return rc != 0 ? rc : now.node[0] == '\0' ? CLI_EXIT_CONFLICT : 0;
}
