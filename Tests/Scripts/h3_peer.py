#!/usr/bin/env python3
"""An HTTP/3 server on aioquic (PyPI), for Ferry's QUIC and HTTP/3 tests (issue 42).

usage: h3_peer.py CERT KEY

It listens on UDP 127.0.0.1, on a port the system picks, and prints it on one line. ALPN h3.
  GET /bytes/N   200 with N bytes: 0, 1, ..., 255 repeated; content-length N
  GET /stall/N   200, content-length N+1, an ETag, N of those bytes, and then nothing: the stream
                 stays open
  GET /once/N/M  N such bytes with an ETag; the first request without a Range gets M of them and
                 then nothing (the stream stays open); a Range "bytes=A-" gets a 206 from A
  GET /drip/N/C/MS  N such bytes, C at a time every MS milliseconds (a slow body)
  GET /flood-uni/N  opens N unidirectional streams of an unknown type, past the client's limit,
                 a byte on each, then answers 200 half a second later (a hostile server)
  GET /goaway/N  N such bytes; the first time, a GOAWAY on the control stream naming stream 0 (no
                 request taken) and the bytes 0.3 s later: the client must send the request again
                 on a new connection
  GET /reset/N  200, content-length N+1, N bytes, and 0.2 s later a stateless reset (RFC 9000 §10.3)
                 with the token of the connection ID the client uses; the server then forgets the
                 connection and answers nothing more on it
  POST /upload  read to the end of the request's body, then 200 with x-body-length and
                 x-body-sha256 (hex) of what arrived; the same "LENGTH SHA256" line goes to
                 uploads.log beside CERT
  GET /hostile/NAME  an answer that breaks a rule of RFC 9114, written frame by frame (see HOSTILE):
                 a body short of or past its content-length, two :status, an upper-case or
                 connection-specific field, DATA before HEADERS, a frame after the trailers, SETTINGS
                 or PUSH_PROMISE on the request stream, a 101; and, well formed, trailers and a 103
                 before the answer. The body is 1,024 bytes (0, 1, ..., 255 four times).
Every request is logged to requests.log beside CERT, one line: ":path range" ("-" without a Range),
and to qpack.log the QPACK bytes so far: "ENCODER_SENT DECODER_RECEIVED" (what went into the client's
dynamic table, and what its decoder stream said),
and each client address the first time a datagram comes from it to addresses.log ("HOST PORT").
  anything else  404 with "not found"
Each response carries x-path (the request's :path) and x-method.
With H3_PEER_MAX_STREAMS=N in the environment (h3_peer_few_streams.py sets 3), a client may open at
most N request streams at a time: more wait for the server's MAX_STREAMS. With H3_PEER_KEY_UPDATE=1
(h3_peer_key_update.py), the server updates its 1-RTT keys (RFC 9001 §6) halfway through each body.
With H3_PEER_RETRY=1 (h3_peer_retry.py) it answers each first Initial with a Retry (RFC 9000 §8.1.2);
with H3_PEER_VERSIONS=2 (h3_peer_v2_only.py) it speaks QUIC version 2 only, so a version 1 client
gets a Version Negotiation. With H3_PEER_QLOG=DIR, aioquic writes each connection's qlog there when
the connection ends (what the server parsed: the client's transport parameters, every frame). With
H3_PEER_HOST=ADDRESS it listens there instead of 127.0.0.1 (netns_migration.py: 10.9.0.1 in a network
namespace of its own).
"""
import asyncio
import os
import sys

from aioquic.asyncio import serve
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
import hashlib

from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ProtocolNegotiated


