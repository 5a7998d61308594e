#!/usr/bin/env bash
# Build zkl's Debian packages (libzkl1, libzkl-dev, zkl) on Debian 12:
# installs the build dependencies (apt-get build-dep; root or sudo), builds
# a copy of the committed sources with dpkg-buildpackage (the tests run
# against a ZooKeeper it starts, or are skipped when none can start;
# DEB_BUILD_OPTIONS=nocheck skips them), runs lintian, and leaves the .deb
# files in OUT (default: packages/ in the source tree).
#   scripts/package.sh [OUT]
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
out=$(realpath -m "${1:-$top/packages}")
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
need=()
for p in dpkg-dev lintian git; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if ((${#need[@]})); then
    $SUDO apt-get update -q
    $SUDO apt-get install -y -q --no-install-recommends "${need[@]}"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The committed sources (git archive), so that a build tree or local files
# do not end up in the package.
mkdir "$work/zkl"
git -C "$top" archive HEAD | tar -x -C "$work/zkl"
cd "$work/zkl"
$SUDO apt-get build-dep -y -q ./ >/dev/null
dpkg-buildpackage -us -uc -b
cd "$work"
lintian --info --display-info --pedantic --fail-on error ./*.changes
mkdir -p "$out"
mv ./*.deb "$out/"
echo "package: the packages are in $out:"
ls -1 "$out"
