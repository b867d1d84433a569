#!/usr/bin/env bash
# What the binding tests (stn-ffi/tests/bindings.rs) need, from the package
# registries only: a JDK (if there is no `java`), JNA (Debian), the Kotlin
# compiler with its stdlib and kotlinx-coroutines (npm), pytest (PyPI). The
# npm and pip packages go under the target directory, nothing is cached
# elsewhere; the tests find them there. Guarded: each step only runs when
# its tool is missing, so a second run costs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

TOOLS="${CARGO_TARGET_DIR:-$PWD/target}/ffi-tools"
KOTLIN_VERSION=2.4.20
PYTEST_VERSION=9.2.0
mkdir -p "$TOOLS"

apt_install() {
    if [ "$(id -u)" -ne 0 ]; then
        echo "ffi-setup: not root, cannot apt-get install $*" >&2
        return 1
    fi
    if [ -z "${FFI_APT_UPDATED:-}" ]; then
        apt-get update -qq
        FFI_APT_UPDATED=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

if ! command -v java >/dev/null 2>&1; then
    apt_install default-jre-headless
fi
if [ ! -f /usr/share/java/jna.jar ]; then
    apt_install libjna-java
fi
if ! command -v npm >/dev/null 2>&1; then
    apt_install npm
fi
if [ ! -x "$TOOLS/node_modules/kotlin-compiler/bin/kotlinc" ]; then
    npm install --prefix "$TOOLS" --cache "$TOOLS/npm-cache" --no-audit --no-fund --silent \
        "kotlin-compiler@$KOTLIN_VERSION"
    rm -rf "$TOOLS/npm-cache"
fi
if ! command -v python3 >/dev/null 2>&1; then
    apt_install python3 python3-venv
fi
if [ ! -x "$TOOLS/venv/bin/python" ] || ! "$TOOLS/venv/bin/python" -c "import pytest" 2>/dev/null; then
    python3 -m venv "$TOOLS/venv" || { apt_install python3-venv && python3 -m venv "$TOOLS/venv"; }
    "$TOOLS/venv/bin/pip" install --quiet --no-cache-dir --disable-pip-version-check "pytest==$PYTEST_VERSION"
fi

java -version 2>&1 | head -1
"$TOOLS/node_modules/kotlin-compiler/bin/kotlinc" -version 2>&1 | tail -1
"$TOOLS/venv/bin/python" -m pytest --version
