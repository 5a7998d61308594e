#!/usr/bin/env bash
# Install zkl into a temporary root, then build examples/hello.c the way a
# user would (cc app.c $(pkg-config --cflags --libs zkl)) and run it; the
# same for a program on zkl/zookeeper.h (pkg-config zkl-zookeeper), a C++
# one on zkl.hpp, and a CMake project on the CMake package.
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
# The shared library's soname is that of the 1.x API.
soname=$(readelf -d "$root$libdir/libzkl.so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ "$soname" = libzkl.so.1 ] || { echo "install-check: soname is '$soname', not libzkl.so.1"; exit 1; }
# The static library and the header bridge are installed too.
test -f "$root$libdir/libzkl.a"
test -f "$root$prefix/include/zkl/zookeeper.h"
test -f "$root$prefix/include/zkl.hpp"
test -f "$root$libdir/pkgconfig/zkl-zookeeper.pc"
# zkl-bench's heap meter, a module in zkl's library folder.
test -f "$root$libdir/zkl/zkl-bench-heap.so"
# A program on the bridge (zkl/zookeeper.h: -DTHREADED, libzookeeper_mt),
# built with the second pkg-config file.
cc -Wall -Werror "$top/tests/install/bridge.c" $(pkg-config --cflags --libs zkl-zookeeper) \
    -o "$root/bridge"
LD_LIBRARY_PATH="$root$libdir" "$root/bridge" "$ZKL_TEST_HOSTS"
# A C++ program on the installed zkl.hpp.
c++ -std=c++17 -Wall -Wextra -Werror "$top/tests/install/hello.cpp" \
    $(pkg-config --cflags --libs zkl) -o "$root/hello-cpp"
LD_LIBRARY_PATH="$root$libdir" "$root/hello-cpp" "$ZKL_TEST_HOSTS"
# A CMake project: find_package(zkl 1.0 CONFIG REQUIRED) finds the staged
# install (its paths are relative to its own folder) and zkl::zkl builds and
# links examples/hello.c, zkl::zookeeper tests/install/bridge.c.
test -f "$root$libdir/cmake/zkl/zklConfig.cmake"
test -f "$root$libdir/cmake/zkl/zklConfigVersion.cmake"
cmake -S "$top/tests/install/cmake" -B "$root/cmake-build" -DZKL_SOURCE_DIR="$top" \
    -DCMAKE_PREFIX_PATH="$root$prefix" -DCMAKE_C_FLAGS='-Wall -Werror' >"$root/cmake.log" 2>&1 ||
    { cat "$root/cmake.log"; echo "install-check: the CMake consumer does not configure"; exit 1; }
cmake --build "$root/cmake-build" >>"$root/cmake.log" 2>&1 ||
    { cat "$root/cmake.log"; echo "install-check: the CMake consumer does not build"; exit 1; }
LD_LIBRARY_PATH="$root$libdir" "$root/cmake-build/hello" "$ZKL_TEST_HOSTS"
LD_LIBRARY_PATH="$root$libdir" "$root/cmake-build/bridge" "$ZKL_TEST_HOSTS"
# The man pages and the guides: `man zkl_rwlock_read_acquire` finds the
# family page through its link page, and docdir has the guides.
dirs=$(printf 'zkl-print-dirs:\n\t@echo $(mandir) $(docdir)\n' |
    make -s --no-print-directory -C "$build" -f Makefile -f - zkl-print-dirs)
mandir=$root${dirs% *}
docdir=$root${dirs#* }
for f in man1/zkl.1 man3/zkl.3 man3/libzkl.3 man3/zkl_rwlock.3 man3/zkl_rwlock_read_acquire.3; do
    test -f "$mandir/$f" || { echo "install-check: $mandir/$f not installed"; exit 1; }
done
if command -v man >/dev/null 2>&1; then
    page=$(MANPAGER=cat MANWIDTH=100 man -M "$mandir" 3 zkl_rwlock_read_acquire 2>&1) || true
    case $page in
    *"int zkl_rwlock_read_acquire(zkl_rwlock *rw, long timeout_ms);"*) ;;
    *)
        echo "install-check: man -M $mandir 3 zkl_rwlock_read_acquire shows no prototype:"
        printf '%s\n' "$page" | head -n 5
        exit 1
        ;;
    esac
fi
for f in errors.md failures.md protocol.md nemesis.md; do
    test -f "$docdir/$f" || { echo "install-check: $docdir/$f not installed"; exit 1; }
done
echo "install-check: OK"
