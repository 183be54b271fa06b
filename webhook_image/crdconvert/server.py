"""The webhook's HTTP/1.1 server: an asyncio protocol over httptools' parser, with TLS.

Written for this one application instead of running it under an ASGI server: the API server
sends a review for every single read and write of a converted object, and at one object per
review an ASGI server's per-request machinery (a scope, a task, receive and send messages)
cost more than the conversion itself; agnhost's Go webhook answered 1.3-1.8x as many reviews.
Here a request is answered straight from the parser's callback.

It does what the webhook needs and no more: keep-alive (closed after ``KEEP_ALIVE`` idle
seconds), pipelined requests answered in order, ``Expect: 100-continue``, refusals before the
body is read (then the connection closes), a body limit while streaming, 400 for requests
that are not HTTP, and a graceful stop on SIGTERM or SIGINT.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import ssl
import sys
from collections import deque

import httptools

from crdconvert import workers
from crdconvert.app import Answer, ConversionApp

KEEP_ALIVE = 5.0  # seconds an idle connection is kept
GRACE = 5.0  # seconds answers in progress get to finish when told to stop
REASONS = {
    200: b"OK",
    400: b"Bad Request",
    404: b"Not Found",
    405: b"Method Not Allowed",
    413: b"Payload Too Large",
    415: b"Unsupported Media Type",
    500: b"Internal Server Error",
    503: b"Service Unavailable",
}
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


def response_bytes(answer: Answer, head_only: bool = False) -> bytes:
    head = b"HTTP/1.1 %d %s\r\ncontent-type: %s\r\ncontent-length: %d\r\n" % (
        answer.status,
        REASONS.get(answer.status, b"Unknown"),
        answer.content_type,
        len(answer.body),
    )
    for name, value in answer.headers:
        head += name + b": " + value + b"\r\n"
    head += b"\r\n"
    return head if head_only else head + answer.body


class Connection(asyncio.Protocol):
    """One client connection: parse requests, answer each in order."""

    transport: asyncio.Transport  # set by connection_made, which asyncio calls first

    def __init__(self, app: ConversionApp, connections: set[Connection]):
        self.app = app
        self.connections = connections
        self.loop = asyncio.get_running_loop()
        self.parser = httptools.HttpRequestParser(self)
        self.closing = False
        self.paused = False
        self.last_active = self.loop.time()
        self.idle_timer: asyncio.TimerHandle | None = None
        # Answers not yet written, in request order: [bytes or None until ready, close?]
        self.queue: deque[list] = deque()
        self._new_request()

    def _new_request(self) -> None:
        self.url = b""
        self.method = self.path = ""  # set once the headers are complete
        self.headers: dict[bytes, bytes] = {}
        self.body: list[bytes] = []
        self.size = 0
        self.in_request = False
        self.refused = False

    # asyncio.Protocol

    def connection_made(self, transport) -> None:
        self.transport = transport
        self.connections.add(self)
        self.idle_timer = self.loop.call_later(KEEP_ALIVE, self._check_idle)

    def data_received(self, data: bytes) -> None:
        if self.closing:
            return
        self.last_active = self.loop.time()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._refuse_and_close(400, b"protocol upgrades are not served here\n")
        except httptools.HttpParserError as exc:
            self._refuse_and_close(400, b"malformed HTTP request: %s\n" % str(exc).encode())

    def connection_lost(self, exc) -> None:
        self.connections.discard(self)
        self.closing = True
        if self.idle_timer is not None:
            self.idle_timer.cancel()
        if self.in_request and self.method and not self.refused:
            self.app.client_went_away(self.method, self.path)

    # httptools callbacks

    def on_message_begin(self) -> None:
        self._new_request()
        self.in_request = True

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.lower()] = value

    def on_headers_complete(self) -> None:
        self.method = self.parser.get_method().decode("latin-1")
        self.path = self.url.split(b"?", 1)[0].decode("latin-1")
        refusal = self.app.head(self.method, self.path, self.headers)
        if refusal is not None:
            self.refused = True
            self._send(refusal, close=True)
        elif self.headers.get(b"expect", b"").lower() == b"100-continue":
            self.transport.write(CONTINUE)

    def on_body(self, chunk: bytes) -> None:
        if self.refused:
            return
        self.size += len(chunk)
        if self.size > self.app.max_body:
            self.refused = True
            self._send(self.app.too_large(self.method, self.path), close=True)
            return
        self.body.append(chunk)

    def on_message_complete(self) -> None:
        self.in_request = False
        if self.refused:
            return
        answer = self.app.answer(self.method, self.path, self.headers, b"".join(self.body))
        if answer.crash:  # a handler's panic: printed, the connection dropped unanswered
            sys.stderr.write(answer.crash)
            sys.stderr.flush()
            self.close()
            return
        close = answer.close or not self.parser.should_keep_alive()
        self._send(answer, close, head_only=self.method == "HEAD")

    # answers

    def _send(self, answer: Answer, close: bool, head_only: bool = False) -> None:
        data = response_bytes(answer, head_only)
        if not answer.delay and not self.queue:  # the usual case: write at once
            self._write(data, close)
            return
        entry = [None, close]
        self.queue.append(entry)
        if answer.delay:
            self.transport.pause_reading()  # no more requests until this one is answered
            self.paused = True
            self.loop.call_later(answer.delay, self._ready, entry, data)
        else:
            self._ready(entry, data)

    def _ready(self, entry: list, data: bytes) -> None:
        entry[0] = data
        while self.queue and self.queue[0][0] is not None and not self.closing:
            data, close = self.queue.popleft()
            self._write(data, close)
        if self.paused and not self.queue and not self.closing:
            self.paused = False
            self.transport.resume_reading()

    def _write(self, data: bytes, close: bool) -> None:
        if self.closing:
            return
        self.transport.write(data)
        self.last_active = self.loop.time()
        if close:
            self.closing = True
            self.transport.close()

    def _refuse_and_close(self, status: int, message: bytes) -> None:
        answer = Answer(status, message, headers=((b"connection", b"close"),))
        self._write(response_bytes(answer), close=True)

    # idle connections and stopping

    def busy(self) -> bool:
        return self.in_request or bool(self.queue)

    def _check_idle(self) -> None:
        if self.closing:
            return
        idle = self.loop.time() - self.last_active
        if idle >= KEEP_ALIVE and not self.busy():
            self.close()
            return
        self.idle_timer = self.loop.call_later(max(KEEP_ALIVE - idle, 0.1), self._check_idle)

    def close(self) -> None:
        if not self.closing:
            self.closing = True
            self.transport.close()


async def serve(
    app: ConversionApp, sock: socket.socket, context: ssl.SSLContext, handed: bool = False
) -> None:
    """Serve ``app`` until SIGTERM or SIGINT, then let answers in progress finish (up to
    ``GRACE`` seconds). ``sock`` is the listening socket or, if ``handed``, the channel on
    which a supervisor hands over the connections it accepted (``workers.run``)."""
    loop = asyncio.get_running_loop()
    connections: set[Connection] = set()
    stop = asyncio.Event()
    if handed:
        stop_receiving = _receive_handed(loop, sock, lambda: Connection(app, connections), context)
    else:
        server = await loop.create_server(
            lambda: Connection(app, connections), sock=sock, ssl=context, backlog=2048
        )
        stop_receiving = server.close
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    stop_receiving()
    for connection in list(connections):
        if not connection.busy():
            connection.close()
    deadline = loop.time() + GRACE
    while any(c.busy() for c in connections) and loop.time() < deadline:
        await asyncio.sleep(0.05)
    for connection in list(connections):
        connection.close()


def _receive_handed(loop, channel: socket.socket, factory, context: ssl.SSLContext):
    """Serve each connection handed over on ``channel``; the function that stops that."""
    handshakes: set[asyncio.Task] = set()

    async def start(sock: socket.socket) -> None:
        try:
            await loop.connect_accepted_socket(factory, sock, ssl=context)
        except (OSError, ssl.SSLError, asyncio.TimeoutError):
            sock.close()  # a client that went away or failed the handshake: nothing to answer

    def accept(sock: socket.socket) -> None:
        task = loop.create_task(start(sock))
        handshakes.add(task)
        task.add_done_callback(handshakes.discard)

    def readable() -> None:
        if not workers.receive_connections(channel, accept):
            stop()

    def stop() -> None:
        if channel.fileno() != -1:
            loop.remove_reader(channel.fileno())
            channel.close()

    channel.setblocking(False)
    loop.add_reader(channel.fileno(), readable)
    return stop
