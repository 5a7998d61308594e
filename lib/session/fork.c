/* fork(): a child inherits a copy of every client and lock object, but
 * not the threads that serve them (libzookeeper_mt's, the keeper) nor the
 * right to speak for the parent's session, whose socket it shares. So in
 * the child every call on them fails with ZKL_EFORK, and freeing them frees
 * memory only. The handlers here keep that memory whole across the fork:
 * the forking thread holds every zkl mutex while it forks. */
#include <stdlib.h>

#include "session.h"

unsigned zkl__fork_gen;

/* The handles of the parent's sessions: the child may not close them
 * (zookeeper_close would end the parent's session, or write on its
 * socket, and join threads the child does not have), but keeps them
 * reachable rather than lose them. */
static zhandle_t **kept;
static size_t nkept, capkept;

void zkl__fork_keep_handle(zhandle_t *zh)
{
    if (nkept == capkept) {
        size_t cap = capkept ? 2 * capkept : 4;
        zhandle_t **k = realloc(kept, cap * sizeof *k);
        if (k == NULL)
            return; /* only a leak of the parent's memory */
        kept = k;
        capkept = cap;
    }
    kept[nkept++] = zh;
}

/* The lock objects' part (lib/front/objects.c), set once before the first
 * object opens. */
static void (*_Atomic hook_prepare)(void), (*_Atomic hook_parent)(void),
    (*_Atomic hook_child)(void);

void zkl__fork_set_hooks(void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
    hook_child = child;
    hook_parent = parent;
    hook_prepare = prepare;
}

static void prepare(void)
{
    void (*objects)(void) = hook_prepare;
    if (objects != NULL)
        objects();
    zkl__registry_fork_prepare();
}

static void parent(void)
{
    zkl__registry_fork_parent();
    void (*objects)(void) = hook_parent;
    if (objects != NULL)
        objects();
}

static void child(void)
{
    zkl__fork_gen++; /* from here on, every client made before is the parent's */
    zkl__registry_fork_child();
    void (*objects)(void) = hook_child;
    if (objects != NULL)
        objects();
}

static void install(void)
{
    pthread_atfork(prepare, parent, child);
}

void zkl__fork_watch(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, install);
}
