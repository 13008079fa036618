#!/usr/bin/env python3
"""An HTTP/2 server that breaks the protocol on purpose, for Ferry's hostile-server tests
(docs/RELIABILITY.md, "Hostile servers"). Frames are written by hand (hpack, from PyPI's h2, encodes the
header blocks), so nothing validates what is sent.

usage: hostile_h2_peer.py CERT KEY

It listens over TLS (ALPN h2) on a port of 127.0.0.1 the system picks and prints it on one line.
The first request's :path chooses what happens on stream 1:
  /double-status        HEADERS :status 500, :status 200; DATA "oops!"
  /late-pseudo          HEADERS content-length 5, then :status 200
  /path-in-response     HEADERS :status 200, :path /x
  /upper-case           HEADERS :status 200, Content-Length 5 (upper case)
  /connection-field     HEADERS :status 200, connection: close
  /good                 HEADERS :status 200, content-length 5; DATA "hello" (the control case)
  /continuation-flood   HEADERS without END_HEADERS, then 16 KiB CONTINUATION frames without end
  /ping-flood           PING frames without end, and none of the client's frames read after the request
  /settings-flood       SETTINGS frames without end, likewise
  /goaway               GOAWAY (NO_ERROR) with last stream 0: stream 1 was refused, never processed
"""
import asyncio
import ssl
import struct
import sys

import hpack

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def headers_frame(fields, end_stream=False, end_headers=True):
    block = hpack.Encoder().encode(fields)
    return frame(1, (0x1 if end_stream else 0) | (0x4 if end_headers else 0), 1, block)


HEADS = {
    "/double-status": [(":status", "500"), (":status", "200"), ("content-length", "5")],
    "/late-pseudo": [("content-length", "5"), (":status", "200")],
    "/path-in-response": [(":status", "200"), (":path", "/x"), ("content-length", "5")],
    "/upper-case": [(":status", "200"), ("Content-Length", "5")],
    "/connection-field": [(":status", "200"), ("connection", "close"), ("content-length", "5")],
    "/good": [(":status", "200"), ("content-length", "5")],
}


async def read_frame(reader):
    head = await reader.readexactly(9)
    length = int.from_bytes(head[:3], "big")
    return head[3], head[4], int.from_bytes(head[5:9], "big") & 0x7FFFFFFF, await reader.readexactly(length)


async def serve(reader, writer):
    try:
        await reader.readexactly(len(PREFACE))
        writer.write(frame(4, 0, 0))
        decoder = hpack.Decoder()
        path = None
        while path is None:
            kind, flags, stream, payload = await read_frame(reader)
            if kind == 4 and not flags & 1:
                writer.write(frame(4, 1, 0))
            elif kind == 1:
                if flags & 0x8:
                    payload = payload[1:len(payload) - payload[0]]
                if flags & 0x20:
                    payload = payload[5:]
                path = dict(decoder.decode(payload)).get(":path")
        await writer.drain()
        if path in HEADS:
            writer.write(headers_frame(HEADS[path]) + frame(0, 1, 1, b"oops!" if path != "/good" else b"hello"))
            await writer.drain()
            # Keep reading until the client is done (it resets the stream or closes).
            while True:
                await read_frame(reader)
        elif path == "/continuation-flood":
            writer.write(headers_frame([(":status", "200")], end_headers=False))
            junk = frame(9, 0, 1, b"\x00" * 16384)
            # Until the client closes. asyncio's drain neither raises nor waits once the connection is
            # gone, so each round yields: a loop that never does holds every other connection up.
            while not writer.transport.is_closing():
                writer.write(junk)
                await writer.drain()
                await asyncio.sleep(0)
        elif path == "/goaway":
            writer.write(frame(7, 0, 0, struct.pack(">II", 0, 0)))
            await writer.drain()
            while True:
                await read_frame(reader)
        elif path in ("/ping-flood", "/settings-flood"):
            one = frame(6, 0, 0, b"\x00" * 8) if path == "/ping-flood" else frame(4, 0, 0, struct.pack(">HI", 3, 100))
            burst = one * 4096
            # Nothing more is read: the client's answers pile up in its own buffers unless it stops.
            while not writer.transport.is_closing():
                writer.write(burst)
                await writer.drain()
                await asyncio.sleep(0)
    except Exception:
        pass
    writer.close()


async def main():
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[1], sys.argv[2])
    context.set_alpn_protocols(["h2"])
    server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=context)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


asyncio.run(main())
