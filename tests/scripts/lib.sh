# lib.sh: a minimal test harness for the shell tests. Source it, call
# `check "what" command...` or `check_that "what" <test expression result>`,
# and end with `summary`, which prints "N passed, N failed".
passed=0
failed=0

pass() { passed=$((passed + 1)); echo "PASS: $1"; }
failure() { failed=$((failed + 1)); echo "FAIL: $1"; [ -n "${2:-}" ] && echo "      $2"; }

# check WHAT CMD...: passes when CMD exits 0.
check() {
    local what=$1; shift
    if "$@" >/dev/null 2>&1; then pass "$what"; else failure "$what" "command: $*"; fi
}

# check_eq WHAT GOT WANT
check_eq() {
    if [ "$2" = "$3" ]; then pass "$1"; else failure "$1" "got '$2', want '$3'"; fi
}

summary() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}
