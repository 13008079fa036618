#!/usr/bin/env bash
# Ferry against curl, aria2, wget, AsyncHTTPClient and Foundation's URLSession on the same work, from
# release builds, interleaved, every output verified. Prints one table of medians (min–max), CPU seconds,
# peak RSS and Ferry/peer ratios. docs/BENCHMARKS.md explains the figures.
#
#   Benchmarks/run.sh [ROUNDS]        (default 5; installs nginx, curl, aria2, wget from Debian if missing)
#
# The HTTP/3 rows come from Benchmarks/http3.sh, run at the end (HTTP3=0 leaves them out).
# SMALL=N sets the number of 1 KiB requests of the small-request rows (default 20,000: with 2,000, process
# start-up weighed on the result). The figures go to Benchmarks/results/latest.json and are compared with
# Benchmarks/thresholds.json (ratios to the peer, rates, peak RSS) by Benchmarks/thresholds.py: a row past
# its threshold is named at the end and the script exits 3. THRESHOLDS=update (or, after a run,
# `Benchmarks/thresholds.py update`) keeps this run's figures as the new thresholds.
#
# Server: nginx on 127.0.0.1 (sendfile, one worker) serving a 1 GiB file of random bytes and a 1 KiB
# file. The background rows use ferryd with a FERRY_HOME of their own.
set -euo pipefail
rounds=${1:-5}
small_count=${SMALL:-20000}
cd "$(dirname "$0")/.."
root=$PWD

