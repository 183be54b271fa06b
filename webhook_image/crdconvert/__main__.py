"""Run the webhook: ``python -m crdconvert --tls-cert tls.crt --tls-key tls.key``."""

from __future__ import annotations

import argparse
import asyncio
import socket
import ssl
import sys

from crdconvert import crontab, server, tls, workers
from crdconvert.app import DEFAULT_MAX_BODY, DEFAULT_PATH, ConversionApp
from crdconvert.converters import ANY_GROUP, Registry
from crdconvert.faults import NAMES, Faults, UnknownFault
from crdconvert.records import RecordSink


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="crdconvert", description="CRD conversion webhook")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8443)
    parser.add_argument("--tls-cert", required=True, help="PEM certificate (chain) file")
    parser.add_argument("--tls-key", required=True, help="PEM private key file")
    parser.add_argument("--client-ca", help="require client certificates signed by this CA")
    parser.add_argument("--path", default=DEFAULT_PATH, help="conversion path")
    parser.add_argument("--max-body-bytes", type=int, default=DEFAULT_MAX_BODY)
    parser.add_argument("--record-file", help="append review records here (default: stdout)")
    parser.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="NAME",
        help=f"misbehave on purpose, for tests (repeatable): {', '.join(NAMES)}",
    )
    parser.add_argument(
        "--identity",
        action="append",
        default=[],
        metavar="KIND",
        help="also convert KIND (in any group) by changing only apiVersion (repeatable)",
    )
    parser.add_argument(
        "--fault-control",
        action="store_true",
        help="allow changing fault modes at run time (PUT a JSON list to /control/faults); "
        "runs one worker process, whose faults the PUT changes",
    )
    parser.add_argument(
        "--workers",
        default="auto",
        help="server processes on the port (default: one per usable CPU; 1 with --fault-control)",
    )
    return parser.parse_args(argv)


def worker_count(args: argparse.Namespace) -> int:
    if args.workers == "auto":
        return 1 if args.fault_control else workers.usable_cpus()
    if not args.workers.isdigit() or int(args.workers) < 1:
        raise SystemExit(f"crdconvert: --workers takes a positive number or auto: {args.workers!r}")
    if args.fault_control and int(args.workers) > 1:
        raise SystemExit("crdconvert: --fault-control changes one process; use --workers 1")
    return int(args.workers)


def log(line: str) -> None:
    print(f"crdconvert: {line}", file=sys.stderr, flush=True)


async def serve(
    args: argparse.Namespace,
    faults: Faults,
    sock: socket.socket,
    context: ssl.SSLContext,
    files: tls.TLSFiles,
    handed: bool,
) -> None:
    registry = crontab.register(Registry())
    # The simplest converter of all, for CRDs whose versions share one schema (kind Passthrough).
    registry.add_identity(ANY_GROUP, "Passthrough")
    for kind in args.identity:
        registry.add_identity(ANY_GROUP, kind)
    app = ConversionApp(
        registry,
        path=args.path,
        max_body=args.max_body_bytes,
        faults=faults,
        fault_control=args.fault_control,
        records=RecordSink.to_file(args.record_file) if args.record_file else None,
    )
    watcher = asyncio.create_task(tls.watch(context, files, log))
    try:
        await server.serve(app, sock, context, handed)
    finally:
        watcher.cancel()


def _run(
    args: argparse.Namespace,
    faults: Faults,
    sock: socket.socket,
    context: ssl.SSLContext,
    files: tls.TLSFiles,
    handed: bool = False,
) -> None:
    try:
        import uvloop

        uvloop.run(serve(args, faults, sock, context, files, handed))
    except ImportError:
        asyncio.run(serve(args, faults, sock, context, files, handed))


def main(argv=None) -> None:
    args = parse_args(argv)
    count = worker_count(args)
    try:
        faults = Faults.parse(args.fault) if args.fault else Faults.from_env()
    except UnknownFault as exc:
        raise SystemExit(f"crdconvert: {exc}") from None
    files = tls.TLSFiles(args.tls_cert, args.tls_key, args.client_ca)
    try:
        # Loaded once, before binding: a bad file is one error. Each forked worker has its own
        # copy of the context and reloads it itself when the files change.
        context = tls.server_context(files)
    except (OSError, ssl.SSLError) as exc:
        raise SystemExit(f"crdconvert: cannot load the TLS certificate or key: {exc}") from None
    sock = workers.bind(args.host, args.port)
    if faults.active:
        log(f"fault modes ON: {', '.join(faults.describe())}")
    log(f"serving {args.path} on https://{args.host}:{args.port} ({count} worker processes)")
    if count == 1:
        _run(args, faults, sock, context, files)
        return
    sys.exit(
        workers.run(
            count, sock, lambda channel: _run(args, faults, channel, context, files, True), log
        )
    )


if __name__ == "__main__":
    main()
