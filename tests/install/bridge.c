/* Built by scripts/install-check.sh against an installed zkl, the way a
 * program that uses zkl/zookeeper.h is built:
 *   cc bridge.c $(pkg-config --cflags --libs zkl-zookeeper)
 * It keeps libzookeeper_mt's log to itself (zkl_client_opts_set_quiet_zk_log
 * with 0), then writes a node with a guarded multi-op (zoo_op_t) while it
 * holds a mutex, and reads it back through the client's own handle.
 *   ./bridge HOSTS */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <zkl/zookeeper.h>

/* libzookeeper_mt's current level (declared by its zookeeper_log.h). */
extern ZooLogLevel logLevel;

static int fail(const char *what, int rc)
{
    fprintf(stderr, "bridge: %s: %d (%s)\n", what, rc, rc < 0 ? zkl_strerror(rc) : "");
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return fail("usage: bridge HOSTS", 0);
    zoo_set_debug_level(ZOO_LOG_LEVEL_WARN);
    zkl_client_opts *o = NULL;
    zkl_client *c = NULL;
    int rc = zkl_client_opts_new(&o);
    if (rc == 0)
        rc = zkl_client_opts_set_quiet_zk_log(o, 0);
    if (rc == 0)
        rc = zkl_client_open_opts(argv[1], 10000, o, &c);
    zkl_client_opts_free(o);
    if (rc != 0)
        return fail("open", rc);
    if (logLevel != ZOO_LOG_LEVEL_WARN)
        return fail("the program's log level changed", (int)logLevel);

    char root[64], lock[96], data[96];
    snprintf(root, sizeof root, "/zkl-install-%ld", (long)getpid());
    snprintf(lock, sizeof lock, "%s/lock", root);
    snprintf(data, sizeof data, "%s/data", root);
    zhandle_t *zh = zkl_client_handle(c);
    int zrc = zoo_create(zh, root, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    if (zrc == ZOK)
        zrc = zoo_create(zh, data, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    if (zrc != ZOK)
        return fail("zoo_create", zrc);

    zkl_mutex *m = NULL;
    int ok = 0;
    rc = zkl_mutex_new(c, lock, &m);
    if (rc == 0)
        rc = zkl_mutex_acquire(m, 5000);
    if (rc == 0) {
        zoo_op_t op;
        zoo_op_result_t res;
        struct Stat st;
        zoo_set_op_init(&op, data, "held", 4, -1, &st);
        rc = zkl_mutex_guarded_multi(m, 1, &op, &res);
        int rel = zkl_mutex_release(m);
        if (rc == 0)
            rc = rel;
    }
    if (rc == 0) {
        char buf[16] = {0};
        int len = sizeof buf - 1;
        zrc = zoo_get(zh, data, 0, buf, &len, NULL);
        ok = zrc == ZOK && len == 4 && memcmp(buf, "held", 4) == 0;
    }
    zkl_mutex_free(m);
    zoo_delete(zh, data, -1);
    zoo_delete(zh, lock, -1);
    zoo_delete(zh, root, -1);
    zkl_client_close(c);
    if (rc != 0)
        return fail("lock", rc);
    if (!ok)
        return fail("the guarded write did not land", zrc);
    printf("bridge: guarded multi-op written, log level kept\n");
    return 0;
}
