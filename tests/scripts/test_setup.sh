#!/usr/bin/env bash
# Every make target the README shows sets itself up (the Makefile's `setup`,
# scripts/deps --need): on a simulated fresh Debian machine, not root, it
# stops before compiling or running anything, with one line giving the
# apt-get command for exactly the packages that target needs; as root it
# installs them and goes on; with them present it goes on silently; a
# package it only would use (gnuplot, hyperfine) is named in one line and
# the target goes on. The real make and scripts/deps run; every program they
# may call that a fresh machine lacks is a fake on PATH, the rest of PATH is
# this machine's own programs minus those, objects go to a temporary BUILD,
# and the system is never touched (apt-get is a fake that logs).
#   tests/scripts/test_setup.sh [BUILD_DIR]   (BUILD_DIR unused)
# shellcheck disable=SC2086 # package lists ($BUILD, $need...) split on purpose
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root" || exit 2
check_that() { if [ "$2" -eq 0 ]; then pass "$1"; else failure "$1"; fi; } # WHAT NONZERO_FAILS
make_bin=$(command -v make) || { failure "make is on PATH"; summary; exit 1; }

# ------------------------------------------------------------ the fake machine
# $sys: this machine's programs, less the ones a fresh Debian machine lacks
# (and id and apt-get, which are faked). $bin: the fakes, first on PATH.
sys=$tmp/sys bin=$tmp/bin inc=$tmp/include calls=$tmp/calls log=$tmp/apt.log
mkdir -p "$sys"
for d in /usr/bin /bin /usr/sbin /sbin; do
    for p in "$d"/*; do
        n=${p##*/}
        case $n in
        gcc* | g++* | cc | c++ | cpp* | x86_64-linux-gnu-* | clang* | python* | gnuplot* | hyperfine | \
        nvcc | nvidia-smi | apt-get | id) continue ;;
        esac
        [ -x "$p" ] && [ ! -e "$sys/$n" ] && ln -s "$p" "$sys/$n"
    done
done

# provide PKG...: what apt-get install would put on the machine.
cat > "$tmp/provide" <<FAKE
#!/bin/bash
for p in "\$@"; do
    case \$p in
    libcmocka-dev) : > "$inc/cmocka.h" ;;
    libcjson-dev) : > "$inc/cjson/cJSON.h" ;;
    libclang-rt-14-dev) : > "$tmp/rt" ;;
    gcc | g++) cp "$tmp/fake-cc" "$bin/\$p" ;;
    gnuplot-nox) cp "$tmp/fake-tool" "$bin/gnuplot" ;;
    clang) cp "$tmp/fake-clang" "$bin/clang" ;;
    -*) ;;
    *) cp "$tmp/fake-tool" "$bin/\$p" ;;
    esac
done
FAKE
# gcc/g++: -E (scripts/deps' header check) finds a header under $inc; a
# compile is logged and fails, so make stops at the first one.
cat > "$tmp/fake-cc" <<FAKE
#!/bin/bash
case " \$* " in
*" -E "*) h=\$(while read -r l; do echo "\$l"; done | sed -n 's/^#include <\(.*\)>/\1/p' | tail -1)
          case \$h in stddef.h|stdarg.h|stdint.h|setjmp.h) exit 0;; esac
          [ -f "$inc/\$h" ] ;;
*) echo "compile \${0##*/}" >> "$calls"; exit 1 ;;
esac
FAKE
cat > "$tmp/fake-tool" <<FAKE
#!/bin/bash
echo "\${0##*/} \$*" >> "$calls"
FAKE
cat > "$tmp/fake-clang" <<FAKE
#!/bin/bash
case \$1 in -print-file-name=*) f=\${1#-print-file-name=}; [ -f "$tmp/rt" ] && echo "$tmp/rt" || echo "\$f"; exit 0;; esac
echo "compile clang" >> "$calls"; exit 1
FAKE
# nvcc: answers --list-gpu-code like CUDA 13; a compile is logged and fails.
cat > "$tmp/nvcc" <<FAKE
#!/bin/bash
case " \$* " in *" --list-gpu-code "*) printf 'sm_%s\n' 75 80 86 89 90; exit 0;; esac
echo "compile nvcc" >> "$calls"; exit 1
FAKE
chmod +x "$tmp/provide" "$tmp/fake-cc" "$tmp/fake-tool" "$tmp/fake-clang" "$tmp/nvcc"

