/* Lock options: what a lock object is made with (zkl_lock_opts). */
#include <stdlib.h>
#include <string.h>

#include "front.h"
#include "kit.h"

int zkl_lock_opts_new(zkl_lock_opts **out)
{
    int rc;
    zkl_lock_opts *o = zkl__new_zeroed(out != NULL, sizeof *o, &rc);
    if (o == NULL)
        return rc;
    *out = o;
    return 0;
}

void zkl_lock_opts_free(zkl_lock_opts *o)
{
    if (o != NULL)
        free(o->id);
    free(o);
}

int zkl_lock_opts_set_prefetch(zkl_lock_opts *o, int on)
{
    if (o == NULL || (on != 0 && on != 1))
        return ZKL_EINVAL;
    o->prefetch = on == 1;
    return 0;
}

int zkl_lock_opts_set_id(zkl_lock_opts *o, const char *id)
{
    if (o == NULL || (id != NULL && strlen(id) > ZKL__ID_MAX))
        return ZKL_EINVAL;
    char *copy = NULL;
    if (id != NULL && (copy = strdup(id)) == NULL)
        return ZKL_ENOMEM;
    free(o->id);
    o->id = copy;
    return 0;
}
