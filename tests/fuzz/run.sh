#!/usr/bin/env bash
# tests/fuzz/run.sh [seconds [target...]] -- builds the libFuzzer targets of tests/fuzz with clang
# (ASan+UBSan) and runs each (or the targets named, e.g. fuzz_webpush) for the given time (default
# 60 s) from its seed corpus tests/fuzz/corpus/<target>/, with tests/fuzz/<target>.dict as
# dictionary when there is one. Not part of scripts/test.sh: fuzzing is open-ended; run it after
# touching the codec, jwt.c, b64.c, sse.c, webpush.c, crypto_ec.c,
# recur.c, tz*.c, series.c, forwarded.c or redis_url.c.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
cd "$TOCSIN_ROOT"
SECONDS_EACH=${1:-60}
shift || true
OUT=$TOCSIN_ROOT/build-fuzz

tocsin_install_deps
command -v clang >/dev/null || tocsin_die "clang is missing (apt: clang)"
CC=clang tocsin_build build-fuzz -DCMAKE_BUILD_TYPE=Debug -DTOCSIN_WERROR=ON -DTOCSIN_SANITIZE=ON \
    -DTOCSIN_FUZZ=ON
targets=("$@")
[ "${#targets[@]}" -gt 0 ] || mapfile -t targets < <(basename -s .c tests/fuzz/fuzz_*.c)
for name in "${targets[@]}"; do
    [ -f "tests/fuzz/$name.c" ] || tocsin_die "no fuzz target tests/fuzz/$name.c"
    work=$OUT/corpus-$name
    seeds=tests/fuzz/corpus/$name
    [ -d "$seeds" ] || tocsin_die "$name has no seed corpus in $seeds"
    # Inputs up to 4 KiB, except tokens: past JWT_TOKEN_MAX (8192) so the length check is reached.
    case $name in
    fuzz_jwt) max_len=8448 ;;
    *) max_len=4096 ;;
    esac
    opts=(-max_total_time="$SECONDS_EACH" -max_len="$max_len" -timeout=5)
    [ ! -f "tests/fuzz/$name.dict" ] || opts+=(-dict="tests/fuzz/$name.dict")
    mkdir -p "$work"
    tocsin_log "fuzzing $name for ${SECONDS_EACH}s"
    "$OUT/$name" "${opts[@]}" "$work" "$seeds"
done
