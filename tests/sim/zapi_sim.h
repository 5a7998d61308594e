/* The model's zapi (tests/sim/zapi_sim.c): lib/session/zapi.h's table over
 * the model of ZooKeeper, for real zkl clients in the simulation. One world
 * at a time, one thread. */
#ifndef ZAPI_SIM_H
#define ZAPI_SIM_H

#include "session.h"
#include "zsim.h"

/* The table, for zkl__client_opts_set_zapi. */
extern const struct zkl__zapi zapi_sim;

/* Handles made from now on are sessions of world w (forgetting those of
 * the world before), until zapi_sim_end. */
void zapi_sim_begin(zsim_world *w);
void zapi_sim_end(void);
/* Hand an item the world delivered (zsim_step) to the library: the
 * completion of its request, or its watchers. */
void zapi_sim_item(const struct zsim_item *it);
/* The model's session behind a handle of this table. */
zsim_session *zapi_sim_session(zhandle_t *zh);
/* The synchronous calls (exists, get, set, get_children, multi) send their
 * request and call step(zh) until its answer came: step must move the
 * world (zsim_step, items to zapi_sim_item) without waiting on a lock the
 * calling thread may hold (the client of zh's handle lock among them).
 * NULL (the default): ZSYSTEMERROR. */
void zapi_sim_set_stepper(void (*step)(zhandle_t *zh));
/* Deletes handle zh sends of nodes under dir are refused (ZNOAUTH, as an
 * ACL without DELETE would refuse them) from now on, until called again
 * with NULL. */
void zapi_sim_refuse_deletes(zhandle_t *zh, const char *dir);
/* fn(zh, path, watch) is called for every request a handle sends, as it
 * is sent (a multi's: its first op's path; watch: an exists or a get that
 * sets a data watch on path); NULL: none. */
void zapi_sim_set_observer(void (*fn)(zhandle_t *zh, const char *path, bool watch));
/* Requests sent whose completion has not been called yet. */
size_t zapi_sim_pending(void);

#endif
