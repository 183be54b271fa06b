"""The webhook under concurrent load with malformed requests mixed in.

    python -m benchmarks.webhook_soak [--seconds 60] [--clients 8]

Each client keeps one HTTPS connection and sends, at random: good reviews (1, 10 or 100
objects, in a v1 or v1beta1 review), reviews the webhook must answer ``Failed`` (a version it
cannot convert), and malformed requests (broken or truncated JSON, random bytes, wrong kind,
no uid, objects not a list, wrong content type, wrong method, a declared body over the limit);
now and then it hangs up half-way through a body. Checked afterwards:

- no crash: the same webhook process is still running and still answers;
- no hang: every request was answered within ``TIMEOUT`` seconds;
- no request lost: every answer was the expected one, and the webhook's records hold each
  review exactly once (by uid) and each rejected request once (counted by status);
- memory stable: RSS is sampled twice a second; the median of the last quarter of the run may
  exceed the median of the second quarter by at most 5 % + 4 MiB. (Before keep-alive
  connections were closed after rejecting an unread body it grew from 67 to 77 MiB in a
  minute; since then it stays within 1 MiB.) Only a run of a minute or more can tell: in the
  first tens of seconds glibc's allocator keeps growing its heap while connections the webhook
  closes come and go (8 s of this mix: 39 to 46 MiB; ``malloc_trim`` hands 6-15 MiB of it
  back at any moment, and Python's own allocations stay flat under ``tracemalloc``), so
  ``soak(check_memory=False)`` leaves the verdict out of ``problems`` for short runs.

Writes ``artifacts/bench/webhook-soak.json``.
"""

from __future__ import annotations

import argparse
import collections
import http.client
import json
import os
import random
import socket
import ssl
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from benchmarks.webhook_throughput import review, run_together
from crdharness import certs
from crdharness.webhooks.reference import CONVERT_PATH, LocalWebhook

OUT = Path(__file__).resolve().parent.parent / "artifacts" / "bench"
TIMEOUT = 10.0  # seconds an answer may take before the request counts as hung
JSON = "application/json"


@dataclass
class Request:
    """One request of the mix: what is sent and the status it must get back."""

    case: str
    body: bytes
    status: int
    uid: str | None = None  # reviews: the uid the answer and the records must carry
    result: str | None = None  # reviews: Success or Failed
    objects: int = 0
    method: str = "POST"
    content_type: str = JSON


def _with_uid(batch: int, review_version: str = "v1", source: str = "example.com/v1beta1"):
    document = json.loads(review(batch, source=source))
    document["apiVersion"] = f"apiextensions.k8s.io/{review_version}"
    return document, document["request"]["uid"]


def good_review(rng: random.Random) -> Request:
    batch = rng.choice((1, 10, 100))
    document, uid = _with_uid(batch, rng.choice(("v1", "v1beta1")))
    return Request("good", json.dumps(document).encode(), 200, uid, "Success", batch)


def unconvertible_review(rng: random.Random) -> Request:
    document, uid = _with_uid(rng.choice((1, 10)), source="example.com/v9")
    return Request("unconvertible", json.dumps(document).encode(), 200, uid, "Failed")


