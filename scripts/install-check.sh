#!/usr/bin/env bash
# Install zkl into a temporary root, then build examples/hello.c the way a
# user would (cc app.c $(pkg-config --cflags --libs zkl)) and run it; the
# same for a program on zkl/zookeeper.h (pkg-config zkl-zookeeper) and a
# C++ one on zkl.hpp.
set -euo pipefail
build=$1
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
make -s -C "$build" install DESTDIR="$root" >/dev/null
prefix=$(sed -n 's/^prefix=//p' "$build/zkl.pc")
libdir=$(sed -n 's/^libdir=//p' "$build/zkl.pc" | sed "s|\${exec_prefix}|$prefix|")
export PKG_CONFIG_PATH="$root$libdir/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$root"
cc -Wall -Werror "$top/examples/hello.c" $(pkg-config --cflags --libs zkl) -o "$root/hello"
LD_LIBRARY_PATH="$root$libdir" "$root/hello" "$ZKL_TEST_HOSTS"
# The static library and the header bridge are installed too.
test -f "$root$libdir/libzkl.a"
test -f "$root$prefix/include/zkl/zookeeper.h"
test -f "$root$prefix/include/zkl.hpp"
test -f "$root$libdir/pkgconfig/zkl-zookeeper.pc"
# A program on the bridge (zkl/zookeeper.h: -DTHREADED, libzookeeper_mt),
# built with the second pkg-config file.
cc -Wall -Werror "$top/tests/install/bridge.c" $(pkg-config --cflags --libs zkl-zookeeper) \
    -o "$root/bridge"
LD_LIBRARY_PATH="$root$libdir" "$root/bridge" "$ZKL_TEST_HOSTS"
# A C++ program on the installed zkl.hpp.
c++ -std=c++17 -Wall -Wextra -Werror "$top/tests/install/hello.cpp" \
    $(pkg-config --cflags --libs zkl) -o "$root/hello-cpp"
LD_LIBRARY_PATH="$root$libdir" "$root/hello-cpp" "$ZKL_TEST_HOSTS"
echo "install-check: OK"
