#!/usr/bin/env python3
"""A UDP relay that loses every Nth datagram each way: a lossy path for Ferry's HTTP/3 tests (issue 42;
netem is not available here, and tbf drops only what exceeds its rate).

usage: udp_drop_relay.py CERT KEY TARGET_PORT N STATS_FILE

It listens on UDP 127.0.0.1, on a port the system picks, prints it on one line, and forwards each
datagram between the one client that writes to it and 127.0.0.1:TARGET_PORT, dropping datagrams N,
2N, 3N, ... in each direction. After each drop, STATS_FILE holds "FORWARD DROPPED_UP DROPPED_DOWN".
(CERT and KEY are the arguments every peer script is given; a relay has no use for them.)
"""
import select
import socket
import sys

target = ("127.0.0.1", int(sys.argv[3]))
every = int(sys.argv[4])
stats = sys.argv[5]
front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
front.bind(("127.0.0.1", 0))
back = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
back.connect(target)
for sock in (front, back):
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
print(front.getsockname()[1], flush=True)

client = None
seen = [0, 0]
dropped = [0, 0]
forwarded = 0
while True:
    readable, _, _ = select.select([front, back], [], [])
    for sock in readable:
        up = sock is front
        try:
            if up:
                data, client = front.recvfrom(65536)
            else:
                data = back.recv(65536)
        except OSError:
            continue  # (ICMP from a closed port: the next datagram decides)
        way = 0 if up else 1
        seen[way] += 1
        if seen[way] % every == 0:
            dropped[way] += 1
            with open(stats, "w") as out:
                out.write(f"{forwarded} {dropped[0]} {dropped[1]}\n")
            continue
        forwarded += 1
        try:
            if up:
                back.send(data)
            elif client is not None:
                front.sendto(data, client)
        except OSError:
            pass
