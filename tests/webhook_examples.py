"""The documentation's ConversionReview examples (FX-8, FX-9, FX-10 of the catalogue)."""

import copy

UID = "705ab4f5-6393-11e8-b7cc-42010a800002"

REQUEST_V1 = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "ConversionReview",
    "request": {
        "uid": UID,
        "desiredAPIVersion": "example.com/v1",
        "objects": [
            {
                "kind": "CronTab",
                "apiVersion": "example.com/v1beta1",
                "metadata": {
                    "creationTimestamp": "2019-09-04T14:03:02Z",
                    "name": "local-crontab",
                    "namespace": "default",
                    "resourceVersion": "143",
                    "uid": "3415a7fc-162b-4300-b5da-fd6083580d66",
                },
                "hostPort": "localhost:1234",
            },
            {
                "kind": "CronTab",
                "apiVersion": "example.com/v1beta1",
                "metadata": {
                    "creationTimestamp": "2019-09-03T13:02:01Z",
                    "name": "remote-crontab",
                    "resourceVersion": "12893",
                    "uid": "359a83ec-b575-460d-b553-d859cedde8a0",
                },
                "hostPort": "example.com:2345",
            },
        ],
    },
}

RESPONSE_V1 = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "ConversionReview",
    "response": {
        "uid": UID,
        "result": {"status": "Success"},
        "convertedObjects": [
            {
                "kind": "CronTab",
                "apiVersion": "example.com/v1",
                "metadata": {
                    "creationTimestamp": "2019-09-04T14:03:02Z",
                    "name": "local-crontab",
                    "namespace": "default",
                    "resourceVersion": "143",
                    "uid": "3415a7fc-162b-4300-b5da-fd6083580d66",
                },
                "host": "localhost",
                "port": "1234",
            },
            {
                "kind": "CronTab",
                "apiVersion": "example.com/v1",
                "metadata": {
                    "creationTimestamp": "2019-09-03T13:02:01Z",
                    "name": "remote-crontab",
                    "resourceVersion": "12893",
                    "uid": "359a83ec-b575-460d-b553-d859cedde8a0",
                },
                "host": "example.com",
                "port": "2345",
            },
        ],
    },
}


def in_review_version(document: dict, version: str) -> dict:
    """The same review in apiextensions.k8s.io/<version> (v1beta1 differs only there)."""
    copied = copy.deepcopy(document)
    copied["apiVersion"] = f"apiextensions.k8s.io/{version}"
    return copied
