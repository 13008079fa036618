#!/usr/bin/env bash
# The Autobahn WebSocket test suite's client cases (sections 1–13, permessage-deflate offered) against
# Ferry's WebSocketTask: kosoku (PyPI) runs the fuzzing server on 127.0.0.1, `ferry-bench autobahn`
# is the client. Once the client has run every case, the server writes its reports and exits; the
# script waits for that (up to AUTOBAHN_REPORT_WAIT seconds, 300 by default), then
# Benchmarks/autobahn_verdicts.py prints each section's verdicts, every case that is not OK, NON-STRICT
# or INFORMATIONAL, and every case that has no verdict. Exit status 1 if any case did not pass or has
# no verdict. About 6–8 minutes on 2 cores (sections 12 and 13 are most of it). The reports stay in
# $AUTOBAHN_REPORTS when set (index.html opens in a browser). AUTOBAHN_CASES runs only the cases it
# names (kosoku's ids or globs, space-separated: "1.* 7.1.1").
#
#   Benchmarks/autobahn.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
command -v kosoku >/dev/null 2>&1 || python3 -m pip install -q kosoku
echo "building (release)..." >&2
swift build -c release --product ferry-bench >/dev/null
work=${AUTOBAHN_REPORTS:-$(mktemp -d /tmp/ferry-autobahn-XXXXXX)}
mkdir -p "$work"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
include=()
for pattern in ${AUTOBAHN_CASES:-}; do include+=(-i "$pattern"); done
(cd "$work" && exec kosoku -m fuzzingserver "${include[@]}" "127.0.0.1:$port" >"$work/server.log" 2>&1) &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q listening "$work/server.log" 2>/dev/null && break; sleep 0.1; done
grep -q listening "$work/server.log" || { echo "the fuzzing server did not start:" >&2; cat "$work/server.log" >&2; exit 1; }
# The client is bounded too (AUTOBAHN_CLIENT_TIMEOUT seconds, 1800 by default): a case it never ends
# must fail the run, not hang it.
timeout "${AUTOBAHN_CLIENT_TIMEOUT:-1800}" "$root/.build/release/ferry-bench" autobahn "ws://127.0.0.1:$port" --deflate \
    | tee "$work/client.out" || { echo "the client did not finish (exit ${PIPESTATUS[0]}); its last lines:" >&2; tail -n 5 "$work/client.out" >&2; exit 1; }
cases=$(sed -n 's/^autobahn: ran \([0-9]*\) cases.*/\1/p' "$work/client.out")
[ -n "$cases" ] || { echo "the client did not say how many cases it ran" >&2; exit 1; }
# The server writes the reports after the client's last case and then exits: reading them before it
# has would judge only the cases written so far (a run once judged 328 of 517 and passed).
bound=${AUTOBAHN_REPORT_WAIT:-300}
for _ in $(seq $((bound * 10))); do kill -0 "$server" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$server" 2>/dev/null; then
    echo "the fuzzing server had not written its reports ${bound} s after the client's last case; its log:" >&2
    tail -n 20 "$work/server.log" >&2
    exit 1
fi
wait "$server" || true   # kosoku exits 1 when a case failed: the verdicts below say which
python3 "$root/Benchmarks/autobahn_verdicts.py" "$work/reports/servers" "$cases"
