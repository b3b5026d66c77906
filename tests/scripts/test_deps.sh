#!/usr/bin/env bash
# scripts/deps --need: what it looks for, what it installs as root (only the
# missing packages, apt-get update once) and the one line it prints when not
# root (stopping for what a target needs, going on without what it only
# would use). test_setup.sh runs it through make for every target. Every program it may call is a fake on a private PATH, so the system
# is never touched.
#   tests/scripts/test_deps.sh [BUILD_DIR]   (BUILD_DIR unused)
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin=$tmp/bin inc=$tmp/include log=$tmp/apt.log
deps=$root/scripts/deps

# A fresh fake system: id says uid $FAKE_UID; gcc -E finds a header when it
# is under $inc; clang finds its fuzzer runtime when $tmp/rt exists;
# apt-get logs its arguments and "installs" what the tests look for.
reset() {
    rm -rf "$bin" "$inc" "$tmp/rt" "$log"
    mkdir -p "$bin" "$inc/cjson"
    ln -s "$(command -v bash)" "$bin/bash"
    printf '#!/bin/bash\necho "${FAKE_UID:-0}"\n' > "$bin/id"
    cat > "$bin/gcc" <<FAKE
#!/bin/bash
PATH=/usr/bin:/bin
h=\$(while read -r l; do echo "\$l"; done | sed -n 's/^#include <\(.*\)>/\1/p' | tail -1)
case \$h in stddef.h|stdarg.h|stdint.h|setjmp.h) exit 0;; esac
[ -f "$inc/\$h" ]
FAKE
    cat > "$bin/clang" <<FAKE
#!/bin/bash
f=\${1#-print-file-name=}
if [ -f "$tmp/rt" ]; then echo "$tmp/rt"; else echo "\$f"; fi
FAKE
    cat > "$bin/apt-get" <<FAKE
#!/bin/bash
PATH=/usr/bin:/bin
echo "\$*" >> "$log"
[ -n "\${FAKE_APT_FAIL:-}" ] && [ "\$1" = install ] && exit 100
[ "\$1" = install ] || exit 0
for p in "\$@"; do
    case \$p in
    libcmocka-dev) : > "$inc/cmocka.h";;
    libcjson-dev) : > "$inc/cjson/cJSON.h";;
    libclang-rt-14-dev) : > "$tmp/rt";;
    gnuplot-nox) printf '#!/bin/bash\n' > "$bin/gnuplot"; chmod +x "$bin/gnuplot";;
    -*) ;;
    *) printf '#!/bin/bash\n' > "$bin/\$p"; chmod +x "$bin/\$p";;
    esac
