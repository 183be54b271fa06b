"""ConversionReview in, ConversionReview out (apiextensions.k8s.io/v1 and v1beta1).

A review that is not a well-formed ConversionReview is the caller's mistake (HTTP 400). A
well-formed review whose objects cannot be converted gets HTTP 200 with ``result.status:
Failed`` and a message that gives the reason and names the object.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from crdconvert.converters import ConversionError, Registry, describe

GROUP = "apiextensions.k8s.io"
REVIEW_VERSIONS = (f"{GROUP}/v1", f"{GROUP}/v1beta1")


class BadReview(Exception):
    """The body is not a ConversionReview we can answer (HTTP 400)."""


@dataclass(slots=True)
class Review:
    api_version: str
    uid: str
    desired_api_version: str
    objects: list
    # Filled in by ``convert``:
    converted: list = field(default_factory=list)
    failure: str | None = None


def parse(body) -> Review:
    if not isinstance(body, dict):
        raise BadReview("the body is not a JSON object")
    if body.get("kind") != "ConversionReview":
        raise BadReview(f"kind is {body.get('kind')!r}, not 'ConversionReview'")
    if body.get("apiVersion") not in REVIEW_VERSIONS:
        raise BadReview(
            f"apiVersion is {body.get('apiVersion')!r}, not one of {', '.join(REVIEW_VERSIONS)}"
        )
    request = body.get("request")
    if not isinstance(request, dict):
        raise BadReview("the ConversionReview has no request")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise BadReview("request.uid is missing or not a string")
    desired = request.get("desiredAPIVersion")
    if not isinstance(desired, str) or desired.count("/") != 1 or desired.startswith("/"):
        raise BadReview(f"request.desiredAPIVersion {desired!r} is not <group>/<version>")
    objects = request.get("objects")
    if objects is None:
        objects = []
    if not isinstance(objects, list):
        raise BadReview("request.objects is not a list")
    return Review(body["apiVersion"], uid, desired, objects)


def convert(review: Review, registry: Registry) -> Review:
    """Convert every object, independently and in order; the first failure fails the review."""
    converted = []
    for obj in review.objects:
        try:
            converted.append(registry.convert(obj, review.desired_api_version))
        except ConversionError as exc:
            source = obj.get("apiVersion") if isinstance(obj, dict) else "?"
            review.failure = f"{exc} ({describe(obj)}, {source} -> {review.desired_api_version})"
            review.converted = []
            return review
    review.converted = converted
    return review


def response(review: Review) -> dict:
    """The answer, in the review version the request used, with the uid copied."""
    if review.failure is not None:
        answer = {"uid": review.uid, "result": {"status": "Failed", "message": review.failure}}
    else:
        answer = {
            "uid": review.uid,
            "result": {"status": "Success"},
            "convertedObjects": review.converted,
        }
    return {"apiVersion": review.api_version, "kind": "ConversionReview", "response": answer}
