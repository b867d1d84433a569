#!/usr/bin/env bash
# Prepares the real-kernel lab (stn-lab/tests/lab.rs, `stn lab`): it needs
# root, iproute2 (`ip`) and nftables (`nft`); the external-client test of the
# delay lab (stn-lab/tests/lab_emulator.rs) also needs curl. Installs what is
# missing where it can; never fails CI (the lab tests skip with a message
# when a tool is still missing or this is not root).
set -uo pipefail

if [ "$(id -u)" != "0" ]; then
    echo "lab-setup: not root; the real-kernel lab test will skip"
    exit 0
fi
missing=()
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v nft >/dev/null 2>&1 || missing+=(nftables)
command -v curl >/dev/null 2>&1 || missing+=(curl)
if [ "${#missing[@]}" -gt 0 ]; then
    if command -v apt-get >/dev/null 2>&1; then
        echo "lab-setup: installing ${missing[*]}"
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } \
            >/dev/null 2>&1 || echo "lab-setup: could not install ${missing[*]}; the lab test will skip"
    else
        echo "lab-setup: no apt-get to install ${missing[*]}; the lab test will skip"
    fi
fi
# The delay lab (stn-lab/tests/lab_emulator.rs) needs the TUN device node.
if [ ! -e /dev/net/tun ]; then
    mkdir -p /dev/net && mknod /dev/net/tun c 10 200 2>/dev/null \
        || echo "lab-setup: no /dev/net/tun; the delay lab test will skip"
fi
# Stale lab namespaces are deleted by the lab itself at start (deleting them
# here could break a lab that is running).
if command -v nft >/dev/null 2>&1 && command -v ip >/dev/null 2>&1; then
    echo "lab-setup: ready ($(nft --version))"
fi
exit 0
