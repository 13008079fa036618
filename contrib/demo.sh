#!/usr/bin/env bash
# A tour of `ferry` that needs no internet: builds the release binaries, starts ferry-testserver on
# 127.0.0.1 and a ferryd of its own (FERRY_HOME in a temporary directory), then downloads, interrupts and
# continues, hands downloads to the daemon, waits for them, and uploads. Everything goes at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

swift build -c release --product ferry >/dev/null
swift build -c release --product ferryd >/dev/null
swift build -c release --product ferry-testserver >/dev/null
bin=$PWD/.build/release

work=$(mktemp -d /tmp/ferry-demo-XXXXXX)
export FERRY_HOME=$work/home
mkdir -p "$FERRY_HOME"
"$bin/ferry-testserver" --port 0 >"$work/server.log" 2>&1 &
server=$!
cleanup() {
    "$bin/ferry" daemon stop >/dev/null 2>&1 || true
    kill "$server" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
for _ in $(seq 100); do grep -q '^listening on' "$work/server.log" && break; sleep 0.05; done
url=$(sed -n 's/^listening on //p' "$work/server.log" | head -n 1)
cd "$work"
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

step ferry get "$url/bytes/300000000?throttle=100000000" -o big.bin
"$bin/ferry" get "$url/bytes/300000000?throttle=100000000" -o big.bin

step "ferry get ... -o part.bin   (interrupted after 1.5 s)"
"$bin/ferry" get "$url/bytes/200000000?throttle=40000000" -o part.bin &
sleep 1.5
kill -INT $! && wait $! || true
ls -l part.bin.ferry-part
step ferry get -C "$url/bytes/200000000?throttle=40000000" -o part.bin
"$bin/ferry" get -C "$url/bytes/200000000?throttle=40000000" -o part.bin

step ferry get --background "$url/bytes/50000000?throttle=20000000" "$url/bytes/3000" --dir .
"$bin/ferry" get --background "$url/bytes/50000000?throttle=20000000" "$url/bytes/3000" --dir .
step ferry ls
"$bin/ferry" ls
step ferry wait --all
"$bin/ferry" wait --all && echo "all done"
step ferry ls
"$bin/ferry" ls

step ferry put big.bin "$url/upload"
"$bin/ferry" put big.bin "$url/upload"
echo
step ferry daemon status
"$bin/ferry" daemon status
