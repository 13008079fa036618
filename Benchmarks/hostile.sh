#!/usr/bin/env bash
# What hostile servers cost Ferry, measured (docs/RELIABILITY.md, "Hostile servers and users"): peak RSS
# and wall time of `ferry get` and of ferryd against each attack of Tests/Scripts/hostile_peer.py
# (HTTP/1.1) and Tests/Scripts/hostile_h2_peer.py (HTTP/2 over TLS). The bounds the project holds to:
# at most 100 MB for either, and a CONTINUATION flood over within 15 s. Figures, so a benchmark.
#
#   Benchmarks/hostile.sh                 (builds the release products first)
#   BIN=.build/debug Benchmarks/hostile.sh
#   BOMB_MIB=10240 Benchmarks/hostile.sh  (the gzip bomb's size in MiB; default 1024)
#
# Needs python3 with h2 (pip install h2) and openssl.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-$PWD/.build/release}
[ -n "${BIN:-}" ] || for product in ferry ferryd; do swift build -c release --product "$product" >/dev/null; done
bomb=${BOMB_MIB:-1024}

work=$(mktemp -d /tmp/ferry-hostile-XXXXXX)
peers=()
cleanup() {
    FERRY_HOME=$work/home "$bin/ferry" daemon stop >/dev/null 2>&1 || true
    for pid in "${peers[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$work/key.pem" -out "$work/cert.pem" \
    -days 1 -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" 2>/dev/null
python3 Tests/Scripts/hostile_peer.py "$work/cert.pem" "$work/key.pem" >"$work/h1.port" 2>/dev/null & peers+=($!)
python3 Tests/Scripts/hostile_h2_peer.py "$work/cert.pem" "$work/key.pem" >"$work/h2.port" 2>/dev/null & peers+=($!)
for file in h1 h2; do
    for _ in $(seq 100); do [ -s "$work/$file.port" ] && break; sleep 0.1; done
done
h1="http://127.0.0.1:$(head -1 "$work/h1.port")"
h2="https://127.0.0.1:$(head -1 "$work/h2.port")"
# The bomb is compressed once by the peer; ask for it once before measuring.
curl -s "$h1/gzip/bomb/$bomb" -o /dev/null

attacks=(
    "gzip bomb ($bomb MiB from $((bomb)) KiB)|$h1/gzip/bomb/$bomb|--compressed"
    "HTTP/2 PING flood|$h2/ping-flood|"
    "HTTP/2 SETTINGS flood|$h2/settings-flood|"
    "HTTP/2 CONTINUATION flood|$h2/continuation-flood|"
    "206 to a request without Range|$h1/partial|"
    "gzip with trailing garbage|$h1/gzip/garbage|--compressed"
    "HTTP/2 second :status|$h2/double-status|"
)

printf '%-34s %-30s %-30s\n' "attack" "ferry get: exit, s, peak RSS" "ferryd: state, s, peak RSS"
for attack in "${attacks[@]}"; do
    IFS='|' read -r name url flags <<<"$attack"
    # shellcheck disable=SC2086
    fg_exit=0
    /usr/bin/time -o "$work/time" -f "%e %M" "$bin/ferry" get -q --cacert "$work/cert.pem" --max-time 60 $flags "$url" \
        -o /dev/null 2>"$work/fg.err" || fg_exit=$?
    read -r fg_seconds fg_kb < <(tail -1 "$work/time")
    # A fresh ferryd per attack: its peak is this attack's alone.
    export FERRY_HOME=$work/home
    rm -rf "$FERRY_HOME"
    "$bin/ferry" daemon start >/dev/null
    pid=$("$bin/ferry" daemon status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
    started=$(date +%s.%N)
    # shellcheck disable=SC2086
    id=$("$bin/ferry" get --background --cacert "$work/cert.pem" --tries 1 $flags "$url" -o "$work/bg.out")
    "$bin/ferry" wait "$id" >/dev/null 2>&1 && state=done || state=failed
    ended=$(date +%s.%N)
    bg_kb=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
    "$bin/ferry" daemon stop >/dev/null
    rm -f "$work/bg.out"
    printf '%-34s %-30s %-30s\n' "$name" \
        "$fg_exit, ${fg_seconds}s, $((fg_kb / 1024)) MiB" \
        "$state, $(python3 -c "print(f'{$ended - $started:.1f}')")s, $((bg_kb / 1024)) MiB"
done
