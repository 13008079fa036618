#!/usr/bin/env python3
"""A laptop that changes networks mid-download, in network namespaces (issue 42's migration check).

usage: unshare -rn python3 netns_migration.py FERRY H3_PEER CERT KEY CA WORKDIR

Run in a network namespace of its own (unshare -rn: no privilege needed beyond user namespaces), it
builds two networks to one server:

    this namespace (ferry, ferryd)              the server's namespace (h3_peer.py on 10.9.0.1)
    a1 10.1.0.2/24  <--- veth "network 1" --->  b1 10.1.0.1/24
    a2 10.2.0.2/24  <--- veth "network 2" --->  b2 10.2.0.1/24
                                                lo 10.9.0.1 (the server's address, behind both)

The default route goes through network 1. ferry submits a background download over HTTP/3 of a body
the server drips (6 MB, 60 KB every 30 ms). Once 1 MB has arrived, the default route moves to network 2
and network 1 goes down, as when a laptop leaves a Wi-Fi network for another: ferryd sees the new
route and moves the QUIC connection (RFC 9000 §9). Nothing can arrive over network 1 after that.

It prints one JSON object: wait (ferry wait's exit status and stderr), listed (ferry ls --json after),
requests (the server's requests.log lines), addresses (the client addresses the server saw).
"""
import json
import os
import subprocess
import sys
import time

ferry, peer, cert, key, ca, work = sys.argv[1:7]


def ip(*arguments, namespace=None):
    prefix = ["nsenter", "-t", str(namespace), "-n"] if namespace else []
    subprocess.run(prefix + ["ip"] + list(arguments), check=True)


ip("link", "set", "lo", "up")
server = subprocess.Popen(
    # Bound to its own address (not 0.0.0.0, whose answers would leave from 10.1.0.1 or 10.2.0.1, which
    # a connected client socket does not take).
    ["unshare", "-n", "sh", "-c", 'ip link set lo up && ip addr add 10.9.0.1/32 dev lo && exec python3 "$0" "$1" "$2"', peer, cert, key],
    env=dict(os.environ, H3_PEER_HOST="10.9.0.1"),
    stdout=subprocess.PIPE,
    text=True,
)
try:
    port = int(server.stdout.readline())  # the namespace exists once the server has printed its port
    for n in ("1", "2"):
        ip("link", "add", "a" + n, "type", "veth", "peer", "name", "b" + n, "netns", str(server.pid))
        ip("addr", "add", f"10.{n}.0.2/24", "dev", "a" + n)
        ip("link", "set", "a" + n, "up")
        ip("addr", "add", f"10.{n}.0.1/24", "dev", "b" + n, namespace=server.pid)
        ip("link", "set", "b" + n, "up", namespace=server.pid)
    ip("route", "add", "default", "via", "10.1.0.1", "dev", "a1")

    environment = dict(os.environ, FERRY_HOME=os.path.join(work, "home"), XDG_CONFIG_HOME=os.path.join(work, "config"))

    def ferry_run(*arguments):
        return subprocess.run([ferry] + list(arguments), env=environment, capture_output=True, text=True, timeout=120)

    submit = ferry_run(
        "get", "--background", "--http3-only", "--cacert", ca, "--resolve", f"localhost:{port}:10.9.0.1",
        f"https://localhost:{port}/drip/6000000/60000/30", "-o", os.path.join(work, "moved.bin"),
    )
    if submit.returncode != 0:
        print(json.dumps({"error": "submit failed: " + submit.stderr}))
        sys.exit(0)
    task = submit.stdout.strip()
    deadline = time.monotonic() + 60
    while True:
        listed = json.loads(ferry_run("ls", "--json", "--all").stdout or "[]")
        if listed and (listed[0].get("bytesReceived") or 0) >= 1_000_000:
            break
        if time.monotonic() > deadline:
            print(json.dumps({"error": "1 MB never arrived: " + json.dumps(listed)}))
            sys.exit(0)
        time.sleep(0.05)
    # The new network first, then the old one gone: the machine is never without a default route.
    ip("route", "replace", "default", "via", "10.2.0.1", "dev", "a2")
    ip("link", "set", "a1", "down")
    waited = ferry_run("wait", task, "--timeout", "60")
    listed = ferry_run("ls", "--json", "--all").stdout
    ferry_run("daemon", "stop")
    directory = os.path.dirname(cert)

    def lines(name):
        path = os.path.join(directory, name)
        return open(path).read().split("\n")[:-1] if os.path.exists(path) else []

    print(json.dumps({
        "wait": waited.returncode, "stderr": waited.stderr, "listed": listed,
        "requests": lines("requests.log"), "addresses": lines("addresses.log"),
    }))
finally:
    server.kill()
