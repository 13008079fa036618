#!/usr/bin/env bash
# The Autobahn WebSocket test suite's client cases (sections 1–13, permessage-deflate offered) against
# Ferry's WebSocketTask: kosoku (PyPI) runs the fuzzing server on 127.0.0.1, `ferry-bench autobahn`
# is the client. Prints each section's verdicts and every case that is not OK, NON-STRICT or
# INFORMATIONAL, and exits 1 if there is one. About 6 minutes on 2 cores (sections 12 and 13 are most
# of it). The reports stay in $AUTOBAHN_REPORTS when set (index.html opens in a browser).
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
(cd "$work" && exec kosoku -m fuzzingserver "127.0.0.1:$port" >"$work/server.log" 2>&1) &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q listening "$work/server.log" 2>/dev/null && break; sleep 0.1; done
"$root/.build/release/ferry-bench" autobahn "ws://127.0.0.1:$port" --deflate
python3 - "$work/reports/servers" <<'PY'
import collections, glob, json, os, sys
verdicts = collections.defaultdict(collections.Counter)
bad = []
for path in glob.glob(os.path.join(sys.argv[1], "ferry_case_*.json")):
    case = json.load(open(path))
    section = int(case["id"].split(".")[0])
    verdicts[section][case["behavior"]] += 1
    if case["behavior"] not in ("OK", "NON-STRICT", "INFORMATIONAL") or case.get("behaviorClose") not in ("OK", "INFORMATIONAL", None):
        bad.append((case["id"], case["behavior"], case.get("behaviorClose"), case.get("result", "")))
print("| section | verdicts |")
print("| --- | --- |")
for section in sorted(verdicts):
    print(f"| {section} | " + ", ".join(f"{n} {v}" for v, n in sorted(verdicts[section].items())) + " |")
for case in sorted(bad, key=lambda c: [int(p) for p in c[0].split(".")]):
    print("not passed:", *case)
sys.exit(1 if bad else 0)
PY