need=()
for tool in nginx:nginx curl:curl aria2c:aria2 wget:wget openssl:openssl; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || [ -x "/usr/sbin/${tool%%:*}" ] || need+=("${tool##*:}")
done
if [ ${#need[@]} -gt 0 ]; then
    echo "installing from Debian: ${need[*]}" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
nginx=$(command -v nginx || echo /usr/sbin/nginx)

echo "building (release)..." >&2
for product in ferry ferryd ferry-bench urlsession-bench-ferry; do swift build -c release --product "$product" >/dev/null; done
(cd Benchmarks/Peers && swift build -c release >/dev/null)
# The portable build contrib/static-build.sh makes (the Swift runtime and Foundation linked in): the
# `ferry-static` rows, for what a process costs when it relocates one image instead of nine libraries.
swift build -c release --static-swift-stdlib --scratch-path .build-static --product ferry >/dev/null
bin=$root/.build/release
static=$root/.build-static/release
peers=$root/Benchmarks/Peers/.build/release

work=$(mktemp -d /tmp/ferry-bench-XXXXXX)
cleanup() {
    [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true
    FERRY_HOME=$work/home "$bin/ferry" daemon stop >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/www" "$work/home" "$work/out"
head -c 1073741824 /dev/urandom >"$work/www/big.bin"
head -c 1024 /dev/urandom >"$work/www/small.bin"
# nginx's worker may run as another user (www-data when started as root): let it read the files.
chmod 755 "$work" "$work/www"; chmod 644 "$work/www/big.bin" "$work/www/small.bin"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
tlsport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# A private CA and a leaf for 127.0.0.1, for the https rows (every client trusts the CA explicitly).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$work/ca.key" \
    -out "$work/ca.pem" -days 2 -subj "/CN=ferry bench CA" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$work/leaf.key" \
    -out "$work/leaf.csr" -subj "/CN=127.0.0.1" 2>/dev/null
printf "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n" >"$work/leaf.ext"
openssl x509 -req -in "$work/leaf.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -CAcreateserial \
    -out "$work/leaf.pem" -days 2 -extfile "$work/leaf.ext" 2>/dev/null
cat >"$work/nginx.conf" <<CONF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/nginx.err;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 100000;
    client_body_temp_path $work/tmp;
    proxy_temp_path $work/tmp; fastcgi_temp_path $work/tmp; uwsgi_temp_path $work/tmp; scgi_temp_path $work/tmp;
    server {
        listen 127.0.0.1:$port;
        listen 127.0.0.1:$tlsport ssl http2;
        ssl_certificate $work/leaf.pem;
        ssl_certificate_key $work/leaf.key;
        ssl_protocols TLSv1.2 TLSv1.3;
        root $work/www;
        # For the queued background tasks: 1 kB/s a connection.
        location /slow/ { alias $work/www/; limit_rate 1000; }
    }
}
CONF
mkdir -p "$work/tmp"
"$nginx" -c "$work/nginx.conf" -e "$work/nginx.err"
for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$port/small.bin" && break; sleep 0.05; done
big="http://127.0.0.1:$port/big.bin"
small="http://127.0.0.1:$port/small.bin"
sbig="https://127.0.0.1:$tlsport/big.bin"
ssmall="https://127.0.0.1:$tlsport/small.bin"
for _ in $(seq "$small_count"); do printf 'url = "%s"\noutput = "/dev/null"\n' "$small"; done >"$work/curl.list"
for _ in $(seq "$small_count"); do printf 'url = "%s"\noutput = "/dev/null"\n' "$ssmall"; done >"$work/curl-tls.list"
# tmpfs for the https rows that take the disk out of the picture.
shm=$(mktemp -d /dev/shm/ferry-bench-XXXXXX)
trap 'cleanup; rm -rf "$shm"' EXIT
export FERRY_HOME=$work/home
# The library and ferryd (started by the first background row, from this environment) trust the CA.
export SSL_CERT_FILE=$work/ca.pem

. "$root/Benchmarks/measure.sh"
MB=1073.741824  # the 1 GiB file in MB: rates below are MB/s

for round in $(seq "$rounds"); do
    echo "round $round of $rounds" >&2
    # 1 GiB to disk. The order turns by one each round: a writer's speed depends on what the kernel
    # still has to write back from the one before, so no program always goes first.
    disk_runs=(
        'measure disk.ferry-cli $MB "$bin/ferry" get -q "$big" -o "$work/out/f"; verify "$work/out/f" ferry'
        'measure disk.ferry-static $MB "$static/ferry" get -q "$big" -o "$work/out/s"; verify "$work/out/s" ferry-static'
        'measure disk.ferry-lib $MB "$bin/ferry-bench" download "$big" "$work/out/l"; verify "$work/out/l" ferry-bench'
        'measure disk.curl $MB curl -s -o "$work/out/c" "$big"; verify "$work/out/c" curl'
        'measure disk.aria2 $MB aria2c -q -x1 -s1 --allow-overwrite=true --file-allocation=none -d "$work/out" -o a "$big"; verify "$work/out/a" aria2c'
        'measure disk.wget $MB wget -q -O "$work/out/w" "$big"; verify "$work/out/w" wget'
        'measure disk.ahc $MB "$peers/ahc-bench" download "$big" "$work/out/h"; verify "$work/out/h" ahc-bench'
        'measure disk.urlsession $MB "$peers/urlsession-bench" download "$big" "$work/out/u"; verify "$work/out/u" urlsession-bench'
        'measure disk.ferry-urlsession $MB "$bin/urlsession-bench-ferry" download "$big" "$work/out/v"; verify "$work/out/v" urlsession-bench-ferry'
        'measure disk.ferryd $MB "$bin/ferry-bench" background-download "$big" "$work/out/d"; verify "$work/out/d" ferryd'
        # The disk's own durable write rate (the bound for ferryd, which must sync before handing over, D1).
        'measure disk.dd-durable $MB dd if="$work/www/big.bin" of="$work/out/dd" bs=1M conv=fdatasync status=none; verify "$work/out/dd" dd'
    )
    for index in "${!disk_runs[@]}"; do
        eval "${disk_runs[$(( (index + round - 1) % ${#disk_runs[@]} ))]}"
    done
    # 1 GiB discarded (the byte count is checked)
    measure null.ferry-lib $MB "$bin/ferry-bench" discard "$big"; grep -q "bytes=1073741824" "$work/last.out"
    measure null.curl $MB curl -s -o /dev/null "$big"
    measure null.ahc $MB "$peers/ahc-bench" discard "$big"; grep -q "bytes=1073741824" "$work/last.out"
    measure null.urlsession $MB "$peers/urlsession-bench" discard "$big"; grep -q "bytes=1073741824" "$work/last.out"
    measure null.ferry-urlsession $MB "$bin/urlsession-bench-ferry" discard "$big"; grep -q "bytes=1073741824" "$work/last.out"
    # Small GETs, sequential and 16 in flight
    n=$small_count
    measure seq.ferry-lib "$n" "$bin/ferry-bench" gets "$small" "$n"
    measure seq.curl "$n" curl -s -K "$work/curl.list"
    measure seq.ahc "$n" "$peers/ahc-bench" gets "$small" "$n"
    measure seq.urlsession "$n" "$peers/urlsession-bench" gets "$small" "$n"
    measure seq.ferry-urlsession "$n" "$bin/urlsession-bench-ferry" gets "$small" "$n"
    measure par.ferry-lib "$n" "$bin/ferry-bench" gets-parallel "$small" "$n" 16
    measure par.curl "$n" curl -s --parallel --parallel-max 16 -K "$work/curl.list"
    measure par.ahc "$n" "$peers/ahc-bench" gets-parallel "$small" "$n" 16
    measure par.urlsession "$n" "$peers/urlsession-bench" gets-parallel "$small" "$n" 16
    measure par.ferry-urlsession "$n" "$bin/urlsession-bench-ferry" gets-parallel "$small" "$n" 16
    # What a process needs before any work: 20 runs of --version back to back (runs a second, and the
    # peak RSS of one).
    measure version.ferry-cli 20 sh -c 'for _ in $(seq 20); do "$0" --version >/dev/null; done' "$bin/ferry"
    measure version.ferry-static 20 sh -c 'for _ in $(seq 20); do "$0" --version >/dev/null; done' "$static/ferry"
    measure version.curl 20 sh -c 'for _ in $(seq 20); do "$0" --version >/dev/null; done' curl
    # A fresh process for one 1 KiB file over https, as a script calls a download tool once per file: 20
    # runs back to back, trusting the private CA with --cacert and, apart, with -k (no chain check). Run
    # without SSL_CERT_FILE, as a user runs them (the distribution's bundle is there to be read).
    fresh='for _ in $(seq 20); do env -u SSL_CERT_FILE "$@" -o /dev/null "$0" || exit 1; done'
    measure fresh.ferry-cli 20 sh -c "$fresh" "$ssmall" "$bin/ferry" get -s --cacert "$work/ca.pem"
    measure fresh.ferry-static 20 sh -c "$fresh" "$ssmall" "$static/ferry" get -s --cacert "$work/ca.pem"
    measure fresh.curl 20 sh -c "$fresh" "$ssmall" curl -s --cacert "$work/ca.pem"
    measure freshk.ferry-cli 20 sh -c "$fresh" "$ssmall" "$bin/ferry" get -s -k
    measure freshk.ferry-static 20 sh -c "$fresh" "$ssmall" "$static/ferry" get -s -k
    measure freshk.curl 20 sh -c "$fresh" "$ssmall" curl -s -k

    # https (TLS 1.3 from nginx, h2 offered). Ferry trusts the CA through --cacert or SSL_CERT_FILE.
    tls_runs=(
        'rm -f "$shm"/*; measure tmpfs.ferry-cli $MB "$bin/ferry" get -q --cacert "$work/ca.pem" "$sbig" -o "$shm/f"; verify "$shm/f" ferry'
        'rm -f "$shm"/*; measure tmpfs.ferry-cli-h1 $MB "$bin/ferry" get -q --http1.1 --cacert "$work/ca.pem" "$sbig" -o "$shm/f"; verify "$shm/f" ferry'
        'rm -f "$shm"/*; measure tmpfs.curl $MB curl -s --cacert "$work/ca.pem" -o "$shm/c" "$sbig"; verify "$shm/c" curl'
        'rm -f "$shm"/*; measure tmpfs.curl-h1 $MB curl -s --http1.1 --cacert "$work/ca.pem" -o "$shm/c" "$sbig"; verify "$shm/c" curl'
        'measure tlsdisk.ferry-cli $MB "$bin/ferry" get -q --cacert "$work/ca.pem" "$sbig" -o "$work/out/f"; verify "$work/out/f" ferry'
        'measure tlsdisk.ferryd $MB "$bin/ferry-bench" background-download "$sbig" "$work/out/d"; verify "$work/out/d" ferryd'
        'measure tlsdisk.curl $MB curl -s --cacert "$work/ca.pem" -o "$work/out/c" "$sbig"; verify "$work/out/c" curl'
        'measure tlsdisk.curl-h1 $MB curl -s --http1.1 --cacert "$work/ca.pem" -o "$work/out/c" "$sbig"; verify "$work/out/c" curl'
        'measure tlsx8.ferry-cli $MB "$bin/ferry" get -q -x 8 --cacert "$work/ca.pem" "$sbig" -o "$work/out/f"; verify "$work/out/f" ferry'
        'measure tlsx8.aria2 $MB aria2c -q -x8 -s8 --ca-certificate="$work/ca.pem" --allow-overwrite=true --file-allocation=none -d "$work/out" -o a "$sbig"; verify "$work/out/a" aria2c'
    )
    for index in "${!tls_runs[@]}"; do
        eval "${tls_runs[$(( (index + round - 1) % ${#tls_runs[@]} ))]}"
    done
    measure tlsnull.ferry-lib $MB "$bin/ferry-bench" discard "$sbig"
    grep -q "bytes=1073741824" "$work/last.out"
    FERRY_BENCH_HTTP=1.1 measure tlsnull.ferry-lib-h1 $MB "$bin/ferry-bench" discard "$sbig"
    grep -q "bytes=1073741824" "$work/last.out"
    measure tlsnull.curl $MB curl -s --cacert "$work/ca.pem" -o /dev/null "$sbig"
    # URLSession's API on Ferry over https (FoundationNetworking cannot trust a private CA on Linux:
    # libcurl reads no environment variable for it and there is no server-trust challenge).
    measure tlsnull.ferry-urlsession $MB "$bin/urlsession-bench-ferry" discard "$sbig"; grep -q "bytes=1073741824" "$work/last.out"
    measure tlsnull.curl-h1 $MB curl -s --http1.1 --cacert "$work/ca.pem" -o /dev/null "$sbig"
    measure tlsseq.ferry-lib "$n" "$bin/ferry-bench" gets "$ssmall" "$n"
    FERRY_BENCH_HTTP=1.1 measure tlsseq.ferry-lib-h1 "$n" "$bin/ferry-bench" gets "$ssmall" "$n"
    measure tlsseq.curl "$n" curl -s --cacert "$work/ca.pem" -K "$work/curl-tls.list"
    measure tlsseq.ferry-urlsession "$n" "$bin/urlsession-bench-ferry" gets "$ssmall" "$n"
    measure tlsseq.curl-h1 "$n" curl -s --http1.1 --cacert "$work/ca.pem" -K "$work/curl-tls.list"
    measure tlspar.ferry-lib "$n" "$bin/ferry-bench" gets-parallel "$ssmall" "$n" 16
    FERRY_BENCH_HTTP=1.1 measure tlspar.ferry-lib-h1 "$n" "$bin/ferry-bench" gets-parallel "$ssmall" "$n" 16
    measure tlspar.curl "$n" curl -s --cacert "$work/ca.pem" --parallel --parallel-max 16 -K "$work/curl-tls.list"
    measure tlspar.ferry-urlsession "$n" "$bin/urlsession-bench-ferry" gets-parallel "$ssmall" "$n" 16
    measure tlspar.curl-h1 "$n" curl -s --http1.1 --cacert "$work/ca.pem" --parallel --parallel-max 16 -K "$work/curl-tls.list"
done

# 10,000 background tasks: submit rate, ferryd's RSS with them queued, restart to serving.
"$bin/ferry" daemon stop >/dev/null 2>&1 || true
rm -rf "$FERRY_HOME"; mkdir -p "$FERRY_HOME"
submit=$("$bin/ferry-bench" background-submit "http://127.0.0.1:$port/slow/big.bin" 10000 | sed -n 's/.*perSecond=\([0-9.]*\).*/\1/p')
ferryd_pid=$("$bin/ferry" daemon status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
ferryd_rss=$(awk '/VmRSS/ {print $2}' "/proc/$ferryd_pid/status")
kill -TERM "$ferryd_pid"; while kill -0 "$ferryd_pid" 2>/dev/null; do sleep 0.02; done
start=$(date +%s%N)
"$bin/ferry" daemon start >/dev/null
restart_ms=$(( ($(date +%s%N) - start) / 1000000 ))
batch=$("$bin/ferry-bench" background-submit-batch "http://127.0.0.1:$port/slow/big.bin" 10000 | sed -n 's/.*perSecond=\([0-9.]*\).*/\1/p')
# From 4 clients at once, one task a request (the goal of issue 22: 5,000 a second).
submit4=$("$bin/ferry-bench" background-submit "http://127.0.0.1:$port/slow/big.bin" 10000 4 | sed -n 's/.*perSecond=\([0-9.]*\).*/\1/p')

python3 - "$work" "$rounds" "$submit" "$ferryd_rss" "$restart_ms" "$batch" "$submit4" "$small_count" "$root/Benchmarks" <<'PY'
import json, os, sys
work, rounds, submit, rss, restart = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
batch, submit4, small, bench_dir = float(sys.argv[6]), float(sys.argv[7]), int(sys.argv[8]), sys.argv[9]
sys.path.insert(0, bench_dir)
import medians
def load(name):
    return medians.load(work, name)
n = f"{small:,}"
groups = [
    ("1 GiB GET to disk (MB/s)", "disk", ["ferry-cli", "ferry-static", "ferry-lib", "ferryd", "curl", "aria2", "wget", "ahc", "urlsession", "ferry-urlsession", "dd-durable"], "curl"),
    ("1 GiB GET, body discarded (MB/s)", "null", ["ferry-lib", "curl", "ahc", "urlsession", "ferry-urlsession"], "curl"),
    (f"{n} x 1 KiB GETs, sequential (req/s)", "seq", ["ferry-lib", "curl", "ahc", "urlsession", "ferry-urlsession"], "curl"),
    (f"{n} x 1 KiB GETs, 16 in flight (req/s)", "par", ["ferry-lib", "curl", "ahc", "urlsession", "ferry-urlsession"], "curl"),
    ("--version, 20 runs (runs/s)", "version", ["ferry-cli", "ferry-static", "curl"], "curl"),
    ("https: a fresh process for 1 KiB, --cacert, 20 runs (runs/s)", "fresh", ["ferry-cli", "ferry-static", "curl"], "curl"),
    ("https: a fresh process for 1 KiB, -k, 20 runs (runs/s)", "freshk", ["ferry-cli", "ferry-static", "curl"], "curl"),
    ("https: 1 GiB GET to tmpfs (MB/s)", "tmpfs", ["ferry-cli", "ferry-cli-h1", "curl", "curl-h1"], "curl"),
    ("https: 1 GiB GET to disk (MB/s)", "tlsdisk", ["ferry-cli", "ferryd", "curl", "curl-h1"], "curl"),
    ("https: 1 GiB GET, body discarded (MB/s)", "tlsnull", ["ferry-lib", "ferry-lib-h1", "curl", "curl-h1", "ferry-urlsession"], "curl"),
    ("https: 1 GiB GET over 8 connections to disk (MB/s)", "tlsx8", ["ferry-cli", "aria2"], "aria2"),
    (f"https: {n} x 1 KiB GETs, sequential (req/s)", "tlsseq", ["ferry-lib", "ferry-lib-h1", "curl", "curl-h1", "ferry-urlsession"], "curl"),
    (f"https: {n} x 1 KiB GETs, 16 in flight (req/s)", "tlspar", ["ferry-lib", "ferry-lib-h1", "curl", "curl-h1", "ferry-urlsession"], "curl"),
]
print(f"\nmedians of {rounds} interleaved rounds; nginx on 127.0.0.1\n")
results = medians.table(work, groups)
# URLSession's API (the same program, one import changed): on Ferry against FoundationNetworking, and
# against Ferry's own Session API on the same work (goals: >= 3x FoundationNetworking on small requests,
# within 10 % of Session).
for key, label in [("seq", "sequential 1 KiB"), ("par", "16 in flight 1 KiB"), ("disk", "1 GiB to disk"), ("null", "1 GiB discarded"),
                   ("tlsseq", "https sequential 1 KiB"), ("tlspar", "https 16 in flight 1 KiB"), ("tlsnull", "https 1 GiB discarded")]:
    on_ferry = load(f"{key}.ferry-urlsession")[0]
    versus = f"{on_ferry / load(f'{key}.ferry-lib')[0]:.2f}× Session"
    if os.path.exists(os.path.join(work, f"{key}.urlsession")):
        versus += f", {on_ferry / load(f'{key}.urlsession')[0]:.2f}× FoundationNetworking"
        results[f"{key}/ferry-urlsession-vs-foundation"] = {"ratio": on_ferry / load(f"{key}.urlsession")[0]}
    results[f"{key}/ferry-urlsession-vs-session"] = {"ratio": on_ferry / load(f"{key}.ferry-lib")[0]}
    print(f"| URLSession API on Ferry, {label} | ferry-urlsession | {on_ferry:,.0f} | | | | {versus} |")
lib = load("disk.ferry-lib")[0]; daemon = load("disk.ferryd")[0]
print(f"| 1 GiB through ferryd vs in-process | ferryd | {daemon:,.0f} | | | | {daemon/lib:.2f}× ferry-lib |")
durable = load("disk.dd-durable")[0]
print(f"| 1 GiB through ferryd vs the disk's durable rate | ferryd | {daemon:,.0f} | | | | {daemon/durable:.2f}× dd conv=fdatasync |")
tlsdaemon = load("tlsdisk.ferryd")[0]
print(f"| https: 1 GiB through ferryd vs the disk's durable rate | ferryd | {tlsdaemon:,.0f} | | | | {tlsdaemon/durable:.2f}× dd conv=fdatasync |")
print(f"| 10,000 background tasks | ferryd | submitted at {submit:,.0f}/s one a request, {submit4:,.0f}/s from 4 clients, {batch:,.0f}/s in batches | RSS {rss/1024:.0f} MB | restart to serving {restart} ms | | |")
results["ferryd/durable"] = {"ratio": daemon / durable}
results["ferryd/submit"] = {"median": submit}
results["ferryd/submit4"] = {"median": submit4}
results["ferryd/batch"] = {"median": batch}
results["ferryd/rss"] = {"rss_mb": rss / 1024}

os.makedirs(os.path.join(bench_dir, "results"), exist_ok=True)
with open(os.path.join(bench_dir, "results", "latest.json"), "w") as out:
    json.dump({"rounds": int(rounds), "small_requests": small, "rows": results}, out, indent=1, sort_keys=True)
PY
# HTTP/3 against ngtcp2's client, with HTTP/2 beside it, on one caddy (HTTP3=0 leaves these rows out).
[ "${HTTP3:-1}" = 0 ] || SMALL=$small_count "$root/Benchmarks/http3.sh" "$rounds"
# This run against the thresholds a run was accepted at (THRESHOLDS=update accepts this one).
python3 "$root/Benchmarks/thresholds.py" "${THRESHOLDS:-check}"
