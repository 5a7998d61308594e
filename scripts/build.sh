#!/usr/bin/env bash
# Configure and build zkl in a build directory (default: build/), from a
# clean checkout. Extra arguments go to configure.
#   scripts/build.sh [BUILD_DIR] [CONFIGURE_ARGS...]
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
bdir=${1:-$top/build}
shift || true
cd "$top"
if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt Makefile.in ]; then
    autoreconf -fi >/dev/null 2>&1 || autoreconf -fi
fi
mkdir -p "$bdir"
cd "$bdir"
if [ ! -f Makefile ] || [ "$top/configure" -nt Makefile ]; then
    "$top/configure" -q "$@"
fi
# configure -q keeps its summary to config.log: the client it found, and
# whether that has TLS and SASL ("TLS: yes; SASL: yes").
sed -n 's/^configure:[0-9]*: \(ZooKeeper client: .*\)$/\1/p' config.log | tail -n 1
make -j"$(nproc)" -s
