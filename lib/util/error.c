/* The one error list (ZKL_ERRNO_MAP in zkl.h) turned into messages and names. */
#include "zkl.h"

const char *zkl_strerror(int err)
{
    switch (err) {
    case ZKL_OK:
        return "success";
#define ZKL__ERR_MSG(name, code, msg) \
    case ZKL_##name:                  \
        return msg;
        ZKL_ERRNO_MAP(ZKL__ERR_MSG)
#undef ZKL__ERR_MSG
    }
    return "unknown error";
}

const char *zkl_err_name(int err)
{
    switch (err) {
    case ZKL_OK:
        return "OK";
#define ZKL__ERR_NAME(name, code, msg) \
    case ZKL_##name:                   \
        return #name;
        ZKL_ERRNO_MAP(ZKL__ERR_NAME)
#undef ZKL__ERR_NAME
    }
    return "UNKNOWN";
}

const char *zkl_version_string(void)
{
    return ZKL_VERSION_STRING;
}
