# Sourced by run.sh and http3.sh (which set $work): how a row is timed and its download checked.

# measure NAME WORK-UNITS COMMAND...: runs it under /usr/bin/time; records "rate cpu rss" for NAME.
measure() {
    local name=$1 units=$2; shift 2
    local timing=$work/timing
    /usr/bin/time -f "%e %U %S %M" -o "$timing" "$@" >"$work/last.out" 2>"$work/last.err" || {
        echo "$name failed:" >&2; cat "$work/last.err" >&2; exit 1
    }
    read -r wall user sys rss <"$timing"
    # (time counts in hundredths: a program that starts and exits at once takes "0.00".)
    [ "$wall" = "0.00" ] && wall=0.005
    echo "$(echo "$units / $wall" | bc -l) $(echo "$user + $sys" | bc -l) $rss" >>"$work/$name"
}

# verify FILE NAME: FILE is the served 1 GiB file byte for byte (then removed), or the run stops.
# The disk is synced afterwards (outside any timing): without it the next row paid for this one's
# writeback, and a program's disk row depended on which row came before it (URLSession's API on Ferry,
# after FoundationNetworking's, measured 0.43–0.55× `Session` in run.sh; five downloads each, alternating
# by hand with a sync between them: 1,708 against 1,584 MB/s, medians).
verify() {
    cmp -s "$1" "$work/www/big.bin" || { echo "$2: the downloaded file differs from the served one" >&2; exit 1; }
    rm -f "$1"
    sync
}