def once(path, range_field):
    """(status, fields, body, stalls) for /once/N/M, or None for another path."""
    parts = path.split("/")
    if len(parts) != 4 or parts[1] != "once" or not parts[2].isdigit() or not parts[3].isdigit():
        return None
    size, stall_after = int(parts[2]), int(parts[3])
    body = (bytes(range(256)) * (size // 256 + 1))[:size]
    fields = [(b"etag", b'"once-%d"' % size), (b"accept-ranges", b"bytes")]
    if range_field.startswith("bytes=") and range_field.endswith("-") and range_field[6:-1].isdigit():
        start = int(range_field[6:-1])
        fields.append((b"content-range", b"bytes %d-%d/%d" % (start, size - 1, size)))
        return 206, fields, body[start:], False
    first = path not in ONCE_SEEN
    ONCE_SEEN.add(path)
    return 200, fields, body[:stall_after] if first else body, first


ONCE_SEEN = set()
GOAWAY_SENT = []
ADDRESSES = set()
LOG = os.path.join(os.path.dirname(os.path.abspath(sys.argv[1])), "requests.log")


def body_for(path):
    for prefix in ("/bytes/", "/stall/", "/drip/", "/goaway/", "/reset/"):
        digits = path[len(prefix):].split("/")[0]
        if path.startswith(prefix) and digits.isdigit():
            count = int(digits)
            return 200, (bytes(range(256)) * (count // 256 + 1))[:count]
    return 404, b"not found"


# Each /hostile/NAME answer as frames: ("H", fields) a HEADERS frame, ("D", bytes) a DATA frame,
# (type, payload) any other frame, ("cut", n) the previous frames' bytes but the last n.
KIB = bytes(range(256)) * 4
OK = [(b":status", b"200")]
HOSTILE = {
    "short": [("H", OK + [(b"content-length", b"2048")]), ("D", KIB)],
    "long": [("H", OK + [(b"content-length", b"1000")]), ("D", KIB)],
    "two-status": [("H", [(b":status", b"200"), (b":status", b"500")]), ("D", KIB)],
    "upper": [("H", OK + [(b"X-Upper", b"1")]), ("D", KIB)],
    "connection": [("H", OK + [(b"connection", b"close")]), ("D", KIB)],
    "data-first": [("D", KIB), ("H", OK)],
    "after-trailers": [("H", OK), ("D", KIB), ("H", [(b"x-trailer", b"1")]), ("D", KIB)],
    "settings": [("H", OK), (0x4, b""), ("D", KIB)],
    "push-promise": [("H", OK), (0x5, b"\x00\x00"), ("D", KIB)],
    "status-101": [("H", [(b":status", b"101")])],
    "mid-frame": [("H", OK), ("D", KIB), ("cut", 10)],
    "trailers": [("H", OK + [(b"content-length", b"1024")]), ("D", KIB), ("H", [(b"x-trailer", b"1")])],
    "early-hints": [("H", [(b":status", b"103"), (b"link", b"</style.css>; rel=preload")]),
                    ("H", OK + [(b"content-length", b"1024")]), ("D", KIB)],
}


class Server(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = None
        self.uploads = {}
        limit = os.environ.get("H3_PEER_MAX_STREAMS")
        if limit:
            # Before the handshake: the transport parameters carry it.
            self._quic._local_max_streams_bidi.value = int(limit)
            self._quic._local_max_streams_bidi.sent = int(limit)

    def datagram_received(self, data, addr):
        if getattr(self, "forgotten", False):
            return
        if data and data[0] & 0xC0 == 0x40:
            self.last_destination = data[1:9]  # the client's destination: one of this server's IDs
        if addr not in ADDRESSES:
            ADDRESSES.add(addr)
            with open(os.path.join(os.path.dirname(LOG), "addresses.log"), "a") as log:
                log.write(f"{addr[0]} {addr[1]}\n")
        super().datagram_received(data, addr)

    def quic_event_received(self, event):
        if isinstance(event, ProtocolNegotiated):
            self.h3 = H3Connection(self._quic)
        if self.h3 is None:
            return
        for h3_event in self.h3.handle_event(event):
            if isinstance(h3_event, HeadersReceived) and dict(h3_event.headers).get(b":path") == b"/upload":
                self.uploads[h3_event.stream_id] = hashlib.sha256(), 0
                if h3_event.stream_ended:
                    self.answer_upload(h3_event.stream_id)
            elif isinstance(h3_event, DataReceived) and h3_event.stream_id in self.uploads:
                digest, length = self.uploads[h3_event.stream_id]
                digest.update(h3_event.data)
                self.uploads[h3_event.stream_id] = digest, length + len(h3_event.data)
                if h3_event.stream_ended:
                    self.answer_upload(h3_event.stream_id)
            elif isinstance(h3_event, HeadersReceived) and dict(h3_event.headers).get(b":path", b"").startswith(b"/flood-uni/"):
                count = int(dict(h3_event.headers)[b":path"].split(b"/")[2])
                self._quic._remote_max_streams_uni = 10**9  # past what the client allowed
                for _ in range(count):
                    self._quic.send_stream_data(self._quic.get_next_available_stream_id(is_unidirectional=True), b"\x21")
                self.transmit()
                # The answer half a second later: a client that kept up has refused the flood by then.
                stream_id = h3_event.stream_id
                asyncio.get_event_loop().call_later(0.5, self.answer_empty, stream_id)
            elif isinstance(h3_event, HeadersReceived) and dict(h3_event.headers).get(b":path", b"").startswith(b"/goaway/") and not GOAWAY_SENT:
                # A GOAWAY that took nothing (stream 0), alone in its datagram; the answer comes
                # 0.3 s later, so the client reads the GOAWAY first.
                GOAWAY_SENT.append(True)
                from aioquic.buffer import encode_uint_var
                from aioquic.h3.connection import encode_frame

                self._quic.send_stream_data(self.h3._local_control_stream_id, encode_frame(0x7, encode_uint_var(0)))
                self.transmit()
                path = dict(h3_event.headers)[b":path"].decode()
                with open(LOG, "a") as log:
                    log.write(f"{path} -\n")
                asyncio.get_event_loop().call_later(0.3, self.answer_bytes, h3_event.stream_id, path)
            elif isinstance(h3_event, HeadersReceived) and dict(h3_event.headers).get(b":path", b"").startswith(b"/hostile/"):
                self.hostile(h3_event.stream_id, dict(h3_event.headers)[b":path"].decode()[len("/hostile/"):])
            elif isinstance(h3_event, HeadersReceived):
                fields = dict(h3_event.headers)
                path = fields.get(b":path", b"").decode()
                range_field = fields.get(b"range", b"").decode()
                with open(LOG, "a") as log:
                    log.write(f"{path} {range_field or '-'}\n")
                with open(os.path.join(os.path.dirname(LOG), "qpack.log"), "a") as log:
                    log.write(f"{self.h3._encoder_bytes_sent} {self.h3._decoder_bytes_received}\n")
                answer = once(path, range_field)
                if answer:
                    status, extra, body, stalls = answer
                    length = int(path.split("/")[2]) - (int(range_field[6:-1]) if status == 206 else 0)
                else:
                    status, body = body_for(path)
                    stalls = path.startswith("/stall/") or path.startswith("/reset/")
                    extra = [(b"etag", b'"stall"')] if stalls else []
                    length = len(body) + (1 if stalls else 0)
                self.h3.send_headers(
                    h3_event.stream_id,
                    [
                        (b":status", str(status).encode()),
                        (b"content-length", str(length).encode()),
                        (b"content-type", b"application/octet-stream"),
                        (b"x-path", path.encode()),
                        (b"x-method", fields.get(b":method", b"")),
                    ]
                    + extra,
                )
                if path.startswith("/drip/") and len(path.split("/")) == 5:
                    _, _, _, chunk, pause = path.split("/")
                    self.drip(h3_event.stream_id, body, int(chunk), int(pause) / 1000)
                elif path.startswith("/reset/"):
                    self.h3.send_data(h3_event.stream_id, body, end_stream=False)
                    asyncio.get_event_loop().call_later(0.2, self.stateless_reset)
                elif stalls:
                    self.h3.send_data(h3_event.stream_id, body, end_stream=False)
                elif os.environ.get("H3_PEER_KEY_UPDATE") and len(body) > 1:
                    half = len(body) // 2
                    self.h3.send_data(h3_event.stream_id, body[:half], end_stream=False)
                    self.transmit()
                    self._quic.request_key_update()
                    self.h3.send_data(h3_event.stream_id, body[half:], end_stream=True)
                else:
                    self.h3.send_data(h3_event.stream_id, body, end_stream=True)
                self.transmit()

    def hostile(self, stream_id, name):
        """Writes HOSTILE[name] on the stream as raw frames, then ends it."""
        from aioquic.h3.connection import encode_frame

        wire = b""
        for kind, value in HOSTILE[name]:
            if kind == "H":
                wire += encode_frame(0x1, self.h3._encode_headers(stream_id, value))
            elif kind == "D":
                wire += encode_frame(0x0, value)
            elif kind == "cut":
                wire = wire[:-value]
            else:
                wire += encode_frame(kind, value)
        self._quic.send_stream_data(stream_id, wire, end_stream=True)
        self.transmit()

    def stateless_reset(self):
        """Forgets the connection, and tells the client so with the token of the ID it uses."""
        token = next(c.stateless_reset_token for c in self._quic._host_cids if c.cid == self.last_destination)
        self.forgotten = True
        self._transport.sendto(bytes([0x40 | 0x15]) + os.urandom(24) + token, self._quic._network_paths[0].addr)

    def drip(self, stream_id, body, chunk, pause):
        self.h3.send_data(stream_id, body[:chunk], end_stream=len(body) <= chunk)
        self.transmit()
        if len(body) > chunk:
            asyncio.get_event_loop().call_later(pause, self.drip, stream_id, body[chunk:], chunk, pause)

    def answer_bytes(self, stream_id, path):
        _, body = body_for(path)
        self.h3.send_headers(stream_id, [(b":status", b"200"), (b"content-length", str(len(body)).encode())])
        self.h3.send_data(stream_id, body, end_stream=True)
        self.transmit()

    def answer_empty(self, stream_id):
        self.h3.send_headers(stream_id, [(b":status", b"200"), (b"content-length", b"0")], end_stream=True)
        self.transmit()

    def answer_upload(self, stream_id):
        digest, length = self.uploads.pop(stream_id)
        with open(os.path.join(os.path.dirname(LOG), "uploads.log"), "a") as log:
            log.write(f"{length} {digest.hexdigest()}\n")
        self.h3.send_headers(
            stream_id,
            [(b":status", b"200"), (b"content-length", b"0"), (b"x-body-length", str(length).encode()),
             (b"x-body-sha256", digest.hexdigest().encode())],
            end_stream=True,
        )
        self.transmit()


async def main():
    configuration = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN, max_datagram_frame_size=None)
    configuration.load_cert_chain(sys.argv[1], sys.argv[2])
    if os.environ.get("H3_PEER_VERSIONS") == "2":
        from aioquic.quic.packet import QuicProtocolVersion

        configuration.supported_versions = [QuicProtocolVersion.VERSION_2]
    if os.environ.get("H3_PEER_QLOG"):
        from aioquic.quic.logger import QuicFileLogger

        class WholeFileLogger(QuicFileLogger):
            """Each qlog written beside, then renamed in: a reader never sees half a file."""

            def end_trace(self, trace):
                final = self.path
                self.path = final + ".partial"
                os.makedirs(self.path, exist_ok=True)
                try:
                    super().end_trace(trace)
                finally:
                    for name in os.listdir(self.path):
                        os.rename(os.path.join(self.path, name), os.path.join(final, name))
                    self.path = final

        configuration.quic_logger = WholeFileLogger(os.environ["H3_PEER_QLOG"])
    retry = os.environ.get("H3_PEER_RETRY") == "1"
    server = await serve(os.environ.get("H3_PEER_HOST", "127.0.0.1"), 0, configuration=configuration, create_protocol=Server, retry=retry)
    print(server._transport.get_extra_info("sockname")[1], flush=True)
    await asyncio.Future()


asyncio.run(main())
