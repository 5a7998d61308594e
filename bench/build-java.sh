#!/bin/sh
# build-java.sh - compile the Java comparison programs against the Debian
# Curator / ZooKeeper jars.
#
# Usage:
#   bench/build-java.sh OUTDIR [SOURCE.java ...]
#       Compile the sources (default: CuratorBench.java next to this script)
#       with javac into OUTDIR.
#   bench/build-java.sh --classpath
#       Print the runtime classpath (jars only, colon separated).
#   bench/build-java.sh --cached SOURCE.java ...
#       Compile into a cache directory unless an up-to-date build is already
#       there, then print that directory.  The directory name is derived from
#       a hash of the sources and the classpath, so edited sources get a fresh
#       build and concurrent callers never see a half-written directory
#       (builds go to a temporary directory that is renamed into place).
#
# Environment:
#   JAVA_JAR_DIR    directory holding the jars (default /usr/share/java)
#   JAVAC           compiler (default: $JAVA_HOME/bin/javac, else javac)
#   ZKL_JAVA_CACHE  cache root for --cached
#                   (default: ${TMPDIR:-/tmp}/zkl-java-cache-<uid>)
#
# Only jars shipped by Debian are used (libcurator-*-java 5.4,
# libzookeeper-java, libguava-java, libslf4j-java).  slf4j-nop is on the
# classpath so that ZooKeeper and Curator log nothing: the programs' stdout
# carries only their own output.

set -eu

here=$(cd "$(dirname "$0")" && pwd)
jardir=${JAVA_JAR_DIR:-/usr/share/java}

# Jars needed at compile and run time.  Debian folds failureaccess into its
# guava jar, so that one is optional.
required="curator-recipes curator-framework curator-client zookeeper
zookeeper-jute guava slf4j-api slf4j-nop"
optional="failureaccess"

cp=
for j in $required; do
    if [ ! -f "$jardir/$j.jar" ]; then
        echo "build-java.sh: missing $jardir/$j.jar" >&2
        exit 1
    fi
    cp=${cp:+$cp:}$jardir/$j.jar
done
for j in $optional; do
    if [ -f "$jardir/$j.jar" ]; then
        cp=$cp:$jardir/$j.jar
    fi
done

if [ -n "${JAVAC:-}" ]; then
    javac=$JAVAC
elif [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/javac" ]; then
    javac=$JAVA_HOME/bin/javac
else
    javac=javac
fi

compile() {
    # compile OUTDIR SOURCE...
    _out=$1
    shift
    mkdir -p "$_out"
    "$javac" -nowarn -encoding UTF-8 --release 11 -cp "$cp" -d "$_out" "$@"
}

case "${1:-}" in
--classpath)
    echo "$cp"
    exit 0
    ;;
--cached)
    shift
    if [ $# -eq 0 ]; then
        echo "usage: $0 --cached SOURCE.java ..." >&2
        exit 2
    fi
    root=${ZKL_JAVA_CACHE:-${TMPDIR:-/tmp}/zkl-java-cache-$(id -u)}
    key=$( (cat "$@"; echo "$cp") | sha256sum | cut -c1-16)
    dir=$root/$key
    if [ ! -f "$dir/.complete" ]; then
        mkdir -p "$root"
        tmp=$(mktemp -d "$root/build.XXXXXX")
        if ! compile "$tmp" "$@" >&2; then
            rm -rf "$tmp"
            echo "build-java.sh: compilation failed" >&2
            exit 1
        fi
        : > "$tmp/.complete"
        # Another caller may have finished first; then keep its copy.
        if ! mv -T "$tmp" "$dir" 2>/dev/null; then
            rm -rf "$tmp"
        fi
    fi
    echo "$dir"
    exit 0
    ;;
'' | -*)
    echo "usage: $0 OUTDIR [SOURCE.java ...] | --classpath | --cached SOURCE.java ..." >&2
    exit 2
    ;;
esac

out=$1
shift
if [ $# -eq 0 ]; then
    set -- "$here/CuratorBench.java"
fi
compile "$out" "$@"
