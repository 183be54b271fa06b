"""crdconvert's own HTTP/1.1 server (``crdconvert.server``), spoken to over real TLS sockets:
keep-alive, pipelining, ``Expect: 100-continue``, HEAD, malformed requests, idle connections
and a graceful stop."""

import json
import socket
import ssl
import threading

import pytest

from crdharness import certs
from crdharness.polling import wait_for
from crdharness.webhooks.reference import LocalWebhook
from tests import webhook_examples as ex

BODY = json.dumps(ex.REQUEST_V1).encode()


@pytest.fixture
def ca(tmp_path):
    return certs.CertificateAuthority(tmp_path)


@pytest.fixture
def webhook(ca, tmp_path):
    server = LocalWebhook(ca, tmp_path, workers=1).start()
    yield server
    server.stop()


def connect(server: LocalWebhook) -> ssl.SSLSocket:
    context = ssl.create_default_context(cafile=str(server.ca.cert_path))
    raw = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    return context.wrap_socket(raw, server_hostname="127.0.0.1")


def post(body: bytes = BODY, *extra: str, path: str = "/crdconvert") -> bytes:
    head = [
        f"POST {path} HTTP/1.1",
        "Host: 127.0.0.1",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
        *extra,
    ]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def read_responses(conn: ssl.SSLSocket, count: int) -> list[tuple[int, dict, bytes]]:
    """``count`` whole responses (status, headers, body) from ``conn``."""
    buffer, answers = b"", []
    while len(answers) < count:
        while b"\r\n\r\n" not in buffer:
            chunk = conn.recv(65536)
            assert chunk, f"the connection closed after {len(answers)} of {count} answers"
            buffer += chunk
        head, buffer = buffer.split(b"\r\n\r\n", 1)
        status_line, *lines = head.decode("latin-1").split("\r\n")
        headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}
        length = int(headers["content-length"])
        while len(buffer) < length:
            chunk = conn.recv(65536)
            assert chunk, "the connection closed in the middle of a body"
            buffer += chunk
        answers.append((int(status_line.split()[1]), headers, buffer[:length]))
        buffer = buffer[length:]
    return answers


def closed_by_server(conn: ssl.SSLSocket) -> bool:
    try:
        return conn.recv(1) == b""
    except (ConnectionResetError, ssl.SSLError):
        return True


def review_uid(body: bytes) -> str:
    return json.loads(body)["response"]["uid"]


def test_one_connection_carries_many_reviews(webhook):
    with connect(webhook) as conn:
        for _ in range(3):
            conn.sendall(post())
            [(status, headers, body)] = read_responses(conn, 1)
            assert status == 200 and headers["content-type"] == "application/json"
            assert review_uid(body) == ex.UID


def test_pipelined_requests_are_answered_in_order(webhook):
    first, second = json.loads(BODY), json.loads(BODY)
    first["request"]["uid"], second["request"]["uid"] = "first", "second"
    with connect(webhook) as conn:
        conn.sendall(
            post(json.dumps(first).encode())
            + post(b"{}", path="/nowhere")  # refused before its body: closes after the answer
            + post(json.dumps(second).encode())
        )
        answers = read_responses(conn, 2)
        assert [a[0] for a in answers] == [200, 404]
        assert review_uid(answers[0][2]) == "first"
        assert answers[1][1]["connection"] == "close"
        assert closed_by_server(conn)


def test_expect_100_continue_is_honoured(webhook):
    head, body = post(BODY, "Expect: 100-continue").split(b"\r\n\r\n", 1)
    with connect(webhook) as conn:
        conn.sendall(head + b"\r\n\r\n")
        assert conn.recv(4096) == b"HTTP/1.1 100 Continue\r\n\r\n"
        conn.sendall(body)
        [(status, _, answer)] = read_responses(conn, 1)
        assert status == 200 and review_uid(answer) == ex.UID


def test_a_body_streamed_past_the_limit_is_413_and_the_rest_is_not_read(ca, tmp_path):
    server = LocalWebhook(ca, tmp_path, workers=1, max_body=4096).start()
    try:
        with connect(server) as conn:
            head = (
                "POST /crdconvert HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
            )
            conn.sendall(head.encode())
            for _ in range(5):  # no Content-Length: the limit is found while streaming
                conn.sendall(b"3e8\r\n" + b" " * 1000 + b"\r\n")
            [(status, headers, body)] = read_responses(conn, 1)
            assert status == 413 and b"4096" in body
            assert headers["connection"] == "close" and closed_by_server(conn)
    finally:
        server.stop()


def test_head_of_a_health_path_has_no_body(webhook):
    with connect(webhook) as conn:
        conn.sendall(b"HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        conn.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
        data = b""
        while data.count(b"HTTP/1.1 200") < 2 or not data.endswith(b"ok"):
            chunk = conn.recv(4096)
            assert chunk, data
            data += chunk
        head_answer, get_answer = data.split(b"HTTP/1.1 200")[1:]
        assert b"content-length: 2" in head_answer and not head_answer.endswith(b"ok")
        assert get_answer.endswith(b"\r\n\r\nok")


@pytest.mark.parametrize(
    "garbage",
    [b"NOT HTTP AT ALL\r\n\r\n", b"POST /crdconvert HTTP/1.1\r\nContent-Length: x\r\n\r\n"],
)
def test_what_is_not_http_gets_400_and_the_connection_closes(webhook, garbage):
    with connect(webhook) as conn:
        conn.sendall(garbage)
        answer = conn.recv(4096)
        assert answer.startswith(b"HTTP/1.1 400"), answer
        assert b"malformed HTTP request" in answer
        assert closed_by_server(conn)
    with connect(webhook) as conn:  # and the server still serves
        conn.sendall(post())
        assert read_responses(conn, 1)[0][0] == 200


def test_an_http_1_0_client_gets_its_answer_and_the_connection_closes(webhook):
    with connect(webhook) as conn:
        conn.sendall(post().replace(b"HTTP/1.1", b"HTTP/1.0", 1))
        [(status, _, _)] = read_responses(conn, 1)
        assert status == 200
        assert closed_by_server(conn)


def test_idle_connections_are_closed_after_the_keep_alive_time(webhook):
    with connect(webhook) as conn:
        conn.sendall(post())
        read_responses(conn, 1)
        conn.settimeout(15)  # the server's KEEP_ALIVE is 5 s
        assert closed_by_server(conn), "the idle connection was not closed in 15 s"


def test_stopping_lets_an_answer_in_progress_finish(ca, tmp_path):
    server = LocalWebhook(ca, tmp_path, faults=("delay=1",), fault_control=False).start()
    answers = []

    def ask() -> None:
        with connect(server) as conn:
            conn.sendall(post())
            answers.extend(read_responses(conn, 1))

    before = len(server.records())  # the readiness probe's review
    asking = threading.Thread(target=ask)
    asking.start()
    try:
        # The record is written when the answer is ready; the delay fault then holds it 1 s.
        wait_for(lambda: len(server.records()) > before, 10, "the review to reach the webhook")
    finally:
        server.stop()
    asking.join(15)
    assert [a[0] for a in answers] == [200]
