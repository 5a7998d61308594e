#!/usr/bin/env bash
# Install what zkl needs to build, test, run its demo and its benchmarks,
# from Debian 12's packages. Installs only what is missing; needs root (or
# sudo) the first time.
set -euo pipefail

PACKAGES=(
    build-essential autoconf automake libtool pkg-config   # the build
    libzookeeper-mt-dev                                    # the ZooKeeper C client
    check                                                  # the test framework
    clang                                                  # the C++ API built by clang++ too
    zookeeper default-jdk-headless                         # a real server, and javac
    libcurator-recipes-java python3 python3-kazoo          # interop and comparison
    valgrind gnuplot-nox procps iproute2 git               # memcheck, charts, tools
    nftables clang libclang-rt-14-dev                      # the nemesis, the fuzzers
    libuv1-dev                                             # the event-loop example
    libssl-dev libsasl2-dev libsasl2-modules dpkg-dev      # a TLS and SASL ZooKeeper client
    libzookeeper-java libnetty-java                        # (scripts/build-zookeeper-client.sh)
                                                           # and the servers' TLS (Netty)
    krb5-kdc krb5-admin-server krb5-user                   # a Kerberos KDC for SASL GSSAPI
    libsasl2-modules-gssapi-mit
    abigail-tools cmake                                    # the ABI check, the CMake package's test
)

missing=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
    exit 0
fi
echo "zkl: installing ${missing[*]}" >&2
SUDO=
if [ "$(id -u)" -ne 0 ]; then
    SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q >&2
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
