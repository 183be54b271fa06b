"""The documentation's example conversion, for ``crontabs.example.com``.

v1beta1 keeps the address in one field, ``hostPort: "host:port"``; v1 splits it into
``host`` and ``port`` (both strings).
"""

from __future__ import annotations

from crdconvert.converters import ANY_GROUP, ConversionError, Registry

# The documentation serves CronTab in example.com; tests serve copies in groups of their own.
GROUP, KIND = ANY_GROUP, "CronTab"
PARSE_FAILURE = "hostPort could not be parsed into a separate host and port"


def register(registry: Registry) -> Registry:
    registry.add(GROUP, KIND, "v1beta1", "v1", hostport_to_host_and_port)
    registry.add(GROUP, KIND, "v1", "v1beta1", host_and_port_to_hostport)
    return registry


def hostport_to_host_and_port(obj: dict) -> dict:
    host_port = obj.pop("hostPort", None)
    if host_port is not None:
        if not isinstance(host_port, str):
            raise ConversionError(PARSE_FAILURE)
        host, sep, port = host_port.rpartition(":")
        if not sep or not host or not port:
            raise ConversionError(PARSE_FAILURE)
        obj["host"], obj["port"] = host, port
    return obj


def host_and_port_to_hostport(obj: dict) -> dict:
    host, port = obj.pop("host", None), obj.pop("port", None)
    if host is not None or port is not None:
        obj["hostPort"] = f"{host or ''}:{port or ''}"
    return obj
