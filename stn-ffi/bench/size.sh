#!/usr/bin/env bash
# The bindings library's size: release build for this machine (x86_64 Linux
# here) without the generator (what an app ships), stripped, by ELF section,
# and its code and data symbols summed by the crate their (demangled) names
# start with (`nm`; cargo-bloat refuses a package whose crate types include
# `lib`). Symbols stn's own code instantiates from a generic crate (tokio's
# task harness for the driver, say) count for that crate.
#
#   bash stn-ffi/bench/size.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
TARGET="${CARGO_TARGET_DIR:-$PWD/target}"
OUT="$TARGET/ffi-size"
mkdir -p "$OUT"
cargo build -q --release -p stn-ffi --lib --no-default-features
strip -o "$OUT/libstn_ffi.no-tls.stripped.so" "$TARGET/release/libstn_ffi.so"
echo "release, stripped, without TLS: $(stat -c %s "$OUT/libstn_ffi.no-tls.stripped.so") bytes"
cargo build -q --release -p stn-ffi --lib --no-default-features --features tls
cp "$TARGET/release/libstn_ffi.so" "$OUT/libstn_ffi.so"
strip -o "$OUT/libstn_ffi.stripped.so" "$OUT/libstn_ffi.so"
echo "release, stripped, with TLS: $(stat -c %s "$OUT/libstn_ffi.stripped.so") bytes"
echo
size -A "$OUT/libstn_ffi.stripped.so" | awk '$1 ~ /^\./ && $2 > 16384 { printf "%-20s %9d\n", $1, $2 }'
echo
nm -S -C --defined-only "$OUT/libstn_ffi.so" | python3 -c '
import re, sys
STD = {"core", "alloc", "std", "T"}
by_crate, total = {}, 0
for line in sys.stdin:
    parts = line.rstrip("\n").split(" ", 3)
    if len(parts) < 4 or parts[2] not in "tTrRdDbB":
        continue
    size, name = int(parts[1], 16), parts[3]
    if "::" not in name:
        crate = "(uniffi scaffolding)" if re.match(r"(uniffi|UNIFFI|ffi_stn_ffi)", name) else "(C and assembly: ring, builtins)"
    else:
        # A generic of core/alloc/std counts for the first other crate in
        # its name (`drop_in_place<stn_proto::Engine>` is stn_proto code).
        crates = re.findall(r"(?:^|[^A-Za-z0-9_:])([A-Za-z_][A-Za-z0-9_]*)::", name)
        crate = next((c for c in crates if c not in STD), crates[0] if crates else "(other)")
    by_crate[crate] = by_crate.get(crate, 0) + size
    total += size
print(f"symbols by crate (of {total} bytes in named symbols):")
for crate, size in sorted(by_crate.items(), key=lambda kv: -kv[1])[:18]:
    print(f"  {crate:<36} {size:9d}  {100 * size / total:5.1f}%")
'
