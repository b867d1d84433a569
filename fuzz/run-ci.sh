#!/usr/bin/env bash
# Short fuzzing run for CI: every cargo-fuzz target for SECONDS each (default
# 30), one after the other, one process at a time. Fails if any target finds a
# crash (a panic, i.e. a broken oracle) and prints a line per target with
# libFuzzer's final executions and coverage.
#
#   bash fuzz/run-ci.sh [SECONDS]
#
# Environment: FUZZ_TARGET_DIR (cargo target dir; default fuzz/target),
# FUZZ_WORK_DIR (where the run's new corpus entries, crash artifacts and logs
# go; default a fresh temporary folder). The committed corpus fuzz/corpus/<target>
# is read as seeds and never written to.
set -euo pipefail

secs="${1:-30}"
fuzz_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export PATH="$HOME/.cargo/bin:$PATH"
target_dir="${FUZZ_TARGET_DIR:-$fuzz_dir/target}"
work="${FUZZ_WORK_DIR:-$(mktemp -d -t stn-fuzz.XXXXXX)}"

# Toolchain: nightly if rustup has it. Otherwise the stable toolchain with
# RUSTC_BOOTSTRAP=1: with `--sanitizer none` cargo-fuzz needs no nightly-only
# code, only flags, and a machine may have no way to fetch another toolchain.
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    toolchain=(+nightly)
else
    echo "fuzz: no nightly toolchain (rustup toolchain list); using the default one with RUSTC_BOOTSTRAP=1"
    toolchain=()
    export RUSTC_BOOTSTRAP=1
fi

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz: installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi

# -a: debug assertions and overflow checks (arithmetic overflow is a finding);
# -s none: stn-proto forbids unsafe code, so AddressSanitizer buys little and
# halves the speed.
flags=(--fuzz-dir "$fuzz_dir" -a -s none --target-dir "$target_dir")
cargo "${toolchain[@]}" fuzz build "${flags[@]}"

failed=()
for target in $(cargo "${toolchain[@]}" fuzz list --fuzz-dir "$fuzz_dir"); do
    dir="$work/$target"
    mkdir -p "$dir/corpus" "$dir/artifacts"
    log="$dir/fuzz.log"
    status=0
    # The outer timeout only guards against a wedged run; libFuzzer stops
    # itself after -max_total_time, and -timeout makes a slow input a finding.
    (cd "$dir" && timeout "$((secs + 300))" cargo "${toolchain[@]}" fuzz run "${flags[@]}" \
        "$target" "$dir/corpus" "$fuzz_dir/corpus/$target" -- \
        -max_total_time="$secs" -timeout=20 -print_final_stats=1 \
        -artifact_prefix="$dir/artifacts/") >"$log" 2>&1 || status=$?
    # (`|| true`: a run that crashed early has no stats; that is reported below.)
    execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1 || true)"
    rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1 || true)"
    cov="$(grep -o 'cov: [0-9]* ft: [0-9]* corp: [0-9]*' "$log" | tail -n 1 || true)"
    if [ "$status" -eq 0 ]; then
        echo "fuzz: $target ok: ${execs:-?} execs (${rate:-?}/s), ${cov:-no coverage line}"
    else
        failed+=("$target")
        echo "fuzz: $target FAILED (exit $status) after ${execs:-?} execs, ${cov:-no coverage line}"
        { grep -E -A1 "panicked at|SUMMARY|Test unit written" "$log" || true; } | head -n 12 | sed 's/^/    /'
        for artifact in "$dir"/artifacts/*; do
            [ -e "$artifact" ] || continue
            echo "    input (hex): $(od -An -v -tx1 "$artifact" | tr -d ' \n' | head -c 2000)"
            echo "    replay: cargo +nightly fuzz run --fuzz-dir fuzz $target $artifact"
        done
        echo "    log: $log"
    fi
done

if [ "${#failed[@]}" -gt 0 ]; then
    echo "fuzz: ${#failed[@]} failed: ${failed[*]}"
    exit 1
fi
echo "fuzz: all targets ok (${secs}s each)"
