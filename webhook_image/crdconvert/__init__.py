"""crdconvert: a reference CRD conversion webhook.

- ``review``      parse a ConversionReview, build the answer in the same review version
- ``converters``  the converter registry: one function per (group, kind, from, to)
- ``crontab``     the documentation's example: v1beta1 ``hostPort`` <-> v1 ``host`` + ``port``
- ``faults``      deliberate misbehaviour for tests, off unless asked for
- ``app``         the application: routing, limits, records (no I/O)
- ``server``      the HTTP/1.1 server over TLS that runs it
- ``tls``         the TLS context, reloaded when the certificate files change
- ``workers``     several server processes on one port
- ``__main__``    the command line (``python -m crdconvert``)
"""
