#!/usr/bin/env bash
# Behaviour check: the simulator's outputs are a function of the code, so a
# restructuring must leave them byte-identical. Prints one line per output
# (the sha256 of `stn-sim bench`'s report.json, quick and full; the hash of
# a set of `stn-sim trace` runs) and compares them with the committed
# .ci/bench-digest.txt. A commit that changes behaviour on purpose runs
# `bash .ci/bench-digest.sh --update` and says in its message what changed
# and why.
set -euo pipefail
cd "$(dirname "$0")/.."

expected=.ci/bench-digest.txt
# STN_SIM_BIN: a prebuilt stn-sim (e.g. one built from an older commit).
bin=${STN_SIM_BIN:-target/release/stn-sim}
if [[ -z "${STN_SIM_BIN:-}" ]]; then
    cargo build --release -q -p stn-sim --bin stn-sim
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

{
    "$bin" bench --quick --out "$tmp/quick" >/dev/null 2>&1
    echo "bench-quick $(sha256sum <"$tmp/quick/report.json" | cut -d' ' -f1)"
    "$bin" bench --out "$tmp/full" >/dev/null 2>&1
    echo "bench-full $(sha256sum <"$tmp/full/report.json" | cut -d' ' -f1)"
    for seed in 1 2 3; do
        h=$("$bin" trace --seed "$seed" 2>/dev/null | sed -n 's/^trace hash: //p')
        echo "trace-default-seed$seed $h"
        for client in stn mars-2017 okhttp-2017; do
            h=$("$bin" trace --seed "$seed" --scenario stn-sim/scenarios/example.toml \
                --client "$client" 2>/dev/null | sed -n 's/^trace hash: //p')
            echo "trace-example-$client-seed$seed $h"
        done
    done
} >"$tmp/digest.txt"

if [[ "${1:-}" == "--update" ]]; then
    cp "$tmp/digest.txt" "$expected"
    echo "wrote $expected"
    cat "$expected"
    exit 0
fi
if diff -u "$expected" "$tmp/digest.txt"; then
    echo "bench digest: unchanged ($(wc -l <"$expected") outputs)"
else
    echo "bench digest: the simulator's output changed (see the diff above)." >&2
    echo "If the change is meant, run 'bash .ci/bench-digest.sh --update' and say why in the commit." >&2
    exit 1
fi
