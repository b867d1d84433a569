#!/bin/sh
# curl as an external client of the delay lab:
#
#   stn lab --scenario stn-lab/scenarios/loss30.toml --client curl=stn-lab/clients/curl.sh
#
# One fresh connection per call, as OkHttp 2.x ran in the Mars benchmark: a
# new curl process per call (nothing pooled), `Connection: close`, a 10 s
# connect timeout, 10 s without a byte as the read timeout, no retry, the
# server's IP literal. The lab gives the server and the workload in STN_LAB_*
# variables (docs/lab.md, "Any client"); this prints the one JSON line the lab
# reads. Diagnostics go to stderr. Needs curl, awk, sort and GNU date (%N).
set -u
: "${STN_LAB_URL:?run by stn lab --scenario FILE --client NAME=COMMAND}"
connect_timeout=${CURL_CONNECT_TIMEOUT_S:-10}
read_timeout=${CURL_READ_TIMEOUT_S:-10}

body=$(mktemp) || exit 1
calls=$(mktemp) || exit 1
trap 'rm -f "$body" "$calls"' EXIT
head -c "$STN_LAB_REQUEST_BYTES" /dev/zero | tr '\0' x >"$body"

# Nanoseconds on the wall clock.
now() { date +%s%N; }

successes=0
attempts=0
first=
last=
budget_ns=$(awk -v s="$STN_LAB_RUN_BUDGET_S" 'BEGIN { printf "%.0f", s * 1e9 }')
while [ "$successes" -lt "$STN_LAB_SUCCESSES" ] && [ "$attempts" -lt "$STN_LAB_MAX_CALLS" ]; do
    start=$(now)
    [ -n "$first" ] || first=$start
    [ $((start - first)) -ge "$budget_ns" ] && break
    # `%{http_code} %{size_download} %{time_total}`; curl prints it also when
    # the call fails (code 000).
    out=$(curl --silent --show-error --output /dev/null \
        --write-out '%{http_code} %{size_download} %{time_total}' \
        --connect-timeout "$connect_timeout" \
        --speed-limit 1 --speed-time "$read_timeout" \
        --max-time "$STN_LAB_CALL_TIMEOUT_S" \
        --header 'Connection: close' \
        --header 'Content-Type: application/octet-stream' \
        --data-binary @"$body" "$STN_LAB_URL")
    last=$(now)
    attempts=$((attempts + 1))
    set -- $out
    ok=0
    if [ "${1:-}" = 200 ] && [ "${2:-}" = "$STN_LAB_RESPONSE_BYTES" ]; then
        ok=1
        successes=$((successes + 1))
    fi
    # The call's duration, ms: curl's own clock when it gave one.
    echo "$ok ${3:-0} $start $last" >>"$calls"
done

awk -v successes="$successes" -v attempts="$attempts" \
    -v total_ns=$((${last:-0} - ${first:-0})) '
    function rank(p, n) { r = int((p * n + 99) / 100); return r < 1 ? 1 : r }
    {
        ms = $2 * 1000
        if (ms <= 0) ms = ($4 - $3) / 1e6
        all[NR] = ms
        if ($1 == 1) ok[++n] = ms
    }
    END {
        # Insertion sort: a run has at most a few thousand calls.
        for (i = 2; i <= n; i++) {
            v = ok[i]
            for (j = i - 1; j >= 1 && ok[j] > v; j--) ok[j + 1] = ok[j]
            ok[j + 1] = v
        }
        list = ""
        for (i = 1; i <= NR; i++) list = list (i > 1 ? "," : "") sprintf("%.3f", all[i])
        if (n > 0) {
            p50 = sprintf("%.3f", ok[rank(50, n)])
            p95 = sprintf("%.3f", ok[rank(95, n)])
        } else {
            p50 = "null"
            p95 = "null"
        }
        printf "{\"successes\": %d, \"attempts\": %d, \"total_s\": %.6f, \"p50_ms\": %s, \"p95_ms\": %s, \"calls_ms\": [%s]}\n",
            successes, attempts, total_ns / 1e9, p50, p95, list
    }' "$calls"
