#!/usr/bin/env python3
"""An HTTP/1.1 server that lies, for Ferry's hostile-server tests (docs/RELIABILITY.md, "Hostile servers").

usage: hostile_peer.py CERT KEY

It listens on a port of 127.0.0.1 the system picks and prints it on one line. CERT and KEY are taken
for the interface PythonPeer gives every peer; this one speaks plain HTTP/1.1 only.

The request's path chooses the lie (each answer has an ETag and a Last-Modified, so a client would keep
resume data if it trusted the bytes):
  /partial            206 with bytes 0-99 of 1000 to a request that asked for no range
  /partial-elsewhere  206 with bytes 500-599 whatever range was asked for
  /gzip/members       Content-Encoding: gzip, two gzip members ("first\\n", then "second\\n")
  /gzip/garbage       one gzip member ("data\\n"), then 7 bytes that are not gzip
  /gzip/truncated     a gzip member without its last 8 bytes (its trailer)
  /deflate/garbage    a zlib stream ("data\\n"), then 2 more bytes
  /gzip/bomb/N        Content-Encoding: gzip, N MiB of zeros (N rounded up to 64) in members of 64 MiB,
                      each about 64 KiB (about N KiB sent)
  /ws/close-at-once   a valid WebSocket handshake answer (101), then the connection closes in the same
                      write: no frame, no close frame (kosoku's updateReports does this)
  /ws/hello-then-close  the same with a text message "hello" between the 101 and the close
  /ws/hello-then-close-on-message  the 101; once a frame from the client has come, a text message
                      "hello" and the close, in one write
  /raw/bad-status     "HTTP/1.1 2OO OK": a status that is not three digits
  /raw/bad-length     "Content-Length: abc"
  /raw/bad-chunk      a chunked body whose first chunk size is "zz"
Anything else: 404.
"""
import asyncio
import base64
import gzip
import hashlib
import sys
import zlib

VALIDATORS = b'ETag: "v1"\r\nLast-Modified: Mon, 01 Jan 2024 00:00:00 GMT\r\n'
BOMBS = {}


def bomb(mebibytes):
    """N MiB of zeros as gzip: one member of 64 MiB (about 64 KiB, made once, in about half a second)
    repeated. Compressing the whole at once took seconds of a core that the rest of a test run needs."""
    if "member" not in BOMBS:
        compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
        zeros = bytes(1 << 20)
        BOMBS["member"] = b"".join([compressor.compress(zeros) for _ in range(64)] + [compressor.flush()])
    return BOMBS["member"] * max(1, (mebibytes + 63) // 64)


# Answers that are not HTTP/1.1, written as they are (the connection closes after them).
RAW = {
    b"/raw/bad-status": b"HTTP/1.1 2OO OK\r\nContent-Length: 2\r\n\r\nhi",
    b"/raw/bad-length": b"HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\nhi",
    b"/raw/bad-chunk": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhi\r\n0\r\n\r\n",
}


def answer(path, headers):
    if path == b"/partial":
        return b"206 Partial Content", b"Content-Range: bytes 0-99/1000\r\n", bytes(range(100))
    if path == b"/partial-elsewhere":
        return b"206 Partial Content", b"Content-Range: bytes 500-599/1000\r\n", bytes(100)
    if path == b"/gzip/members":
        return b"200 OK", b"Content-Encoding: gzip\r\n", gzip.compress(b"first\n") + gzip.compress(b"second\n")
    if path == b"/gzip/garbage":
        return b"200 OK", b"Content-Encoding: gzip\r\n", gzip.compress(b"data\n") + b"GARBAGE"
    if path == b"/gzip/truncated":
        return b"200 OK", b"Content-Encoding: gzip\r\n", gzip.compress(b"data\n" * 100)[:-8]
    if path == b"/deflate/garbage":
        return b"200 OK", b"Content-Encoding: deflate\r\n", zlib.compress(b"data\n") + b"xx"
    if path.startswith(b"/gzip/bomb/"):
        return b"200 OK", b"Content-Encoding: gzip\r\n", bomb(int(path.rsplit(b"/", 1)[1]))
    return b"404 Not Found", b"", b""


async def serve(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.split(b"\r\n")
            path = lines[0].split(b" ")[1]
            headers = {}
            for line in lines[1:]:
                if b":" in line:
                    name, value = line.split(b":", 1)
                    headers[name.strip().lower()] = value.strip()
            if path in (b"/ws/close-at-once", b"/ws/hello-then-close", b"/ws/hello-then-close-on-message"):
                accept = base64.b64encode(
                    hashlib.sha1(headers[b"sec-websocket-key"] + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest()
                )
                frame = b"\x81\x05hello" if path != b"/ws/close-at-once" else b""
                handshake = (
                    b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    + b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n"
                )
                if path == b"/ws/hello-then-close-on-message":
                    writer.write(handshake)
                    await writer.drain()
                    # The client sends only once its WebSocket is open: the upgrade is through.
                    await reader.read(2)
                    writer.write(frame)
                else:
                    writer.write(handshake + frame)
                await writer.drain()
                break
            if path in RAW:
                writer.write(RAW[path])
                await writer.drain()
                break
            status, extra, body = await asyncio.get_running_loop().run_in_executor(None, answer, path, headers)
            writer.write(
                b"HTTP/1.1 " + status + b"\r\n" + VALIDATORS + extra
                + b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n"
            )
            writer.write(body)
            await writer.drain()
    except Exception:
        pass
    writer.close()


async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


asyncio.run(main())
