#!/usr/bin/env bash
# Build libzookeeper_mt, the ZooKeeper C client, with TLS (OpenSSL 3) and
# SASL (Cyrus SASL), from Debian's own source package, and install it into
# PREFIX (lib/, include/zookeeper/). zkl then builds against it with
#   ./configure --with-zookeeper=PREFIX
#
#   scripts/build-zookeeper-client.sh PREFIX
#
# Debian's libzookeeper-mt2 is built without either (no zookeeper_init_ssl,
# no zookeeper_init_sasl). The source is fetched through a private apt
# source list under PREFIX/.src (deb-src entries made from the system's own
# Debian sources, which stay untouched); the same version as the installed
# zookeeper package when the archive still has it. The C bindings of the
# protocol come from the jute compiler in Debian's libzookeeper-java
# (org.apache.jute.compiler.generated.Rcc, in zookeeper-jute.jar), and the
# one call OpenSSL 3 removed, FIPS_mode(), becomes
# EVP_default_properties_is_fips_enabled(NULL); and zookeeper_init_ssl's
# copy of the TLS key password is freed, wiped, with the handle.
#
# Idempotent: when PREFIX holds a build of this script's recipe for the same
# source version, it says so and exits at once. Needs root (or sudo) only to
# install missing build packages (scripts/deps.sh).
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
prog=${0##*/}
prefix=${1:?usage: $prog PREFIX}
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd -P)

say() { printf '%s: %s\n' "$prog" "$*" >&2; }
die() { say "$*"; exit 1; }

# What a finished build records: this script's own text and the source
# version. A change of either builds again.
recipe=$(sha256sum <"${BASH_SOURCE[0]}" | cut -c1-16)
stamp=$prefix/.zkl-zookeeper-client
if [[ -f $stamp && -f $prefix/lib/libzookeeper_mt.so && $(sed -n 1p "$stamp") == "$recipe" ]]; then
    say "up to date in $prefix ($(sed -n 2p "$stamp"))"
    exit 0
fi

"$top/scripts/deps.sh"

work=$prefix/.src
rm -rf "$work"
mkdir -p "$work/apt/lists/partial" "$work/apt/parts" "$work/apt/cache/archives/partial" "$work/src"

# deb-src entries for the Debian archives the system already uses, in a
# source list of our own: /etc/apt is only read.
sources=$work/apt/sources.list
: >"$sources"
{
    cat /etc/apt/sources.list 2>/dev/null || true
    cat /etc/apt/sources.list.d/*.list 2>/dev/null || true
} | awk '$1 == "deb" { sub(/^deb/, "deb-src"); print }' >>"$sources"
for f in /etc/apt/sources.list.d/*.sources; do
    [[ -r $f ]] || continue
    # deb822 stanzas: one deb-src line per URI and suite of a "Types: deb" stanza.
    awk '
        function flush() {
            if (deb && uris != "" && suites != "") {
                nu = split(uris, u, " "); ns = split(suites, s, " ")
                for (i = 1; i <= nu; i++) for (j = 1; j <= ns; j++)
                    printf "deb-src %s%s %s %s\n", signed, u[i], s[j], comps
            }
            deb = 0; uris = suites = comps = signed = ""
        }
        /^[ \t]*$/ { flush(); next }
        /^Types:/ { deb = ($0 ~ /[ \t]deb([ \t]|$)/) }
        /^URIs:/ { sub(/^URIs:[ \t]*/, ""); uris = $0 }
        /^Suites:/ { sub(/^Suites:[ \t]*/, ""); suites = $0 }
        /^Components:/ { sub(/^Components:[ \t]*/, ""); comps = $0 }
        /^Signed-By:/ { sub(/^Signed-By:[ \t]*/, ""); signed = "[signed-by=" $0 "] " }
        END { flush() }' "$f" >>"$sources"
done
# Only Debian's own archives carry the zookeeper source package.
grep -E '/debian(-security)?/? ' "$sources" >"$sources.debian" || true
mv "$sources.debian" "$sources"
[[ -s $sources ]] || die "no Debian archive in the system's apt sources to fetch the zookeeper source from"

apt_opts=(
    -o "Dir::Etc::SourceList=$sources"
    -o "Dir::Etc::SourceParts=$work/apt/parts"
    -o "Dir::State::Lists=$work/apt/lists"
    -o "Dir::Cache=$work/apt/cache"
    -o "Debug::NoLocking=1"
    -o "APT::Sandbox::User=root"
)
say "fetching the zookeeper source package (private apt lists in $work/apt)"
apt-get -q "${apt_opts[@]}" update >"$work/apt-update.log" 2>&1 ||
    { cat "$work/apt-update.log" >&2; die "apt-get update of the private source list failed"; }
