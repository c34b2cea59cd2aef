#!/usr/bin/env bash
# tests/fuzz/run.sh [seconds] -- builds the libFuzzer targets of tests/fuzz with clang (ASan+UBSan)
# and runs each for the given time (default 60 s) from the seed corpus in tests/fuzz/corpus/.
# Not part of scripts/test.sh: fuzzing is open-ended; run it after touching the codec.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
cd "$TOCSIN_ROOT"
SECONDS_EACH=${1:-60}
OUT=$TOCSIN_ROOT/build-fuzz

tocsin_install_deps
command -v clang >/dev/null || tocsin_die "clang is missing (apt: clang)"
CC=clang tocsin_build build-fuzz -DCMAKE_BUILD_TYPE=Debug -DTOCSIN_WERROR=ON -DTOCSIN_SANITIZE=ON \
    -DTOCSIN_FUZZ=ON
for t in tests/fuzz/fuzz_*.c; do
    name=$(basename "$t" .c)
    work=$OUT/corpus-$name
    mkdir -p "$work"
    tocsin_log "fuzzing $name for ${SECONDS_EACH}s"
    "$OUT/$name" -max_total_time="$SECONDS_EACH" -max_len=4096 -timeout=5 "$work" tests/fuzz/corpus
done
