#!/bin/sh
# Builds ferry, ferryd and ferry-testserver with the Swift standard library and Foundation linked
# statically (swift build --static-swift-stdlib), into .build-static/release, then checks that they run
# on a machine without Swift: ldd lists no Swift library, and each runs with /opt/swift hidden (an empty
# tmpfs mounted over it in a mount namespace of its own; needs root or unshare's user namespaces).
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
exit "$status"
