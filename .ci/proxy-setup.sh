#!/usr/bin/env bash
# Installs the real counterparts of the proxy and NAT64 tests: tinyproxy
# (HTTP CONNECT with Basic auth), dante-server and microsocks (SOCKS5) for
# stn-testkit's proxy suite (stn-tokio/tests/proxies.rs,
# stn-asyncstd/tests/proxies_asyncstd.rs), and tayga (a NAT64 translator on
# a TUN device) for stn-cli/tests/nat64.rs. Never fails CI: a test whose
# binary is still missing skips with a message. The packages' own services
# are not needed (the tests start their own instances on free ports).
set -uo pipefail

missing=()
command -v tinyproxy >/dev/null 2>&1 || [ -x /usr/bin/tinyproxy ] || missing+=(tinyproxy)
[ -x /usr/sbin/danted ] || missing+=(dante-server)
command -v microsocks >/dev/null 2>&1 || [ -x /usr/bin/microsocks ] || missing+=(microsocks)
[ -x /usr/sbin/tayga ] || missing+=(tayga)
if [ "${#missing[@]}" -eq 0 ]; then
    echo "proxy-setup: ready (tinyproxy, danted, microsocks, tayga)"
    exit 0
fi
if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "proxy-setup: cannot install ${missing[*]} (not root or no apt-get); those tests will skip"
    exit 0
fi
echo "proxy-setup: installing ${missing[*]}"
{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } \
    >/dev/null 2>&1 || echo "proxy-setup: could not install ${missing[*]}; those tests will skip"
exit 0