done
FAKE
    printf '#!/bin/bash\n' > "$tmp/nvcc"
    chmod +x "$bin"/* "$tmp/nvcc"
}
present() { # PROGRAMS...: fake programs that are there
    local p
    for p in "$@"; do printf '#!/bin/bash\n' > "$bin/$p"; chmod +x "$bin/$p"; done
}
run() { PATH=$bin NVCC=$tmp/nvcc "$bin/bash" "$deps" "$@" > "$tmp/out" 2>&1; }
installs() { grep '^install' "$log" 2>/dev/null | sed 's/^install -y -qq //'; }

# Everything there: nothing installed, nothing printed.
reset; present g++ python3 gnuplot hyperfine
: > "$inc/cmocka.h"; : > "$inc/cjson/cJSON.h"
run --need test; check_eq "all present: exit 0" "$?" 0
check_eq "all present: silent" "$(cat "$tmp/out")" ""
check_eq "all present: apt-get never called" "$(cat "$log" 2>/dev/null)" ""
run --need run-all; check_eq "all present (run-all): exit 0" "$?" 0

# Root, cmocka.h and gnuplot missing: installs exactly those two, update once.
reset; present g++ python3 hyperfine
: > "$inc/cjson/cJSON.h"
FAKE_UID=0 run --need test; check_eq "root: exit 0 after installing" "$?" 0;
check_eq "root: installs only the missing packages" "$(installs)" "libcmocka-dev gnuplot-nox"
check_eq "root: apt-get update once" "$(grep -c '^update' "$log")" 1
check "root: says what it installs" grep -q "installing libcmocka-dev gnuplot-nox for make test" "$tmp/out"
FAKE_UID=0 run --need test; check_eq "root: a second run has nothing to do" "$(grep -c '^install' "$log")" 1

# Not root, same gaps: one line with the exact command, non-zero, no apt-get.
reset; present g++ python3 hyperfine
: > "$inc/cjson/cJSON.h"
FAKE_UID=1000 run --need test; rc=$?
check_that() { if [ "$2" -eq 0 ]; then pass "$1"; else failure "$1"; fi; }
check_that "not root: exits non-zero" $((rc == 0))
check_eq "not root: one line" "$(wc -l < "$tmp/out")" 1
check "not root: gives the apt-get command" \
    grep -q "run: sudo apt-get update && sudo apt-get install -y libcmocka-dev gnuplot-nox$" "$tmp/out"
check_eq "not root: apt-get not called" "$(cat "$log" 2>/dev/null)" ""

# Each target asks for its own: run-all wants hyperfine and cJSON, not cmocka.
reset; present g++ python3 gnuplot
FAKE_UID=0 run --need run-all
check_eq "run-all: hyperfine and libcjson-dev, not libcmocka-dev" "$(installs)" "libcjson-dev hyperfine"
reset; rm -f "$bin/python3"; present g++ gnuplot hyperfine
: > "$inc/cmocka.h"; : > "$inc/cjson/cJSON.h"
FAKE_UID=0 run --need test
check_eq "test: python3 when missing" "$(installs)" "python3"
reset; rm -f "$bin/clang"
FAKE_UID=0 run --need fuzz
check_eq "fuzz: clang and its fuzzer runtime" "$(installs)" "clang libclang-rt-14-dev"
reset
FAKE_UID=0 run --need fuzz
check_eq "fuzz: only the runtime when clang is there" "$(installs)" "libclang-rt-14-dev"

# What a target only would use: not root, one line naming what it skips,
# and the target goes on (exit 0); as root it is installed.
reset; present g++ python3 hyperfine
: > "$inc/cmocka.h"; : > "$inc/cjson/cJSON.h"
FAKE_UID=1000 run --need test; check_eq "not root, only gnuplot missing: make test goes on (exit 0)" "$?" 0
check_eq "... one line naming what it skips and the apt-get command" "$(cat "$tmp/out")" \
    "deps: make test goes on without gnuplot-nox, skipping charts; for them, run: sudo apt-get update && sudo apt-get install -y gnuplot-nox"
reset; present g++ python3
: > "$inc/cjson/cJSON.h"
FAKE_UID=1000 run --need run-all; check_eq "not root, no gnuplot nor hyperfine: make run-all goes on (exit 0)" "$?" 0
check "... naming charts and C11's hyperfine timing" \
    grep -q "without gnuplot-nox hyperfine, skipping charts, C11's hyperfine timing (fork+exec+wait instead);" "$tmp/out"
FAKE_UID=0 FAKE_APT_FAIL=1 run --need run-all; check_eq "root, apt-get failing for what it only would use: goes on (exit 0)" "$?" 0
check "... saying apt-get failed" grep -q "apt-get install -y gnuplot-nox hyperfine failed" "$tmp/out"
reset; present g++ python3 gnuplot
: > "$inc/cjson/cJSON.h"
FAKE_UID=1000 run --need plots whatif; check_eq "two targets, all there: exit 0" "$?" 0
reset; present g++
FAKE_UID=1000 run --need compare
check_eq "compare: cJSON needed, gnuplot wanted, no python3" "$(cat "$tmp/out")" \
    "deps: make compare needs Debian packages libcjson-dev (and would use gnuplot-nox); run: sudo apt-get update && sudo apt-get install -y libcjson-dev gnuplot-nox"

# Failures: apt-get fails; nvcc missing; a bad target.
reset; present g++ python3 gnuplot hyperfine
: > "$inc/cjson/cJSON.h"
FAKE_UID=0 FAKE_APT_FAIL=1 run --need test; rc=$?
check_that "apt-get failing: non-zero" $((rc == 0))
check "apt-get failing: says so" grep -q "apt-get install -y libcmocka-dev failed" "$tmp/out"
reset; present g++ python3 gnuplot hyperfine
: > "$inc/cmocka.h"; : > "$inc/cjson/cJSON.h"
rm "$tmp/nvcc"
FAKE_UID=0 run --need test; rc=$?
check_that "nvcc missing: non-zero" $((rc == 0))
check "nvcc missing: one line naming the CUDA toolkit" \
    bash -c "[ \$(wc -l < '$tmp/out') -eq 1 ] && grep -q 'needs nvcc.*CUDA toolkit' '$tmp/out'"
FAKE_UID=0 run --need fuzz; check_eq "nvcc missing: fuzz does not need it" "$?" 0
run --need nonsense; check_eq "bad target: exit 2" "$?" 2
run --need; check_eq "no target: exit 2" "$?" 2
run --need test nonsense; check_eq "one bad target among good ones: exit 2" "$?" 2

# make deps (no argument) as root installs the whole list.
reset
FAKE_UID=0 run
check "make deps: the whole list, cJSON and python3 included" \
    grep -qx "make gcc g++ libcmocka-dev libcjson-dev python3 gnuplot-nox hyperfine clang libclang-rt-14-dev" <(installs)
FAKE_UID=1000 run; check_eq "make deps not root: prints the command, exit 0" "$?" 0

summary
