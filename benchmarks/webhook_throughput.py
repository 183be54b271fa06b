"""Objects converted per second by the reference webhook, over real HTTPS on 127.0.0.1.

Reviews of 1, 100 and 1000 CronTabs (v1beta1 -> v1) are sent back to back on one keep-alive
connection per client, bodies serialized in advance so the client does as little as it can.
Writes ``artifacts/bench/webhook.json`` and prints a Markdown table.

    python -m benchmarks.webhook_throughput [--seconds 5] [--clients 1]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import ssl
import statistics
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

from crdharness import certs
from crdharness.webhooks.reference import LocalWebhook

OUT = Path(__file__).resolve().parent.parent / "artifacts" / "bench"


def review(
    batch: int, source: str = "example.com/v1beta1", desired: str = "example.com/v1"
) -> bytes:
    """A ConversionReview of ``batch`` CronTabs, each with a ``hostPort`` to split."""
    objects = [
        {
            "apiVersion": source,
            "kind": "CronTab",
            "metadata": {
                "name": f"crontab-{i}",
                "namespace": "default",
                "uid": str(uuid.uuid4()),
                "resourceVersion": str(1000 + i),
                "creationTimestamp": "2026-01-01T00:00:00Z",
                "labels": {"app": "bench"},
            },
            "hostPort": f"host-{i}.example.com:{1000 + i}",
        }
        for i in range(batch)
    ]
    return json.dumps(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": {
                "uid": str(uuid.uuid4()),
                "desiredAPIVersion": desired,
                "objects": objects,
            },
        }
    ).encode()


class OneWriteConnection(http.client.HTTPSConnection):
    """Sends each request's head and body in one write, as kube-apiserver's Go client does.
    http.client writes them separately: two TLS records, so the server wakes twice for every
    request, which no API server request costs it."""

    def _send_output(self, message_body=None, encode_chunked=False):
        self._buffer.extend((b"", b""))
        head = b"\r\n".join(self._buffer)
        del self._buffer[:]
        self.send(head + (message_body or b""))


def client_loop(port: int, context: ssl.SSLContext, body: bytes, seconds: float, latencies: list):
    connection = OneWriteConnection("127.0.0.1", port, context=context)
    headers = {"Content-Type": "application/json"}
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        started = time.perf_counter()
        connection.request("POST", "/crdconvert", body=body, headers=headers)
        response = connection.getresponse()
        payload = response.read()
        if response.status != 200 or b'"Success"' not in payload:
            raise RuntimeError(f"bad answer {response.status}: {payload[-300:]!r}")
        latencies.append(time.perf_counter() - started)
    connection.close()


def measure(webhook: LocalWebhook, batch: int, clients: int, seconds: float) -> dict:
    return measure_port(
        webhook.port, str(webhook.ca.cert_path), review(batch), batch, clients, seconds
    )


def run_together(target, args_per_thread: list[tuple]) -> float:
    """Run ``target`` once per argument tuple, each in a thread, all at once; the seconds."""
    threads = [threading.Thread(target=target, args=args) for args in args_per_thread]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started


def measure_port(
    port: int, cafile: str, body: bytes, batch: int, clients: int, seconds: float
) -> dict:
    """Send ``body`` from ``clients`` keep-alive connections for ``seconds``; the figures."""
    context = ssl.create_default_context(cafile=cafile)
    client_loop(port, context, body, 0.5, [])  # warm-up
    per_client: list[list[float]] = [[] for _ in range(clients)]
    elapsed = run_together(
        client_loop, [(port, context, body, seconds, per_client[i]) for i in range(clients)]
    )
    latencies = sorted(x for xs in per_client for x in xs)
    requests_done = len(latencies)
    return {
        "batch": batch,
        "clients": clients,
        "requests": requests_done,
        "seconds": round(elapsed, 3),
        "reviews_per_second": round(requests_done / elapsed, 1),
        "objects_per_second": round(requests_done * batch / elapsed, 1),
        "latency_ms_p50": round(statistics.median(latencies) * 1000, 3),
        "latency_ms_p99": round(latencies[int(0.99 * (len(latencies) - 1))] * 1000, 3),
        "body_bytes": len(body),
    }


WRK_SCRIPT = """
local f = assert(io.open(os.getenv("WRK_BODY_FILE"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
wrk.headers["Content-Type"] = "application/json"
f:close()
"""


def measure_port_wrk(
    port: int,
    cafile: str,
    body: bytes,
    batch: int,
    clients: int,
    seconds: float,
    check_answer: bool = True,
) -> dict:
    """The same load from wrk (C, one connection per client): the server's cost without a
    Python client's. wrk does not read answers, so one is checked here first."""
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: apt-get install wrk (or use --generator python)")
    if check_answer:
        context = ssl.create_default_context(cafile=cafile)
        client_loop(port, context, body, 0.5, [])  # warm-up, and the answer is a Success
    with tempfile.TemporaryDirectory() as directory:
        (Path(directory) / "body.json").write_bytes(body)
        script = Path(directory) / "post.lua"
        script.write_text(WRK_SCRIPT)
        done = subprocess.run(
            [
                *(
                    "wrk",
                    f"-t{clients}",
                    f"-c{clients}",
                    f"-d{max(1, round(seconds))}s",
                    "--latency",
                ),
                *("-s", str(script), f"https://127.0.0.1:{port}/crdconvert"),
            ],
            capture_output=True,
            text=True,
            env={**os.environ, "WRK_BODY_FILE": str(Path(directory) / "body.json")},
            timeout=seconds + 60,
            check=True,
        )
    out = done.stdout
    if "Non-2xx" in out or "Socket errors" in out:
        raise RuntimeError(f"wrk saw errors:\n{out}")
    reviews_per_second = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    requests_done = int(re.search(r"(\d+) requests in", out).group(1))
    return {
        "generator": "wrk",
        "batch": batch,
        "clients": clients,
        "requests": requests_done,
        "seconds": seconds,
        "reviews_per_second": round(reviews_per_second, 1),
        "objects_per_second": round(reviews_per_second * batch, 1),
        "latency_ms_p50": _wrk_percentile(out, "50"),
        "latency_ms_p99": _wrk_percentile(out, "99"),
        "body_bytes": len(body),
    }


def _wrk_percentile(out: str, percent: str) -> float:
    value, unit = re.search(rf"^\s+{percent}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M).groups()
    return round(float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit], 3)


GENERATORS = {"python": measure_port, "wrk": measure_port_wrk}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--clients", type=int, nargs="+", default=[1])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 100, 1000])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        # No fault control: the webhook runs as the benchmarks measure it, one worker per CPU.
        webhook = LocalWebhook(
            certs.CertificateAuthority(Path(directory)), Path(directory), fault_control=False
        )
        webhook.start()
        try:
            results = [
                measure(webhook, b, c, args.seconds) for c in args.clients for b in args.batches
            ]
        finally:
            webhook.stop()
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "webhook.json").write_text(json.dumps(results, indent=2))
    print("| batch | clients | reviews/s | objects/s | p50 ms | p99 ms |")
    print("|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(
            f"| {r['batch']} | {r['clients']} | {r['reviews_per_second']} | "
            f"{r['objects_per_second']} | {r['latency_ms_p50']} | {r['latency_ms_p99']} |"
        )


if __name__ == "__main__":
    main()
