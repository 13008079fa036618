#!/usr/bin/env bash
# Ferry's in-process engine beside curl on the same work, from a release build, runs interleaved:
#   1. one 1 GiB GET written to disk        (ferry-bench download  vs  curl -o FILE)
#   2. 2,000 sequential 1 KiB GETs, keep-alive (ferry-bench gets   vs  curl -K list, one process)
# Server: ferry-testserver (/bytes, generated on the fly). Prints every run and the medians.
#
#   Benchmarks/engine-vs-curl.sh [ROUNDS]      (default 5; needs curl; builds with swift build -c release)
set -euo pipefail
rounds=${1:-5}
cd "$(dirname "$0")/.."
command -v curl >/dev/null || { echo "needs curl (apt-get install -y curl)" >&2; exit 1; }
swift build -c release --product ferry-bench >/dev/null
swift build -c release --product ferry-testserver >/dev/null
bin=.build/release
work=$(mktemp -d)
trap 'kill $server 2>/dev/null || true; rm -rf "$work"' EXIT

"$bin/ferry-testserver" --port 0 >"$work/server.out" &
server=$!
for _ in $(seq 100); do grep -q listening "$work/server.out" 2>/dev/null && break; sleep 0.05; done
base=$(head -n1 "$work/server.out" | sed 's/listening on //')
big="$base/bytes/1073741824?seed=3"
small="$base/bytes/1024?seed=4"
for _ in $(seq 2000); do printf 'url = "%s"\noutput = "/dev/null"\n' "$small"; done >"$work/curl.list"

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

: >"$work/ferry-dl"; : >"$work/curl-dl"; : >"$work/ferry-rps"; : >"$work/curl-rps"
for round in $(seq "$rounds"); do
    out=$("$bin/ferry-bench" download "$big" "$work/ferry.bin")
    echo "$out" | sed -n 's/.*MBps=\([0-9.]*\).*/\1/p' >>"$work/ferry-dl"
    start=$(now); curl -s -o "$work/curl.bin" "$big"; end=$(now)
    echo "1073741824 / ($end - $start) / 1000000" | bc -l >>"$work/curl-dl"
    cmp -s "$work/ferry.bin" "$work/curl.bin" || { echo "round $round: the two 1 GiB files differ" >&2; exit 1; }
    rm -f "$work/ferry.bin" "$work/curl.bin"

    out=$("$bin/ferry-bench" gets "$small" 2000)
    echo "$out" | sed -n 's/.*rps=\([0-9.]*\).*/\1/p' >>"$work/ferry-rps"
    start=$(now); curl -s -K "$work/curl.list"; end=$(now)
    echo "2000 / ($end - $start)" | bc -l >>"$work/curl-rps"
    printf 'round %d: download ferry %.0f curl %.0f MB/s; 2,000 GETs ferry %.0f curl %.0f req/s\n' "$round" \
        "$(tail -n1 "$work/ferry-dl")" "$(tail -n1 "$work/curl-dl")" \
        "$(tail -n1 "$work/ferry-rps")" "$(tail -n1 "$work/curl-rps")"
done

fd=$(median <"$work/ferry-dl"); cd_=$(median <"$work/curl-dl")
fr=$(median <"$work/ferry-rps"); cr=$(median <"$work/curl-rps")
printf '\nmedians of %d rounds\n' "$rounds"
printf '1 GiB GET to disk:        ferry %.0f MB/s, curl %.0f MB/s, ratio %.2f\n' "$fd" "$cd_" "$(echo "$fd / $cd_" | bc -l)"
printf '2,000 sequential 1 KiB:   ferry %.0f req/s, curl %.0f req/s, ratio %.2f\n' "$fr" "$cr" "$(echo "$fr / $cr" | bc -l)"
