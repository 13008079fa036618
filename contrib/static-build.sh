#!/bin/sh
# Builds ferry, ferryd and ferry-testserver with the Swift standard library and Foundation linked
# statically (swift build --static-swift-stdlib), into .build-static/release, then checks that they run
# on a machine without Swift: ldd lists no Swift library, and with /opt/swift hidden (an empty tmpfs
# mounted over it in a mount namespace of its own; needs root or unshare's user namespaces) each runs,
# and together they download over http, https and through ferryd.
#
# usage: contrib/static-build.sh            (about as long as a release build: 10-15 min on 2 cores)
set -eu
cd "$(dirname "$0")/.."
scratch=.build-static
for product in ferry ferryd ferry-testserver; do
    swift build -c release --static-swift-stdlib --scratch-path "$scratch" --product "$product"
done
out="$scratch/release"
swift_root=$(dirname "$(dirname "$(command -v swift)")")
status=0
for tool in ferry ferryd ferry-testserver; do
    if ldd "$out/$tool" | grep -E 'libswift|libFoundation|lib_Foundation|libdispatch|libBlocksRuntime|swift'; then
        echo "static-build: $tool still needs the Swift libraries above" >&2
        status=1
    fi
    size=$(du -h "$out/$tool" | cut -f1)
    # Run where no Swift is installed: the toolchain's directory hidden, a bare environment.
    if unshare -m sh -c "mount -t tmpfs none '$swift_root' && env -i PATH=/usr/bin:/bin '$out/$tool' --help" > /dev/null 2>&1; then
        echo "static-build: $out/$tool ($size) runs with $swift_root hidden"
    else
        echo "static-build: $out/$tool does not run with $swift_root hidden" >&2
        status=1
    fi
done
[ "$status" -eq 0 ] || exit "$status"

# And they do their work there, not only print their help: with the toolchain hidden, the static test
# server serves, the static ferry downloads over http and over https (h2, the server's CA given with
# --cacert), and hands a download to the static ferryd beside it (--background), which fetches it.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if unshare -m sh -s "$swift_root" "$(pwd)/$out" "$work" <<'EOS'
set -eu
mount -t tmpfs none "$1"
out=$2
cd "$3"
export PATH=/usr/bin:/bin FERRY_HOME="$3/home" XDG_CONFIG_HOME="$3/config"
"$out/ferry-testserver" --ca-out ca.pem > server.log 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; "$out/ferry" daemon stop > /dev/null 2>&1 || true' EXIT
tries=0
until grep -q '^https' server.log 2>/dev/null; do
    tries=$((tries + 1)); [ "$tries" -lt 300 ] || { cat server.log; exit 1; }; sleep 0.1
done
http=$(sed -n 's/^listening on \(http:[^ ]*\).*/\1/p' server.log)
https=$(sed -n 's/^https ([^)]*) \(https:[^ ]*\).*/\1/p' server.log)
"$out/ferry" get -q "$http/bytes/1000000?seed=7" -o plain.bin
"$out/ferry" get -q --cacert ca.pem -w '%{http_version}\n' "$https/bytes/1000000?seed=7" -o secure.bin > version.txt
id=$("$out/ferry" get --background --cacert ca.pem "$https/bytes/1000000?seed=7" -o "$3/background.bin")
"$out/ferry" wait --timeout 60 "$id" > /dev/null
cmp plain.bin secure.bin
cmp plain.bin background.bin
[ "$(cat version.txt)" = "2" ]
[ "$(wc -c < plain.bin)" -eq 1000000 ]
EOS
then
    echo "static-build: with $swift_root hidden, ferry downloaded over http and https (h2) and through ferryd, byte for byte the same"
else
    echo "static-build: the static tools did not complete a download with $swift_root hidden (above)" >&2
    status=1
fi
exit "$status"
