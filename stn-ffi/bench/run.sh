#!/usr/bin/env bash
# The per-call overhead of a Kotlin and a Python call against a Rust call on
# loopback: one release `stn serve`, then sequential calls (each awaited
# before the next) from Rust, the bindings' object from Rust, Kotlin
# (blocking and suspend) and Python (blocking and asyncio), on the long link
# and on the short link with keep-alive. A benchmark, not a test: run it on
# a quiet machine; it prints one line per mode and link.
#
#   bash .ci/ffi-setup.sh            # kotlinc, JNA, pytest's venv (Python only needs the venv)
#   bash stn-ffi/bench/run.sh [CALLS] [ROUNDS]
#
# STN_BIN overrides the server binary (default: built with cargo).
set -euo pipefail
cd "$(dirname "$0")/../.."
CALLS="${1:-2000}"
ROUNDS="${2:-7}"
TARGET="${CARGO_TARGET_DIR:-$PWD/target}"
TOOLS="$TARGET/ffi-tools"
OUT="$TARGET/ffi-bench"
rm -rf "$OUT" && mkdir -p "$OUT"

cargo build -q --release -p stn-ffi --lib --example overhead
if [ -z "${STN_BIN:-}" ]; then
    cargo build -q --release -p stn-cli --bin stn
    STN_BIN="$TARGET/release/stn"
fi
LIB="$TARGET/release/libstn_ffi.so"

RUST_LOG=info "$STN_BIN" serve --long 127.0.0.1:0 --short 127.0.0.1:0 2>"$OUT/serve.log" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 100); do
    grep -q "short link listening" "$OUT/serve.log" && grep -q "long link listening" "$OUT/serve.log" && break
    sleep 0.1
done
addr() { grep "$1 link listening" "$OUT/serve.log" | sed 's/.*addr=//' | sed 's/.*://' | tr -d '[:space:]'; }
SHORT=$(addr short)
LONG=$(addr long)
echo "stn serve: short $SHORT, long $LONG; $CALLS sequential calls x $ROUNDS rounds per line: the median round's wall and client-process CPU time per call"

"$TARGET/release/examples/overhead" "$SHORT" "$LONG" "$CALLS" "$ROUNDS"

gen() { cargo run -q -p stn-ffi --bin uniffi-bindgen -- generate --no-format --library "$LIB" --language "$1" --out-dir "$OUT/$1"; }
KOTLIN="$TOOLS/node_modules/kotlin-compiler"
if [ -x "$KOTLIN/bin/kotlinc" ] && [ -f /usr/share/java/jna.jar ]; then
    gen kotlin
    CP="/usr/share/java/jna.jar:$KOTLIN/lib/kotlinx-coroutines-core-jvm.jar:$KOTLIN/lib/kotlin-stdlib.jar"
    "$KOTLIN/bin/kotlinc" -nowarn -classpath "$CP" -d "$OUT/bench.jar" "$OUT/kotlin/stn/stn_ffi.kt" stn-ffi/bench/Overhead.kt
    java -Djna.library.path="$(dirname "$LIB")" -cp "$OUT/bench.jar:$CP" stn.bench.OverheadKt "$SHORT" "$LONG" "$CALLS" "$ROUNDS"
else
    echo "kotlin: skipped (run bash .ci/ffi-setup.sh)"
fi
PYTHON="$TOOLS/venv/bin/python"
[ -x "$PYTHON" ] || PYTHON=python3
gen python
cp "$LIB" "$OUT/python/"
PYTHONPATH="$OUT/python" PYTHONDONTWRITEBYTECODE=1 "$PYTHON" stn-ffi/bench/overhead.py "$SHORT" "$LONG" "$CALLS" "$ROUNDS"
