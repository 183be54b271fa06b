"""The conversion reviews one test caused.

A test's webhook is shared with other tests of its worker, and the API server also converts
their objects in the background (deleting a CRD lists and deletes its objects, retrying those
it cannot convert). So a test looks only at reviews of its own CRD group.
"""


def reviews_of(webhook, group: str, since: int = 0) -> list[dict]:
    """Reviews (not rejected requests) after record ``since`` converting ``group``'s objects."""
    return [
        r
        for r in webhook.records()[since:]
        if "uid" in r and r.get("desiredAPIVersion", "").startswith(f"{group}/")
    ]