# fresh [PKG...]: a fresh machine (make, bash, coreutils), plus these packages.
fresh() {
    rm -rf "$bin" "$inc" "$tmp/rt" "$log" "$calls" "$tmp/build"
    mkdir -p "$bin" "$inc/cjson"
    printf '#!/bin/bash\necho "${FAKE_UID:-1000}"\n' > "$bin/id"
    cat > "$bin/apt-get" <<FAKE
#!/bin/bash
echo "\$*" >> "$log"
[ "\$1" = install ] && "$tmp/provide" "\$@"
exit 0
FAKE
    chmod +x "$bin/id" "$bin/apt-get"
    [ $# -eq 0 ] || "$tmp/provide" "$@"
}
# mk TARGET [VAR=VALUE...]: make TARGET on the fake machine; output in $tmp/out.
mk() {
    env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u CUDA_ARCH PATH="$bin:$sys" \
        MEMCLAIMS_README="$tmp/README.md" \
        "$make_bin" --no-print-directory BUILD="$tmp/build" NVCC="$tmp/nvcc" CC=gcc CXX=g++ \
        RUN="$tmp/run" "$@" > "$tmp/out" 2>&1
}
deps_lines() { grep '^deps:' "$tmp/out"; }
compiled() { grep -q '^compile' "$calls" 2>/dev/null; }
installs() { grep '^install' "$log" 2>/dev/null | sed 's/^install -y -qq //'; }

# ------------------------------------------------------------ what each target needs
# TARGET NEEDED | WANTED (Debian packages, in the order scripts/deps names them).
BUILD="gcc g++ libcjson-dev"
expect() {
    case $1 in
    all | report | test-gpu) echo "$BUILD|" ;;
    compare) echo "$BUILD|gnuplot-nox" ;;
    whatif) echo "$BUILD python3|gnuplot-nox" ;;
    bench) echo "$BUILD python3|" ;;
    run-all) echo "$BUILD python3|gnuplot-nox hyperfine" ;;
    test) echo "$BUILD libcmocka-dev python3|gnuplot-nox" ;;
    plots) echo "gnuplot-nox|" ;;
    readme) echo "python3|" ;;
    fuzz) echo "clang libclang-rt-14-dev|" ;;
    esac
}
# What shows that a target went on past its set-up: it compiled something
# (make stops there: the fake compiler fails), or ran its script.
went_on() {
    case $1 in
    plots) grep -q '^plot: no plots/nokey.gp: no chart for nokey$' "$tmp/out" ;;
    readme) grep -q '^python3 .*no_grad_reference.json' "$calls" ;;
    *) compiled ;;
    esac
}
cp README.md "$tmp/README.md"  # make readme rewrites this copy (MEMCLAIMS_README)
mkdir -p "$tmp/run" && echo 'claim' > "$tmp/run/nokey.csv" # make plots RUN=: a CSV with no chart script

for t in all whatif compare bench plots report readme test test-gpu run-all fuzz; do
    e=$(expect "$t"); need=${e%|*} want=${e#*|}
    all="$need${want:+ $want}"

    # Fresh, not root: one line with the apt-get command, nothing built or run.
    fresh; FAKE_UID=1000 mk "$t"; rc=$?
    check_that "make $t, fresh, not root: make fails" $((rc == 0))
    check_eq "make $t, fresh, not root: one line, the packages it needs and the apt-get command" "$(deps_lines)" \
        "deps: make $t needs Debian packages $need${want:+ (and would use $want)}; run: sudo apt-get update && sudo apt-get install -y $all"
    check_eq "make $t, fresh, not root: nothing else said but make's error" \
        "$(grep -v '^deps:' "$tmp/out" | grep -vc '^make: \*\*\* .*setup\] Error 1$')" 0
    check_eq "make $t, fresh, not root: nothing compiled or run, apt-get not called" \
        "$(cat "$calls" "$log" 2>/dev/null)" ""

    # Fresh, root: installs exactly those (update once), then goes on.
    [ "$t" = fuzz ] && continue # scripts/fuzz builds into the tree: its set-up is test_deps.sh's
    fresh; FAKE_UID=0 mk "$t"
    check_eq "make $t, fresh, root: installs what it needs and would use" "$(installs)" "$all"
    check_eq "make $t, fresh, root: apt-get update once" "$(grep -c '^update' "$log" 2>/dev/null)" 1
    check "make $t, fresh, root: says what it installs" grep -qx "deps: installing $all for make $t" "$tmp/out"
    check "make $t, fresh, root: then goes on" went_on "$t"

    # Everything there, not root: silent, goes on.
    fresh $all; FAKE_UID=1000 mk "$t"
    check_eq "make $t, all there, not root: no deps line" "$(deps_lines)" ""
    check "make $t, all there, not root: goes on" went_on "$t"
    check_eq "make $t, all there: apt-get not called" "$(cat "$log" 2>/dev/null)" ""

    # Needed there, the rest missing, not root: one line naming what is skipped; goes on.
    [ -n "$want" ] || continue
    fresh $need; FAKE_UID=1000 mk "$t"
    check "make $t, not root, without $want: one line naming it and the apt-get command" \
        bash -c "[ \"\$(grep -c '^deps:' '$tmp/out')\" = 1 ] &&
                 grep -q '^deps: make $t goes on without $want, skipping charts.*; for them, run: sudo apt-get update && sudo apt-get install -y $want\$' '$tmp/out'"
    check "make $t, not root, without $want: goes on" went_on "$t"
done

# Several goals: one check, the union, each package once.
fresh; FAKE_UID=1000 mk all whatif
check_eq "make all whatif: one line for both" "$(deps_lines)" \
    "deps: make all whatif needs Debian packages $BUILD python3 (and would use gnuplot-nox); run: sudo apt-get update && sudo apt-get install -y $BUILD python3 gnuplot-nox"
fresh $BUILD python3; FAKE_UID=1000 mk plots whatif
check_eq "make plots whatif: gnuplot needed by one, named once as needed" "$(deps_lines)" \
    "deps: make plots whatif needs Debian packages gnuplot-nox; run: sudo apt-get update && sudo apt-get install -y gnuplot-nox"

# nvcc missing: a target that compiles stops with one line; plots does not need it.
fresh $BUILD gnuplot-nox; FAKE_UID=1000 mk all NVCC=/nonexistent/nvcc
check "make all without nvcc: one line naming the CUDA toolkit" \
    bash -c "[ \"\$(grep -c '^deps:' '$tmp/out')\" = 1 ] && grep -q '^deps: make all needs nvcc.*CUDA toolkit' '$tmp/out'"
check_that "make all without nvcc: nothing compiled" "$(compiled && echo 1 || echo 0)"
FAKE_UID=1000 mk plots NVCC=/nonexistent/nvcc; rc=$?
check_eq "make plots needs no nvcc (exit 0)" "$rc" 0

# Goals that are not a README target check nothing (developers' single files, test-build).
fresh $BUILD; FAKE_UID=1000 mk "$tmp/build/obj/common/check.c.o"
check_eq "make <one object> checks nothing" "$(deps_lines)" ""
check "... and compiles it" compiled

summary