want=$(dpkg-query -W -f='${Version}' zookeeper 2>/dev/null || true)
(
    cd "$work/src"
    if [[ -z $want ]] || ! apt-get -q "${apt_opts[@]}" source --download-only "zookeeper=$want" >../apt-source.log 2>&1; then
        apt-get -q "${apt_opts[@]}" source --download-only zookeeper >../apt-source.log 2>&1
    fi
) || { cat "$work/apt-source.log" >&2; die "apt-get source zookeeper failed"; }
dsc=$(ls "$work"/src/zookeeper_*.dsc)
version=$(sed -n 's/^Version: //p' "$dsc")
# The archive's signed index vouches for the files apt fetched; the .dsc's
# own signature needs the uploader's key, which is not installed.
dpkg-source -q -x "$dsc" "$work/src/zookeeper" >"$work/dpkg-source.log" 2>&1 ||
    { cat "$work/dpkg-source.log" >&2; die "dpkg-source could not unpack $dsc"; }

csrc=$work/src/zookeeper/zookeeper-client/zookeeper-client-c
[[ -f $csrc/configure.ac ]] || die "no C client in the zookeeper $version source"

# The protocol's C bindings, generated from zookeeper.jute.
jute=$work/src/zookeeper/zookeeper-jute/src/main/resources/zookeeper.jute
mkdir -p "$csrc/generated"
(cd "$csrc/generated" && java -cp /usr/share/java/zookeeper-jute.jar \
    org.apache.jute.compiler.generated.Rcc -l c "$jute" >/dev/null) ||
    die "the jute compiler (zookeeper-jute.jar) failed"

# OpenSSL 3 has no FIPS_mode().
sed -i 's/FIPS_mode()/EVP_default_properties_is_fips_enabled(NULL)/' "$csrc/src/zookeeper.c"
grep -q 'FIPS_mode' "$csrc/src/zookeeper.c" && die "FIPS_mode() still in zookeeper.c"

# zookeeper_init_ssl copies its "ca,cert,key,password" argument twice, splits
# the second copy and never frees it, so the key password stays in the heap
# after zookeeper_close. Split the copy the handle keeps (certstr, which
# nothing reads whole) instead, and wipe its parts before the handle frees it.
perl -0pi -e 's/zcert\.ca = strtok\(strdup\(cert\), ","\);/zcert.ca = strtok(zcert.certstr, ",");/' \
    "$csrc/src/zookeeper.c"
perl -0pi -e 's/(\n([ \t]*)free\(zh->fd->cert->certstr\);)/\n$2if (zh->fd->cert->ca) explicit_bzero(zh->fd->cert->ca, strlen(zh->fd->cert->ca));\n$2if (zh->fd->cert->cert) explicit_bzero(zh->fd->cert->cert, strlen(zh->fd->cert->cert));\n$2if (zh->fd->cert->key) explicit_bzero(zh->fd->cert->key, strlen(zh->fd->cert->key));\n$2if (zh->fd->cert->passwd) explicit_bzero(zh->fd->cert->passwd, strlen(zh->fd->cert->passwd));$1/' \
    "$csrc/src/zookeeper.c"
grep -q 'strtok(strdup(cert)' "$csrc/src/zookeeper.c" && die "zookeeper_init_ssl still splits a copy it never frees"
[[ $(grep -c 'explicit_bzero(zh->fd->cert->' "$csrc/src/zookeeper.c") == 4 ]] ||
    die "the wipe of the TLS key password did not apply to zookeeper.c"

say "building libzookeeper_mt $version with OpenSSL and Cyrus SASL"
(cd "$csrc" && autoreconf -fi >"$work/autoreconf.log" 2>&1) ||
    { tail -n 30 "$work/autoreconf.log" >&2; die "autoreconf failed"; }
mkdir -p "$work/build"
(
    cd "$work/build"
    "$csrc/configure" -q --prefix="$prefix" --without-cppunit --with-openssl --with-sasl \
        --disable-static CFLAGS="-O2 -g -Wno-error" >"$work/configure.log" 2>&1 ||
        { tail -n 30 "$work/configure.log" >&2; exit 1; }
    grep -q '^OPENSSL_CPPFLAGS = -DHAVE_OPENSSL_H' Makefile || { echo "OpenSSL not found" >&2; exit 1; }
    grep -q '^SASL_CPPFLAGS = -DHAVE_CYRUS_SASL_H' Makefile || { echo "Cyrus SASL not found" >&2; exit 1; }
    make -s -j"$(nproc)" libzookeeper_mt.la >"$work/make.log" 2>&1 ||
        { tail -n 30 "$work/make.log" >&2; exit 1; }
    make -s install-libLTLIBRARIES install-pkgincludeHEADERS lib_LTLIBRARIES=libzookeeper_mt.la \
        >>"$work/make.log" 2>&1 || { tail -n 30 "$work/make.log" >&2; exit 1; }
) || die "the build failed (logs in $work)"

exports=$(nm -D --defined-only "$prefix/lib/libzookeeper_mt.so")
for sym in zookeeper_init_ssl zookeeper_init_sasl; do
    grep -qw "$sym" <<<"$exports" || die "the built library lacks $sym"
done
# The sources and the build are not needed any more.
rm -rf "$work"
printf '%s\n%s\n' "$recipe" "zookeeper $version" >"$stamp"
say "installed libzookeeper_mt (zookeeper $version, TLS and SASL) into $prefix"