def malformed(rng: random.Random) -> Request:
    document, _ = _with_uid(3)
    body = json.dumps(document).encode()
    case = rng.choice(
        ("truncated", "random-bytes", "wrong-kind", "no-uid", "objects-not-list", "not-json")
    )
    if case == "truncated":
        return Request(case, body[: len(body) // 2], 400)
    if case == "random-bytes":
        return Request(case, os.urandom(rng.randint(1, 4096)), 400)
    if case == "wrong-kind":
        document["kind"] = "AdmissionReview"
    elif case == "no-uid":
        del document["request"]["uid"]
    elif case == "objects-not-list":
        document["request"]["objects"] = {"not": "a list"}
    else:
        return Request(case, b"{'single': 'quotes'}", 400)
    return Request(case, json.dumps(document).encode(), 400)


def wrong_request(rng: random.Random) -> Request:
    if rng.random() < 0.5:
        return Request("wrong-content-type", b"{}", 415, content_type="text/plain")
    return Request("wrong-method", b"", 405, method="GET")


MIX = (  # (weight, maker)
    (50, good_review),
    (10, unconvertible_review),
    (30, malformed),
    (10, wrong_request),
)


@dataclass
class Tally:
    sent: collections.Counter = field(default_factory=collections.Counter)
    problems: list[str] = field(default_factory=list)
    uids: list[str] = field(default_factory=list)
    rejected: collections.Counter = field(default_factory=collections.Counter)  # by status
    over_limit: int = 0  # declared bodies over the limit (rejected from the headers alone)
    abandoned: int = 0  # connections dropped half-way through a body
    lock: threading.Lock = field(default_factory=threading.Lock)

    def problem(self, text: str) -> None:
        with self.lock:
            if len(self.problems) < 50:
                self.problems.append(text)


def _check(request: Request, status: int, payload: bytes) -> str | None:
    """What is wrong with this answer (None if it is the expected one)."""
    if status != request.status:
        return f"{request.case}: status {status}, expected {request.status}: {payload[:200]!r}"
    if request.uid is None:
        return None
    answer = json.loads(payload)["response"]
    if answer["uid"] != request.uid:
        return f"{request.case}: answered uid {answer['uid']}, sent {request.uid}"
    if answer["result"]["status"] != request.result:
        return f"{request.case}: result {answer['result']}, expected {request.result}"
    if request.result == "Success" and len(answer["convertedObjects"]) != request.objects:
        return f"{request.case}: {len(answer['convertedObjects'])} of {request.objects} objects"
    return None


def raw_request(port: int, context: ssl.SSLContext, data: bytes, hang_up: bool = False) -> bytes:
    """Send ``data`` on a connection of its own; read whatever comes back, or hang up."""
    with (
        socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        tls.sendall(data)
        return b"" if hang_up else tls.recv(4096)


def post_head(content_length: int) -> bytes:
    return (
        f"POST {CONVERT_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {JSON}\r\n"
        f"Content-Length: {content_length}\r\n\r\n"
    ).encode()


def over_limit(port: int, context: ssl.SSLContext, tally: Tally) -> None:
    answer = raw_request(port, context, post_head(999_999_999))
    if not answer.startswith(b"HTTP/1.1 413"):
        tally.problem(f"over-limit: expected 413, got {answer[:80]!r}")
    with tally.lock:
        tally.over_limit += 1


def abandon(port: int, context: ssl.SSLContext, tally: Tally) -> None:
    partial = b'{"apiVersion": "apiextensions.k8s.io/v1", '
    raw_request(port, context, post_head(5000) + partial, hang_up=True)
    with tally.lock:
        tally.abandoned += 1


def client_loop(port: int, cafile: str, seconds: float, seed: int, tally: Tally) -> None:
    rng = random.Random(seed)
    context = ssl.create_default_context(cafile=cafile)
    makers = [maker for weight, maker in MIX for _ in range(weight)]
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=TIMEOUT)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        roll = rng.random()
        try:
            if roll < 0.02:
                over_limit(port, context, tally)
                continue
            if roll < 0.04:
                abandon(port, context, tally)
                continue
            request = rng.choice(makers)(rng)
            connection.request(
                request.method,
                CONVERT_PATH,
                body=request.body if request.method == "POST" else None,
                headers={"Content-Type": request.content_type},
            )
            response = connection.getresponse()
            payload = response.read()
        except (OSError, http.client.HTTPException) as exc:
            tally.problem(f"no answer: {type(exc).__name__}: {exc}")
            connection.close()
            continue
        wrong = _check(request, response.status, payload)
        with tally.lock:
            tally.sent[request.case] += 1
            if request.uid:
                tally.uids.append(request.uid)
            else:
                tally.rejected[request.status] += 1
        if wrong:
            tally.problem(wrong)
    connection.close()


def sample_memory(pid: int, stop: threading.Event, samples: list[int]) -> None:
    """RSS of ``pid`` and its worker processes together, twice a second until ``stop``."""
    process = psutil.Process(pid)
    while not stop.wait(0.5):
        samples.append(sum(_rss(p) for p in [process, *process.children(recursive=True)]))


def _rss(process: psutil.Process) -> int:
    try:
        return process.memory_info().rss
    except psutil.Error:  # a worker that just exited
        return 0


def reconcile(records: list[dict], tally: Tally) -> list[str]:
    """Every answered request is in the records exactly once. (The readiness probe's reviews
    are recorded too; they are simply not among the ones sent here.)"""
    problems = []
    recorded = collections.Counter(r["uid"] for r in records if "uid" in r)
    sent = collections.Counter(tally.uids)
    missing = sent - recorded
    if missing:
        problems.append(f"{sum(missing.values())} reviews answered but not recorded")
    duplicated = [u for u, n in recorded.items() if n > 1]
    if duplicated:
        problems.append(f"{len(duplicated)} reviews recorded more than once")
    went_away = [r for r in records if str(r.get("message", "")).startswith("the client went")]
    rejected = collections.Counter(r["rejected"] for r in records if "rejected" in r)
    rejected[400] -= len(went_away)
    expected = tally.rejected + collections.Counter({413: tally.over_limit})
    for status in sorted(set(rejected) | set(expected)):
        if rejected[status] != expected[status]:
            problems.append(
                f"{expected[status]} requests rejected with {status}, "
                f"{rejected[status]} recorded so"
            )
    if len(went_away) > tally.abandoned:
        problems.append(f"{len(went_away)} hang-ups recorded, {tally.abandoned} made")
    return problems


def memory_verdict(rss: list[int]) -> dict:
    quarter = max(1, len(rss) // 4)
    early = statistics.median(rss[quarter : 2 * quarter] or rss)
    late = statistics.median(rss[-quarter:])
    allowed = early * 1.05 + 4 * 2**20
    return {
        "rss_mib_second_quarter_median": round(early / 2**20, 1),
        "rss_mib_last_quarter_median": round(late / 2**20, 1),
        "rss_mib_max": round(max(rss) / 2**20, 1),
        "stable": late <= allowed,
    }


def soak(
    webhook: LocalWebhook, seconds: float, clients: int, seed: int = 1, check_memory: bool = True
) -> dict:
    """Run the mix against a started ``webhook``; the report (``ok`` says if all held).
    ``check_memory``: a memory verdict that is not stable is a problem (for runs of a minute
    or more; the verdict is in the report either way)."""
    tally = Tally()
    stop = threading.Event()
    samples: list[int] = []
    sampler = threading.Thread(target=sample_memory, args=(webhook.process.pid, stop, samples))
    pid = webhook.process.pid
    sampler.start()
    elapsed = run_together(
        client_loop,
        [
            (webhook.port, str(webhook.ca.cert_path), seconds, seed + i, tally)
            for i in range(clients)
        ],
    )
    stop.set()
    sampler.join()

    problems = list(tally.problems)
    if not webhook.running() or webhook.process.pid != pid:
        problems.append(f"the webhook is gone: {webhook.log_tail()}")
    else:
        try:
            webhook.wait_ready(timeout=TIMEOUT)  # still answers a review after all that
        except Exception as exc:
            problems.append(f"the webhook no longer answers: {exc}")
    problems += reconcile(webhook.records(), tally)
    memory = memory_verdict(samples) if len(samples) >= 4 else {"stable": False}
    if check_memory and not memory["stable"]:
        problems.append(f"memory grew: {memory}")
    answered = sum(tally.sent.values())
    return {
        "seconds": round(elapsed, 1),
        "clients": clients,
        "requests": answered + tally.over_limit + tally.abandoned,
        "requests_per_second": round(answered / elapsed, 1),
        "by_case": dict(sorted(tally.sent.items())),
        "over_limit": tally.over_limit,
        "abandoned": tally.abandoned,
        "memory": memory,
        "rss_mib_samples": [round(r / 2**20, 1) for r in samples[:: max(1, len(samples) // 60)]],
        "problems": problems,
        "ok": not problems,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        # No fault control: the webhook runs as the benchmarks measure it, one worker per CPU.
        webhook = LocalWebhook(
            certs.CertificateAuthority(Path(directory)), Path(directory), fault_control=False
        )
        webhook.start()
        try:
            result = soak(webhook, args.seconds, args.clients, args.seed)
        finally:
            webhook.stop()
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "webhook-soak.json").write_text(json.dumps(result, indent=2))
    summary = {k: v for k, v in result.items() if k != "rss_mib_samples"}
    print(json.dumps(summary, indent=2))
    print(f"webhook soak: {'OK' if result['ok'] else 'PROBLEMS'}")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
