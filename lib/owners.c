/* Who holds what in this process: per-thread hold counts of the reentrant
 * locks. A short list per lock object: a lock has few holding threads. */
#include <stdlib.h>

#include "internal.h"

int zkl__owners_init(zkl__owners *o)
{
    o->head = NULL;
    return pthread_mutex_init(&o->mu, NULL) == 0 ? 0 : ZKL_ESYS;
}

void zkl__owners_destroy(zkl__owners *o)
{
    while (o->head) {
        zkl__hold *h = o->head;
        o->head = h->next;
        free(h);
    }
    pthread_mutex_destroy(&o->mu);
}

zkl__hold *zkl__owners_mine(zkl__owners *o)
{
    pthread_t me = pthread_self();
    for (zkl__hold *h = o->head; h; h = h->next)
        if (pthread_equal(h->thread, me))
            return h;
    return NULL;
}

int zkl__owners_add(zkl__owners *o, zkl__node *n)
{
    zkl__hold *h = malloc(sizeof *h);
    if (h == NULL)
        return ZKL_ENOMEM;
    h->thread = pthread_self();
    h->count = 1;
    h->node = n;
    h->next = o->head;
    o->head = h;
    return 0;
}

void zkl__owners_remove(zkl__owners *o, zkl__hold *h)
{
    for (zkl__hold **p = &o->head; *p; p = &(*p)->next) {
        if (*p == h) {
            *p = h->next;
            free(h);
            return;
        }
    }
}
