/* The one error list (ZKL_ERRNO_MAP in zkl.h) turned into messages and names. */
#include <stdbool.h>

#include "zkl.h"

/* err's message and name; false for a code not on the list. A switch, so
 * that the compiler refuses a code listed twice. */
static bool describe(int err, const char **msg, const char **name)
{
    switch (err) {
    case ZKL_OK:
        *msg = "success", *name = "OK";
        return true;
#define ZKL__ERR_DESCRIBE(n, code, m) \
    case ZKL_##n:                     \
        *msg = m, *name = #n;         \
        return true;
        ZKL_ERRNO_MAP(ZKL__ERR_DESCRIBE)
#undef ZKL__ERR_DESCRIBE
    }
    return false;
}

const char *zkl_strerror(int err)
{
    const char *msg, *name;
    return describe(err, &msg, &name) ? msg : "unknown error";
}

const char *zkl_err_name(int err)
{
    const char *msg, *name;
    return describe(err, &msg, &name) ? name : "UNKNOWN";
}

const char *zkl_version_string(void)
{
    return ZKL_VERSION_STRING;
}
