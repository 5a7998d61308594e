#!/bin/sh
# Run one test program against ZooKeeper: the one a surrounding run named in
# ZKL_TEST_HOSTS, or a private standalone one for this program alone.
if [ -n "${ZKL_TEST_HOSTS:-}" ]; then
    exec "$@"
fi
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/with-zk.sh" -- "$@"
