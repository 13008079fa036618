#!/usr/bin/env bash
# Segmented downloads and parallel chunked uploads (issue 8, SPEC S10.2, S4.2–S4.5), against
# ferry-testserver on 127.0.0.1 throttling every connection to the same rate (so the figures measure how
# well the connections are used, not the loopback's speed):
#   - one file downloaded over 1 and 8 connections with ferry, and over 8 with aria2c -x8 -s8;
#   - one file uploaded with tus in chunks, 1 at a time (serial) and 4 at once (ferry-bench upload-chunked),
#     the server reading each connection at the rate (read_throttle).
# Interleaved, every file compared with the served or received bytes; prints medians (min–max) and the
# ratios issue 8 asks for.
#
#   Benchmarks/segmented.sh [ROUNDS] [MIB] [BYTES_PER_SECOND_PER_CONNECTION]
#   (defaults 5, 24 and 2000000; installs aria2 from Debian if missing)
set -euo pipefail
rounds=${1:-5}
mib=${2:-24}
rate=${3:-2000000}
cd "$(dirname "$0")/.."
root=$PWD

if ! command -v aria2c >/dev/null 2>&1; then
    echo "installing aria2 from Debian" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq aria2 >/dev/null
fi
echo "building (release)..." >&2
for product in ferry ferry-testserver ferry-bench; do swift build -c release --product "$product" >/dev/null; done
bin=$root/.build/release

work=$(mktemp -d /tmp/ferry-segmented-XXXXXX)
cleanup() {
    [ -n "${server_pid:-}" ] && kill "$server_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$bin/ferry-testserver" --port "$port" --no-tls --no-resumable >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$port/bytes/1" 2>/dev/null && break; sleep 0.05; done
size=$((mib * 1048576))
url="http://127.0.0.1:$port/bytes/$size?seed=8&throttle=$rate"
# The served bytes, for comparison: fetched once, unthrottled.
curl -sf -o "$work/expected" "http://127.0.0.1:$port/bytes/$size?seed=8"

measure() {
    local name=$1 file=$2; shift 2
    local start end
    start=$(date +%s%N)
    "$@" >"$work/last.out" 2>"$work/last.err" || { echo "$name failed:" >&2; cat "$work/last.err" >&2; exit 1; }
    end=$(date +%s%N)
    cmp -s "$file" "$work/expected" || { echo "$name: the file differs from the served one" >&2; exit 1; }
    rm -f "$file"
    echo "$size $(( end - start ))" | awk '{ printf "%.3f\n", $1 / ($2 / 1e9) / 1e6 }' >>"$work/$name"
}

upload="http://127.0.0.1:$port/tus/?read_throttle=$rate"
measure_upload() {
    local name=$1 width=$2 start end
    start=$(date +%s%N)
    "$bin/ferry-bench" upload-chunked "$upload&keep=$name" "$work/expected" "$width" >"$work/last.out" 2>"$work/last.err" || {
        echo "$name failed:" >&2; cat "$work/last.err" >&2; exit 1
    }
    end=$(date +%s%N)
    curl -sf -o "$work/received" "http://127.0.0.1:$port/uploads/$name"
    cmp -s "$work/received" "$work/expected" || { echo "$name: the server received other bytes" >&2; exit 1; }
    echo "$size $(( end - start ))" | awk '{ printf "%.3f\n", $1 / ($2 / 1e9) / 1e6 }' >>"$work/$name"
}

for round in $(seq "$rounds"); do
    echo "round $round of $rounds" >&2
    measure_upload up-serial 1
    measure_upload up-x4 4
    measure ferry-x1 "$work/f1" "$bin/ferry" get -q -x 1 "$url" -o "$work/f1"
    measure ferry-x8 "$work/f8" "$bin/ferry" get -q -x 8 "$url" -o "$work/f8"
    measure aria2-x8 "$work/a8" aria2c -q -x8 -s8 --min-split-size=1M --allow-overwrite=true \
        --file-allocation=none -d "$work" -o a8 "$url"
done

python3 - "$work" "$rounds" "$mib" "$rate" <<'PY'
import os, statistics, sys
work, rounds, mib, rate = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
rows = {}
for name in ["ferry-x1", "ferry-x8", "aria2-x8", "up-serial", "up-x4"]:
    values = [float(line) for line in open(os.path.join(work, name))]
    rows[name] = (statistics.median(values), min(values), max(values))
print(f"{mib} MiB from ferry-testserver, every connection throttled to {rate / 1e6:.1f} MB/s; {rounds} rounds, medians (min-max)")
print(f"{'':24} {'MB/s':>8} {'range':>16}")
for name, (median, low, high) in rows.items():
    print(f"{name:24} {median:8.2f} {low:7.2f}-{high:<8.2f}")
print(f"ferry -x8 / ferry -x1: {rows['ferry-x8'][0] / rows['ferry-x1'][0]:.2f}x (goal >= 7)")
print(f"ferry -x8 / aria2c -x8 -s8: {rows['ferry-x8'][0] / rows['aria2-x8'][0]:.2f}x (goal >= 1)")
print(f"upload, 4 chunks in flight / serial: {rows['up-x4'][0] / rows['up-serial'][0]:.2f}x (goal >= 3.8)")
PY
