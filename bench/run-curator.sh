#!/bin/sh
# run-curator.sh - run the Curator lock benchmark (CuratorBench.java).
#
# Usage: bench/run-curator.sh --servers HOST:PORT[,...] --workload W ...
#
# All arguments are passed to CuratorBench unchanged (see the comment at the
# top of CuratorBench.java).  The program is compiled on first use into a
# cache directory (see build-java.sh --cached; set ZKL_JAVA_CACHE to put it
# under the build tree).  Extra JVM options can be given in ZKL_JAVA_OPTS.

set -eu

here=$(cd "$(dirname "$0")" && pwd)
cp=$("$here/build-java.sh" --classpath)
classes=$("$here/build-java.sh" --cached "$here/CuratorBench.java")

if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then
    java=$JAVA_HOME/bin/java
else
    java=java
fi

# shellcheck disable=SC2086  # ZKL_JAVA_OPTS is a list of options
exec "$java" ${ZKL_JAVA_OPTS:-} \
    -cp "$classes:$cp" CuratorBench "$@"
