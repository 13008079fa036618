#!/usr/bin/env python3
"""A WebSocket peer for Ferry's tests, on Python's `websockets` (pip install websockets).

usage: ws_peer.py PORT [--cert FILE --key FILE] [--no-deflate]

Listens on 127.0.0.1:PORT (0: a port the system picks) with TLS when given a certificate, and prints
"listening PORT" once it does. What it does depends on the path:
  /echo             echoes every message, text as text and binary as binary
  /protocol         echoes the subprotocol chosen (offers "chat" and "superchat") as its first message
  /close?code=N&reason=R   closes with that code and reason at once
  /close-after      echoes one message, then closes with 4000 "done"
  /drop             after the first message, drops TCP with no close frame
  /big?size=N       sends one binary message of N bytes, then echoes
  /headers          sends the request's Cookie and X-Test fields as one text message, sets a cookie
  /deflate          echoes; its first message says whether permessage-deflate is in use
  /refuse           answers 403 instead of upgrading
"""
import asyncio
import http
import ssl
import sys
import urllib.parse

from websockets.asyncio.server import serve
from websockets.datastructures import Headers
from websockets.http11 import Response


async def handler(ws):
    url = urllib.parse.urlsplit(ws.request.path)
    query = dict(urllib.parse.parse_qsl(url.query))
    path = url.path
    if path == "/protocol":
        await ws.send(ws.subprotocol or "none")
    elif path == "/close":
        await ws.close(int(query.get("code", "1000")), query.get("reason", ""))
        return
    elif path == "/close-after":
        message = await ws.recv()
        await ws.send(message)
        await ws.close(4000, "done")
        return
    elif path == "/drop":
        await ws.recv()
        ws.transport.abort()
        return
    elif path == "/big":
        await ws.send(b"x" * int(query.get("size", "0")))
    elif path == "/headers":
        await ws.send("cookie=%s x-test=%s" % (ws.request.headers.get("Cookie", ""), ws.request.headers.get("X-Test", "")))
    elif path == "/deflate":
        extensions = ws.request.headers.get("Sec-WebSocket-Extensions", "")
        active = [e.name for e in ws.protocol.extensions]
        await ws.send("offered=%s active=%s" % (extensions, ",".join(active)))
    try:
        async for message in ws:
            await ws.send(message)
    except Exception:
        pass


def process_request(connection, request):
    if request.path.startswith("/refuse"):
        return connection.respond(http.HTTPStatus.FORBIDDEN, "no\n")
    return None


def process_response(connection, request, response):
    if request.path.startswith("/headers"):
        response.headers["Set-Cookie"] = "ws=from-upgrade; Path=/"
    return response


async def main():
    port = int(sys.argv[1])
    context = None
    if "--cert" in sys.argv:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(sys.argv[sys.argv.index("--cert") + 1], sys.argv[sys.argv.index("--key") + 1])
    compression = None if "--no-deflate" in sys.argv else "deflate"
    async with serve(
        handler,
        "127.0.0.1",
        port,
        ssl=context,
        subprotocols=None,
        select_subprotocol=lambda ws, offered: next((p for p in offered if p in ("chat", "superchat")), None),
        process_request=process_request,
        process_response=process_response,
        compression=compression,
        max_size=None,
        ping_interval=None,
        # The opening handshake (TLS included) may take long on a loaded machine: a full test run on two
        # cores stalled a wss handshake past websockets' default 10 s, which then closed it.
        open_timeout=120,
    ) as server:
        print("listening", server.sockets[0].getsockname()[1], flush=True)
        await server.serve_forever()


asyncio.run(main())
