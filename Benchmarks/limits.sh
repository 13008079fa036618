#!/usr/bin/env bash
# ferryd's bandwidth limits, measured: three background downloads of priority 0.25, 0.5 and 0.75 under
# one daemon-wide limit, then the limit doubled while they run. Prints each task's rate, its share
# against the 1 : 2 : 3 its priority asks for, and the total against the limit over each window (the
# issue's goal: within 5 % over 10 s). Timing figures, so a benchmark, not a test.
#
#   Benchmarks/limits.sh [LIMIT_BYTES_PER_SECOND] [SECONDS]   (default 3000000 and 10)
#   BIN=.build/debug Benchmarks/limits.sh                      (skip the release build)
#   Benchmarks/limits.sh --link [RATE_MBIT]                    (root: over a real shaped link, below)
#
# --link runs server, ferryd and ferry in a network namespace of their own whose loopback the kernel
# shapes with tbf (default 32 Mbit/s, 4 MB/s): one download with no ferryd limit (the link decides),
# then under `ferry limit --global 1M` (ferryd decides). The namespace has no default route, so
# ferryd reports itself offline; the task still runs, its host being this machine.
set -euo pipefail
if [ "${1:-}" = "--link" ]; then
    rate=${2:-32}
    cd "$(dirname "$0")/.."
    bin=${BIN:-$PWD/.build/release}
    [ -n "${BIN:-}" ] || for product in ferry ferryd ferry-testserver; do swift build -c release --product "$product" >/dev/null; done
    ns=ferry-link-$$
    ip netns add "$ns"
    trap 'ip netns del "$ns" 2>/dev/null || true' EXIT
    ip netns exec "$ns" ip link set lo up mtu 1500
    ip netns exec "$ns" tc qdisc add dev lo root tbf rate "${rate}mbit" burst 64kb latency 50ms
    ip netns exec "$ns" env BIN="$bin" bash -c '
        set -euo pipefail
        work=$(mktemp -d /tmp/ferry-link-XXXXXX); export FERRY_HOME=$work/home
        "$BIN/ferry-testserver" --port 0 >"$work/server.out" 2>&1 & server=$!
        trap "\"$BIN/ferry\" daemon stop >/dev/null 2>&1 || true; kill $server 2>/dev/null || true; rm -rf $work" EXIT
        for _ in $(seq 50); do grep -q "listening on" "$work/server.out" 2>/dev/null && break; sleep 0.1; done
        origin=$(grep -o "http://127.0.0.1:[0-9]*" "$work/server.out" | head -1)
        "$BIN/ferry" daemon start >/dev/null
        "$BIN/ferry" daemon network | head -2
        run() {  # run LABEL: a 12 MB background download, timed
            local start end id
            start=$(date +%s.%N)
            id=$("$BIN/ferry" get --background -o "$work/f$RANDOM" "$origin/bytes/12000000?seed=$RANDOM")
            "$BIN/ferry" wait "$id" --timeout 120 >/dev/null
            end=$(date +%s.%N)
            python3 -c "import sys; t=float(sys.argv[2])-float(sys.argv[1]); print(f\"$1: 12 MB in {t:.2f} s = {12/t:.2f} MB/s\")" "$start" "$end"
        }
        run "link only (tbf)"
        "$BIN/ferry" limit --global 1M >/dev/null
        run "ferry limit --global 1M (1.05 MB/s) on the same link"
    '
    exit 0
fi
limit=${1:-3000000}
seconds=${2:-10}
cd "$(dirname "$0")/.."
bin=${BIN:-$PWD/.build/release}
if [ -z "${BIN:-}" ]; then
    echo "building (release)..." >&2
    for product in ferry ferryd ferry-testserver; do swift build -c release --product "$product" >/dev/null; done
fi
work=$(mktemp -d /tmp/ferry-limits-XXXXXX)
export FERRY_HOME=$work/home
cleanup() {
    "$bin/ferry" daemon stop >/dev/null 2>&1 || true
    [ -n "${server:-}" ] && kill "$server" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
"$bin/ferry-testserver" --port 0 >"$work/server.out" 2>&1 &
server=$!
for _ in $(seq 50); do grep -q "listening on" "$work/server.out" 2>/dev/null && break; sleep 0.1; done
origin=$(grep -o "http://127.0.0.1:[0-9]*" "$work/server.out" | head -1)
"$bin/ferry" daemon start >/dev/null
"$bin/ferry" limit --global "$limit" >/dev/null
size=$((limit * seconds * 3))
for priority in 0.25 0.5 0.75; do
    "$bin/ferry" get --background --priority "$priority" -o "$work/p$priority" "$origin/bytes/$size?seed=${priority#0.}" >/dev/null
done

sample() { "$bin/ferry" ls --json | python3 -c 'import json,sys,time; print(time.monotonic(), *[t["bytesReceived"] for t in json.load(sys.stdin)])'; }
window() {  # window LABEL LIMIT SECONDS
    local a b
    a=$(sample)
    sleep "$3"
    b=$(sample)
    python3 - "$1" "$2" "$a" "$b" <<'PY'
import sys
label, limit = sys.argv[1], float(sys.argv[2])
a = [float(x) for x in sys.argv[3].split()]
b = [float(x) for x in sys.argv[4].split()]
t = b[0] - a[0]
rates = [(y - x) / t for x, y in zip(a[1:], b[1:])]
total = sum(rates)
shares = " : ".join(f"{r / rates[0]:.2f}" for r in rates) if rates[0] > 0 else "-"
print(f"{label}: {t:.1f} s, limit {limit / 1e6:.2f} MB/s")
for p, r in zip(("0.25", "0.5 ", "0.75"), rates):
    print(f"  priority {p}  {r / 1e6:6.3f} MB/s")
print(f"  shares {shares} (asked 1 : 2 : 3); total {total / 1e6:.3f} MB/s = {total / limit:.3f} of the limit")
PY
}
sleep 2  # every task running, sockets' buffers full
window "limit" "$limit" "$seconds"
"$bin/ferry" limit --global "$((limit * 2))" >/dev/null
sleep 1
window "limit doubled while running" "$((limit * 2))" "$seconds"
