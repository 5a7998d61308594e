#!/usr/bin/env bash
# The zkl demo: a 3-node ZooKeeper ensemble on loopback, four processes
# contending for one lock. Each prints when it holds the lock, with its
# fencing token; the tokens strictly increase, and no two holders overlap.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
"$top/scripts/deps.sh"
"$top/scripts/build.sh" "$top/build"
exec "$top/tests/with-zk.sh" --nodes 3 -- "$top/scripts/demo-run.sh" "$top/build"
