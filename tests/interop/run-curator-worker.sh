#!/bin/sh
# run-curator-worker.sh - run the Curator lock worker (CuratorWorker.java).
#
# Usage: tests/interop/run-curator-worker.sh --servers S --path P
#            --mode mutex|read|write --iterations N
#            --counter-file F --log-file L [--hold-ms MS]
#
# All arguments are passed to CuratorWorker unchanged (see the comment at the
# top of CuratorWorker.java).  Compilation and the classpath come from
# bench/build-java.sh: the class is built on first use into a cache directory
# (set ZKL_JAVA_CACHE to put it under the build tree).  Extra JVM options can
# be given in ZKL_JAVA_OPTS, extra class path entries in ZKL_JAVA_CP.

set -eu

here=$(cd "$(dirname "$0")" && pwd)
build=$here/../../bench/build-java.sh
cp=$("$build" --classpath)
classes=$("$build" --cached "$here/CuratorWorker.java")

if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then
    java=$JAVA_HOME/bin/java
else
    java=java
fi

# shellcheck disable=SC2086  # ZKL_JAVA_OPTS is a list of options
exec "$java" ${ZKL_JAVA_OPTS:-} -cp "$classes:$cp${ZKL_JAVA_CP:+:$ZKL_JAVA_CP}" CuratorWorker "$@"
