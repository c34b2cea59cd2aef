#!/usr/bin/env bash
# scripts/lint.sh -- the static analysers, as CI runs them (.ci/run): cppcheck over src/ and the
# C tests, then clang-tidy with the checks of .clang-tidy over src/, then scripts/check_maps.py
# (the maps of the repository: HACKING.md names every source file, docs/configuration.md every
# setting the binary reads and no other, every relative link of the Markdown files resolves).
# All must be silent; any finding fails. About a minute and a half on two cores. Configures
# build-lint/ for its compile_commands.json (no build needed). Usage: bash scripts/lint.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. scripts/lib.sh

tocsin_install_deps $TOCSIN_LINT_PACKAGES
jobs=$(nproc)

# cppcheck: its default errors plus warning, portability and performance; its style class guesses
# wrong too often here (knownConditionTrueFalse on guarded loops) to start green. The tests are
# checked too: a leak or an uninitialised read there hides a real failure.
tocsin_log "cppcheck"
# Every folder of src/ is on the include path, as in CMakeLists.txt.
mapfile -t includes < <(find src -type d -printf '-I\n%p\n')
cppcheck --std=c11 --enable=warning,portability,performance --inline-suppr --error-exitcode=1 \
    --quiet -j "$jobs" -D__GNUC__ "${includes[@]}" -I tests --suppress=missingIncludeSystem \
    src tests/unit tests/integration tests/tools tests/fuzz

# clang-tidy: .clang-tidy says which checks and why; WarningsAsErrors makes any finding fatal.
tocsin_log "clang-tidy ($(clang-tidy --version | grep -o 'version [0-9.]*'))"
cmake -S . -B build-lint --log-level=WARNING -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
# Its "N warnings generated" lines count what it suppressed (system headers, checks left out).
find src -name '*.c' -print0 | sort -z |
    xargs -0 -P "$jobs" -n 6 clang-tidy -p build-lint --quiet 2>&1 |
    { grep -Ev '^[0-9]+ warnings? generated\.$' || true; }

# The maps: first its self-test (each check must still catch the defect it is for), then the tree.
tocsin_log "check_maps"
python3 scripts/check_maps.py --self-test
python3 scripts/check_maps.py
# The folders of src/ and which may include which (scripts/check_layout.py says why).
tocsin_log "layout"
python3 scripts/check_layout.py
tocsin_log "lint: clean"
