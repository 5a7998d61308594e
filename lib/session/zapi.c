/* The seam's real side: libzookeeper_mt's own functions, in the table
 * (lib/session/zapi.h). The only file of the library that calls them. */
#include "config.h" /* HAVE_ZOOKEEPER_INIT_SSL, HAVE_ZOOKEEPER_INIT_SASL */

/* zookeeper.h declares its TLS and SASL handles only when told these. */
#ifdef HAVE_ZOOKEEPER_INIT_SASL
#define HAVE_CYRUS_SASL_H 1
#endif
#ifdef HAVE_ZOOKEEPER_INIT_SSL
#define HAVE_OPENSSL_H 1
#endif

#include "zapi.h"

const struct zkl__zapi zkl__zapi_real = {
    .init = zookeeper_init,
#ifdef HAVE_ZOOKEEPER_INIT_SSL
    .init_ssl = zookeeper_init_ssl,
#endif
#ifdef HAVE_ZOOKEEPER_INIT_SASL
    .init_sasl = zookeeper_init_sasl,
#endif
    .close = zookeeper_close,
    .state = zoo_state,
    .client_id = zoo_client_id,
    .recv_timeout = zoo_recv_timeout,
    .set_watcher = zoo_set_watcher,
    .set_servers_resolution_delay = zoo_set_servers_resolution_delay,
    .add_auth = zoo_add_auth,
    .set_debug_level = zoo_set_debug_level,
    .set_log_stream = zoo_set_log_stream,
    .acreate = zoo_acreate,
    .acreate2 = zoo_acreate2,
    .adelete = zoo_adelete,
    .aget = zoo_aget,
    .awget = zoo_awget,
    .aget_children = zoo_aget_children,
    .awget_children = zoo_awget_children,
    .awexists = zoo_awexists,
    .aset = zoo_aset,
    .async = zoo_async,
    .exists = zoo_exists,
    .get = zoo_get,
    .set = zoo_set,
    .get_children = zoo_get_children,
    .multi = zoo_multi,
    .check_op_init = zoo_check_op_init,
    .set_op_init = zoo_set_op_init,
};
