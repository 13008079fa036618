#!/usr/bin/env bash
# Checks ferryd's control API against its document, docs/openapi.json, with schemathesis (PyPI): a private
# ferryd (its own FERRY_HOME) behind a TCP bridge on 127.0.0.1 (socat), every check, a fixed seed.
# Needs: schemathesis (pip install schemathesis), socat and openssl (Debian), and a built ferryd
# (FERRYD_PATH, else .build/debug/ferryd). Exit status: schemathesis's (0: no failures), or 1 when its
# summary does not show every selected operation tested (a missing result is a failure, never a pass).
set -euo pipefail
cd "$(dirname "$0")/../.."

ferryd=${FERRYD_PATH:-.build/debug/ferryd}
[ -x "$ferryd" ] || { echo "no ferryd at $ferryd: run swift build first, or set FERRYD_PATH" >&2; exit 2; }
for tool in schemathesis socat openssl; do
    command -v "$tool" >/dev/null || { echo "$tool is missing (schemathesis: pip install schemathesis; socat, openssl: apt-get install)" >&2; exit 2; }
done

home=$(mktemp -d /tmp/ferry-openapi-XXXXXX)
# ferryd runs in a directory of its own that must stay empty: no request may make a file outside
# FERRY_HOME and the destinations it names (a relative path once made one in the working directory).
watched=$(mktemp -d /tmp/ferry-openapi-cwd-XXXXXX)
ferryd=$(cd "$(dirname "$ferryd")" && pwd)/$(basename "$ferryd")
cleanup() {
    if [ -n "${daemon:-}" ] && ! kill -0 "$daemon" 2>/dev/null; then
        echo "ferryd died during the run; the end of its log:" >&2
        tail -n 40 "$home/out.log" >&2
    fi
    [ -n "${bridge:-}" ] && kill "$bridge" 2>/dev/null || true
    [ -n "${daemon:-}" ] && kill "$daemon" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$home" "$watched"
}
trap cleanup EXIT

# FERRY_MAX_TRANSFERS=0: the fuzzed tasks are stored, listed, suspended and cancelled, but none runs, so
# nothing reaches beyond 127.0.0.1.
(cd "$watched" && exec env FERRY_HOME="$home" FERRY_MAX_TRANSFERS=0 "$ferryd") >"$home/out.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do [ -S "$home/ferryd.sock" ] && break; sleep 0.1; done
[ -S "$home/ferryd.sock" ] || { echo "ferryd did not start; its log:" >&2; cat "$home/out.log" >&2; exit 2; }

# A free port on 127.0.0.1, chosen by the kernel.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
socat "TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr,fork" "UNIX-CONNECT:$home/ferryd.sock" &
bridge=$!
for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done

# attach is a stream that stays open while the client is attached: nothing for a fuzzer to wait for.
# Strings are generated as UTF-8 can carry them (JSON between systems is UTF-8, RFC 8259 §8.1): no lone
# surrogate escapes, which name no character and which the daemon's JSON decoder refuses.
set +e
SCHEMATHESIS_HOOKS=contrib.openapi.hooks PYTHONPATH=. schemathesis --config-file contrib/openapi/schemathesis.toml run docs/openapi.json \
    --url "http://127.0.0.1:$port" --checks all --exclude-path-regex 'attach$' --generation-codec utf-8 \
    --request-timeout 10 --seed "${SEED:-1}" "$@" 2>&1 | tee "$home/schemathesis.out"
status=${PIPESTATUS[0]}
set -e
# Every operation the run selected was tested: schemathesis's summary says "Selected: S/T" and
# "Tested: N". A run that tested fewer (or printed no summary) judged less than it claims.
selected=$(sed -n 's/^ *Selected: \([0-9]*\)\/[0-9]*$/\1/p' "$home/schemathesis.out" | tail -n 1)
tested=$(sed -n 's/^ *Tested: \([0-9]*\)$/\1/p' "$home/schemathesis.out" | tail -n 1)
if [ -z "$selected" ] || [ -z "$tested" ] || [ "$tested" != "$selected" ] || [ "$selected" = 0 ]; then
    echo "schemathesis did not test every selected operation (selected: ${selected:-none}, tested: ${tested:-none})" >&2
    exit 1
fi
echo "schemathesis tested all $tested selected operations"
# Launch commands the fuzzer registered run in FERRY_HOME; give the last of them a moment to end.
sleep 2
stray=$(ls -A "$watched")
if [ -n "$stray" ]; then
    echo "files appeared in ferryd's working directory during the run (a path that was not checked):" >&2
    echo "$stray" >&2
    exit 1
fi
echo "no file appeared outside FERRY_HOME"
exit "$status"
