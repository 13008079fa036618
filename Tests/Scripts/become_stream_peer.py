#!/usr/bin/env python3
"""An HTTP/1.1 server whose answers go on as byte streams, for Ferry's becomeStream tests.

usage: become_stream_peer.py CERT KEY

It listens on two ports of 127.0.0.1 the system picks, and prints them on one line: "PORT TLSPORT".

The request's path chooses the answer; after it, each line the client sends is echoed:
  /upgrade  101 Switching Protocols, with "hello" in the same write as the head
  /body     200 with a Content-Length far beyond what is sent: "start" with the head, "more" 0.1 s later
  /chunked  200 in chunked coding, one chunk "start"
  /small    200 with the whole body "hello" (Content-Length 5)
TLSPORT serves the same over TLS (CERT, KEY), without ALPN (HTTP/1.1).
"""
import asyncio
import ssl
import sys

ANSWERS = {
    b"/upgrade": (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\nhello\n", None),
    b"/body": (b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\nstart\n", b"more\n"),
    b"/chunked": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nstart\n\r\n", None),
    b"/small": (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", None),
}


async def serve(reader, writer):
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        path = head.split(b" ")[1]
        first, later = ANSWERS.get(path, (b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", None))
        writer.write(first)
        await writer.drain()
        if later:
            await asyncio.sleep(0.1)
            writer.write(later)
            await writer.drain()
        while True:
            line = await reader.readline()
            if not line:
                break
            writer.write(b"echo " + line)
            await writer.drain()
        writer.write(b"BYE\n")
        await writer.drain()
    except Exception:
        pass
    writer.close()


async def main():
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[1], sys.argv[2])
    plain = await asyncio.start_server(serve, "127.0.0.1", 0)
    secure = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=context)
    print(plain.sockets[0].getsockname()[1], secure.sockets[0].getsockname()[1], flush=True)
    async with plain, secure:
        await asyncio.gather(plain.serve_forever(), secure.serve_forever())


asyncio.run(main())
