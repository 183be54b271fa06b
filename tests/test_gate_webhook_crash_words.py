"""How the proxy names what a webhook did when it gave no answer (``gate.webhook.crash``)."""

from __future__ import annotations

import requests

from crdharness.gate.webhook import crash


def test_what_the_webhook_did_by_how_the_call_failed():
    dropped = requests.ConnectionError(
        "('Connection aborted.', RemoteDisconnected('Remote end closed connection'))"
    )
    assert crash.what_happened(dropped, 29).startswith("crashed on this review")
    assert crash.what_happened(requests.ReadTimeout("read timed out"), 29).startswith("hung")
    refused = requests.ConnectionError("[Errno 111] Connection refused")
    assert crash.what_happened(refused, 29) == (
        "could not be reached: [Errno 111] Connection refused"  # the start-up hints read it
    )
    tls = requests.exceptions.SSLError("EOF occurred in violation of protocol")
    assert crash.what_happened(tls, 29).startswith("could not be reached: EOF")


def test_the_excerpt_is_the_panic_and_its_first_frames_not_other_requests_lines(tmp_path):
    log = crash.WebhookLog(tmp_path / "webhook.log")
    log.path.write_text('{"msg": "earlier"}\n')
    offset = log.offset()
    with log.path.open("a") as out:
        out.write('{"msg": "converted", "faults": ["panic-on=spec.x"]}\n')
        out.write("2026/11/27 10:00:00 http: panic serving 127.0.0.1:5: runtime error: nil map\n")
        out.write("goroutine 7 [running]:\nnet/http.(*conn).serve.func1()\nmain.convert()\nmore\n")
    excerpt = log.excerpt_since(offset)
    assert excerpt[0].endswith("http: panic serving 127.0.0.1:5: runtime error: nil map")
    assert excerpt[1:] == [
        "goroutine 7 [running]:",
        "net/http.(*conn).serve.func1()",
        "main.convert()",
    ]
    said = crash.message("crashed on this review (…)", excerpt, log)
    assert said.startswith("gate proxy: the webhook crashed") and "panic serving" in said
    quiet = crash.WebhookLog(tmp_path / "quiet.log")
    quiet.path.write_text('{"msg": "converted"}\n')
    assert quiet.excerpt_since(0) == []
    assert crash.message("hung on this review", [], quiet).endswith(
        "printed no panic from that moment"
    )
