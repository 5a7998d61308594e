#!/bin/sh
# sim-lib's regression corpus (tests/sim/corpus-lib.txt), replayed as
# tests/sim/corpus.sh replays sim-locks'.
src=${srcdir:-$(dirname "$0")/../..}
exec sh "$src/tests/sim/corpus.sh" tests/sim/sim-lib "$src/tests/sim/corpus-lib.txt" SIM_THREADS
