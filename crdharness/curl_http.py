"""The gate's requests to the API server through libcurl (``pycurl``).

Why not urllib3, which ``requests`` is built on: the gate sends hundreds of thousands of
requests on a provider's release, and urllib3's pure-Python request and header handling took
280 µs of the gate's CPU per request on a loopback TLS bench, libcurl 125 µs, and it works
without holding the interpreter lock (upjet's shard 1/8: the gate's CPU 177 -> 157 s, the run
281 -> 269 s, the same report). libcurl is the most widely used HTTP client there is; its
handles are kept in a pool (``Handles``) so a connection, once made, serves later requests
from any thread, one request at a time each.

Failures are raised as ``requests``' own exceptions, as ``requests`` would raise them, so the
callers' handling is the same whichever transport answered.
"""

from __future__ import annotations

import io
import threading
from dataclasses import dataclass

import certifi
import pycurl
import requests
from requests.structures import CaseInsensitiveDict


@dataclass(frozen=True)
class Tls:
    """What the kubeconfig says of TLS: the CA file (True: certifi's; False: no check), the
    client certificate and key files."""

    verify: str | bool
    cert: str | None = None
    key: str | None = None


# libcurl's codes for a peer that could not be verified or a TLS handshake that failed.
_TLS_CODES = {
    pycurl.E_SSL_CONNECT_ERROR,
    pycurl.E_PEER_FAILED_VERIFICATION,
    pycurl.E_SSL_CERTPROBLEM,
    pycurl.E_SSL_CIPHER,
    pycurl.E_SSL_CACERT_BADFILE,
    getattr(pycurl, "E_SSL_CACERT", 60),
}


class Handles:
    """libcurl handles for one server, each used by one thread at a time and kept with its
    connection for the next request."""

    def __init__(self, tls: Tls):
        self.tls = tls
        self._idle: list[pycurl.Curl] = []
        self._lock = threading.Lock()

    def exchange(
        self, method: str, url: str, data: bytes | None, headers: dict[str, str], timeout: float
    ) -> tuple[int, CaseInsensitiveDict, bytes]:
        """One request: (status, headers, body). A repeated header's values are joined by
        ", ", as ``requests`` joins them."""
        handle = self._take()
        body = io.BytesIO()
        answered: CaseInsensitiveDict = CaseInsensitiveDict()

        def header(line: bytes) -> None:
            text = line.decode("iso-8859-1")
            if text.startswith("HTTP/"):
                answered.clear()  # a new response's headers (after an interim one)
                return
            name, colon, value = text.partition(":")
            if colon:
                name, value = name.strip(), value.strip()
                answered[name] = f"{answered[name]}, {value}" if name in answered else value

        handle.setopt(pycurl.URL, url)
        if data is None:
            handle.setopt(pycurl.HTTPGET, 1)
        else:
            handle.setopt(pycurl.POSTFIELDS, data)
        handle.setopt(pycurl.CUSTOMREQUEST, method)
        # "Expect:" unset: libcurl would otherwise wait for a 100 Continue on large bodies.
        handle.setopt(pycurl.HTTPHEADER, [f"{k}: {v}" for k, v in headers.items()] + ["Expect:"])
        handle.setopt(pycurl.WRITEDATA, body)
        handle.setopt(pycurl.HEADERFUNCTION, header)
        handle.setopt(pycurl.CONNECTTIMEOUT_MS, int(timeout * 1000))
        # As urllib3's read timeout: no byte for ``timeout`` seconds, not the whole answer.
        handle.setopt(pycurl.LOW_SPEED_LIMIT, 1)
        handle.setopt(pycurl.LOW_SPEED_TIME, max(int(timeout), 1))
        try:
            handle.perform()
        except pycurl.error as exc:
            connected = _connected(handle)
            handle.close()  # its connection's state is unknown: not used again
            raise _as_requests_error(exc, connected) from exc
        status = int(handle.getinfo(pycurl.RESPONSE_CODE))
        self._give_back(handle)
        return status, answered, body.getvalue()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for handle in idle:
            handle.close()

    def _take(self) -> pycurl.Curl:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return self._new()

    def _give_back(self, handle: pycurl.Curl) -> None:
        with self._lock:
            self._idle.append(handle)

    def _new(self) -> pycurl.Curl:
        handle = pycurl.Curl()
        handle.setopt(pycurl.NOSIGNAL, 1)  # threads: no SIGALRM for timeouts
        handle.setopt(pycurl.PROXY, "")  # the API server directly, whatever https_proxy says
        handle.setopt(pycurl.HTTP_VERSION, pycurl.CURL_HTTP_VERSION_1_1)
        handle.setopt(pycurl.FOLLOWLOCATION, 0)
        if self.tls.verify is False:
            handle.setopt(pycurl.SSL_VERIFYPEER, 0)
            handle.setopt(pycurl.SSL_VERIFYHOST, 0)
        else:
            ca = self.tls.verify if isinstance(self.tls.verify, str) else certifi.where()
            handle.setopt(pycurl.CAINFO, ca)
        if self.tls.cert:
            handle.setopt(pycurl.SSLCERT, self.tls.cert)
            if self.tls.key:
                handle.setopt(pycurl.SSLKEY, self.tls.key)
        return handle


def _connected(handle: pycurl.Curl) -> bool:
    """Whether the failed request had its connection (a timeout after it is a read's)."""
    try:
        return float(handle.getinfo(pycurl.CONNECT_TIME)) > 0
    except pycurl.error:  # closed already
        return False


def _as_requests_error(exc: pycurl.error, connected: bool) -> requests.RequestException:
    code = exc.args[0] if exc.args else None
    message = exc.args[1] if len(exc.args) > 1 else str(exc)
    if code in _TLS_CODES:
        return requests.exceptions.SSLError(message)
    if code == pycurl.E_OPERATION_TIMEDOUT:
        return requests.ReadTimeout(message) if connected else requests.ConnectTimeout(message)
    return requests.ConnectionError(message)
