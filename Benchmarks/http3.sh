#!/usr/bin/env bash
# HTTP/3 against the reference client, on one caddy in one run (issue 42): Ferry's HTTP/3 against
# ngtcp2's client (gtlsclient, Debian's ngtcp2-client), and Ferry's HTTP/2 and curl's beside them on
# the same server, in alternating rounds, every download compared with the served file. Prints medians
# (min–max), CPU seconds (user + system), peak RSS and ratios. docs/BENCHMARKS.md explains the figures.
#
#   Benchmarks/http3.sh [ROUNDS]      (default 5; installs caddy, ngtcp2-client, curl if missing)
#
# SMALL=N sets the number of 1 KiB requests (default 20,000), 16 in flight over one connection.
# With Python's aioquic (PyPI), a 64 MiB upload to its server (Tests/Scripts/h3_peer.py) too: Ferry's
# put against gtlsclient --data, checked by the SHA-256 the server computes (aioquic, in Python, sets
# the rate; the CPU seconds are the clients' own).
# Benchmarks/run.sh runs this at its end (HTTP3=0 there leaves it out).
set -euo pipefail
rounds=${1:-5}
small_count=${SMALL:-20000}
cd "$(dirname "$0")/.."
root=$PWD

need=()
for tool in caddy:caddy gtlsclient:ngtcp2-client curl:curl openssl:openssl; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || need+=("${tool##*:}")
done
if [ ${#need[@]} -gt 0 ]; then
    echo "installing from Debian: ${need[*]}" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
echo "building (release)..." >&2
for product in ferry ferry-bench; do swift build -c release --product "$product" >/dev/null; done
bin=$root/.build/release

work=$(mktemp -d /tmp/ferry-h3bench-XXXXXX)
shm=$(mktemp -d /dev/shm/ferry-h3bench-XXXXXX)
caddy_pid=
peer_pid=
cleanup() {
    [ -n "$caddy_pid" ] && kill "$caddy_pid" 2>/dev/null || true
    [ -n "$peer_pid" ] && kill "$peer_pid" 2>/dev/null || true
    rm -rf "$work" "$shm"
}
trap cleanup EXIT
mkdir -p "$work/www" "$work/dl"
head -c 1073741824 /dev/urandom >"$work/www/big.bin"
head -c 1024 /dev/urandom >"$work/www/small.bin"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$work/key.pem" -out "$work/cert.pem" \
    -days 2 -subj "/CN=localhost" -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" 2>/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$work/Caddyfile" <<CONF
{
    admin off
    auto_https disable_redirects
    servers {
        protocols h1 h2 h3
    }
}
https://localhost:$port {
    bind 127.0.0.1
    tls $work/cert.pem $work/key.pem
    root * $work/www
    file_server
}
CONF
HOME=$work XDG_DATA_HOME=$work/data XDG_CONFIG_HOME=$work/config caddy run --config "$work/Caddyfile" --adapter caddyfile \
    >"$work/caddy.log" 2>&1 &
caddy_pid=$!
for _ in $(seq 100); do curl -sSf --cacert "$work/cert.pem" -o /dev/null "https://localhost:$port/small.bin" && break; sleep 0.05; done
big="https://localhost:$port/big.bin"
small="https://localhost:$port/small.bin"
export SSL_CERT_FILE=$work/cert.pem
for _ in $(seq "$small_count"); do printf 'url = "%s"\noutput = "/dev/null"\n' "$small"; done >"$work/curl.list"

. "$root/Benchmarks/measure.sh"
MB=1073.741824

uploads=0
if python3 -c 'import aioquic' 2>/dev/null; then
    uploads=1
    head -c 67108864 /dev/urandom >"$work/up.bin"
    up_sum=$(sha256sum "$work/up.bin" | cut -d' ' -f1)
    python3 "$root/Tests/Scripts/h3_peer.py" "$work/cert.pem" "$work/key.pem" >"$work/peer.port" 2>"$work/peer.log" &
    peer_pid=$!
    for _ in $(seq 100); do [ -s "$work/peer.port" ] && break; sleep 0.05; done
    peer_port=$(head -1 "$work/peer.port")
    up="https://localhost:$peer_port/upload"
    UPMB=67.108864
else
    echo "no aioquic (pip install aioquic): the upload row is left out" >&2
fi
# upverify NAME: the server logged the last upload with the file's length and SHA-256 (uploads.log).
upverify() {
    [ "$(tail -1 "$work/uploads.log")" = "67108864 $up_sum" ] || { echo "$1: the server did not receive the upload whole" >&2; exit 1; }
}

for round in $(seq "$rounds"); do
    echo "round $round of $rounds" >&2
    runs=(
        'measure big.ferry-h3 $MB "$bin/ferry" get -q --http3-only "$big" -o "$shm/f"; verify "$shm/f" ferry-h3'
        'measure big.ngtcp2 $MB gtlsclient -q --no-quic-dump --no-http-dump --exit-on-all-streams-close --download "$shm" localhost "$port" "$big"; verify "$shm/big.bin" gtlsclient'
        'measure big.ferry-h2 $MB "$bin/ferry" get -q "$big" -o "$shm/f"; verify "$shm/f" ferry-h2'
        'measure big.curl-h2 $MB curl -sS --cacert "$work/cert.pem" -o "$shm/c" "$big"; verify "$shm/c" curl'
    )
    # The order turns by one each round, so no client always follows the same one.
    for index in "${!runs[@]}"; do
        eval "${runs[$(( (index + round - 1) % ${#runs[@]} ))]}"
    done
    if [ "$uploads" = 1 ]; then
        measure up.ferry-h3 $UPMB "$bin/ferry" put -q --http3-only "$work/up.bin" "$up"
        upverify ferry-h3
        measure up.ngtcp2 $UPMB gtlsclient -q --no-quic-dump --exit-on-all-streams-close --data "$work/up.bin" localhost "$peer_port" "$up"
        upverify gtlsclient
    fi
    n=$small_count
    FERRY_BENCH_HTTP=3 measure small.ferry-h3 "$n" "$bin/ferry-bench" gets-parallel "$small" "$n" 16
    grep -q "requests=$n " "$work/last.out"
    measure small.ferry-h2 "$n" "$bin/ferry-bench" gets-parallel "$small" "$n" 16
    grep -q "requests=$n " "$work/last.out"
    measure small.curl-h2 "$n" curl -sS --cacert "$work/cert.pem" --parallel --parallel-max 16 -K "$work/curl.list"
done

python3 - "$work" "$rounds" "$small_count" "$root/Benchmarks" <<'PY'
import json, os, sys
work, rounds, small, bench_dir = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
sys.path.insert(0, bench_dir)
from medians import table
groups = [
    ("https: 1 GiB GET to tmpfs from caddy (MB/s)", "big", ["ferry-h3", "ngtcp2", "ferry-h2", "curl-h2"], "ngtcp2"),
    (f"https: {small:,} x 1 KiB GETs from caddy, 16 in flight on one connection (req/s)", "small", ["ferry-h3", "ferry-h2", "curl-h2"], "ferry-h2"),
]
if os.path.exists(os.path.join(work, "up.ferry-h3")):
    groups.append(("https: 64 MiB upload to aioquic over HTTP/3 (MB/s; aioquic sets the rate, CPU s are the client's)", "up", ["ferry-h3", "ngtcp2"], "ngtcp2"))
print(f"\nmedians of {rounds} interleaved rounds; caddy on 127.0.0.1, one server for every row\n")
results = table(work, groups, prefix="h3-")
os.makedirs(os.path.join(bench_dir, "results"), exist_ok=True)
with open(os.path.join(bench_dir, "results", "http3-latest.json"), "w") as out:
    json.dump({"rounds": int(rounds), "small_requests": small, "rows": results}, out, indent=1, sort_keys=True)
PY
