"""TLS for the webhook: 1.2 or newer, optional client certificates, files reloaded on change."""

from __future__ import annotations

import asyncio
import os
import ssl
from dataclasses import dataclass


@dataclass(frozen=True)
class TLSFiles:
    cert: str
    key: str
    client_ca: str | None = None

    def stamp(self) -> tuple:
        """What changes when any of the files is rewritten or replaced."""
        stamps: list[tuple[int, int, int] | None] = []
        for path in (self.cert, self.key, self.client_ca):
            if path:
                try:
                    info = os.stat(path)
                    stamps.append((info.st_mtime_ns, info.st_size, info.st_ino))
                except OSError:
                    stamps.append(None)
        return tuple(stamps)


def server_context(files: TLSFiles) -> ssl.SSLContext:
    """TLS 1.2 or newer with the certificate from ``files``; client certificates signed by
    ``files.client_ca`` required when it is set."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if files.client_ca:
        context.verify_mode = ssl.CERT_REQUIRED
    reload(context, files)
    return context


def reload(context: ssl.SSLContext, files: TLSFiles) -> None:
    """Load the current files into ``context``; new handshakes use them, open ones are kept."""
    context.load_cert_chain(files.cert, files.key)
    if files.client_ca:
        context.load_verify_locations(files.client_ca)


async def watch(context: ssl.SSLContext, files: TLSFiles, log, interval: float = 1.0) -> None:
    """Reload the certificate whenever its files change (e.g. a rotated Secret volume)."""
    seen = files.stamp()
    while True:
        await asyncio.sleep(interval)
        current = files.stamp()
        if current == seen:
            continue
        try:
            reload(context, files)
        except (OSError, ssl.SSLError) as exc:
            # Half-written files during a rotation: keep serving the old certificate.
            log(f"certificate reload failed, keeping the previous one: {exc}")
            continue
        seen = current
        log("certificate reloaded")
