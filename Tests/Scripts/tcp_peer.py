#!/usr/bin/env python3
"""A line echo server over TCP for Ferry's stream task tests.

usage: tcp_peer.py CERT KEY

It listens on a port of 127.0.0.1 the system picks and prints it on a line of its own.

Each line is echoed. "STARTTLS" is answered "GO" and TLS starts (CERT, KEY); "SILENT" is answered with
nothing. At the end of the client's stream it writes "BYE" and closes.
"""
import asyncio
import ssl
import sys


async def serve(reader, writer):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[1], sys.argv[2])
    try:
        while True:
            line = await reader.readline()
            if not line:
                break
            if line.strip() == b"STARTTLS":
                writer.write(b"GO\n")
                await writer.drain()
                await writer.start_tls(context)
            elif line.strip() == b"SILENT":
                continue
            else:
                writer.write(line)
                await writer.drain()
        writer.write(b"BYE\n")
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
