"""Our webhook side by side with the Go reference: agnhost's crd-conversion-webhook.

Same machine, same certificates, same load generator (benchmarks.webhook_throughput), same
work per object (split ``hostPort`` into ``host`` and ``port``): agnhost converts
stable.example.com/v1 -> v2, ours example.com/v1beta1 -> v1. agnhost is built from the same
Kubernetes module as kube-apiserver. It reads the in-cluster configuration when it starts,
so it gets what a pod would have: KUBERNETES_SERVICE_HOST/PORT and a service-account token,
the token in a private mount namespace (``unshare -m``) so nothing is written to the host's
/var/run. Its code is not changed.

    python -m benchmarks.agnhost_compare [--seconds 3] [--rounds 3] [--clients 1 4]
                                         [--generator wrk]

Each cell (batch size, connections) is measured in ``--rounds`` rounds, ours and agnhost in
turn, the first of the pair alternating, and each server's median round is reported: on a
shared 2-core VM one 5-second window of either server varied by up to 30 % between runs
(agnhost at batch 1, 4 connections: 14.2k-19.9k reviews/s in five runs within minutes).

The default load generator is Python (http.client, one keep-alive connection per client
thread); at one object per review its own cost is most of each round trip, so ``wrk`` is
offered too, to compare the servers with as little client cost as possible.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path

from benchmarks.webhook_throughput import GENERATORS, OUT, review
from crdharness import certs, ports
from crdharness.binaries import assets, versions
from crdharness.errors import HarnessError
from crdharness.polling import wait_for
from crdharness.processes import ManagedProcess
from crdharness.webhooks.reference import LocalWebhook

ROOT = Path(__file__).resolve().parent.parent
WARM_UP = 1.0  # seconds of the same load before each measurement

POD_SETUP = (
    "mount -t tmpfs tmpfs /run && "
    "mkdir -p /run/secrets/kubernetes.io/serviceaccount && "
    "printf benchmark > /run/secrets/kubernetes.io/serviceaccount/token && "
    'exec "$@"'
)


def start_agnhost(binary: Path, serving: certs.KeyPair, port: int, log: Path) -> ManagedProcess:
    if shutil.which("unshare") is None:
        raise HarnessError("unshare (util-linux) is needed to give agnhost a pod-like /run")
    command = [
        "unshare",
        "-m",
        "--propagation",
        "private",
        "sh",
        "-c",
        POD_SETUP,
        "agnhost",
        str(binary),
        "crd-conversion-webhook",
        f"--tls-cert-file={serving.cert}",
        f"--tls-private-key-file={serving.key}",
        f"--port={port}",
    ]
    env = {**os.environ, "KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": "1"}
    process = ManagedProcess("agnhost", command, log, env=env).start()

    with _stopped_on_failure(process):
        wait_for(lambda: _listening(process, port), 30, "agnhost to listen", retry=(OSError,))
    return process


def start_http_floor(serving: certs.KeyPair, port: int, log: Path) -> ManagedProcess:
    """benchmarks.http_floor: the Python HTTP stack answering with no work at all."""
    command = [sys.executable, "-m", "benchmarks.http_floor", "--port", str(port)]
    command += ["--tls-cert", str(serving.cert), "--tls-key", str(serving.key)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = ManagedProcess("http-floor", command, log, env=env).start()
    with _stopped_on_failure(process):
        wait_for(
            lambda: _listening(process, port),
            30,
            "the HTTP floor server to listen",
            retry=(OSError,),
        )
    return process


@contextlib.contextmanager
def _stopped_on_failure(process: ManagedProcess):
    try:
        yield
    except BaseException:
        process.stop()
        raise


def _listening(process: ManagedProcess, port: int) -> bool:
    if not process.running():
        raise HarnessError(f"{process.name} exited: {process.log_tail(5)}")
    with socket.socket() as sock:
        return sock.connect_ex((ports.LOOPBACK, port)) == 0


def median_round(rounds: list[dict]) -> dict:
    """The round with the median objects/s (its latencies with it), and every round's rate."""
    ordered = sorted(rounds, key=lambda r: r["objects_per_second"])
    return ordered[(len(ordered) - 1) // 2] | {
        "rounds_objects_per_second": [r["objects_per_second"] for r in rounds]
    }


def plot(rows: list[dict], generator: str, path: Path) -> None:
    """Objects per second, ours next to agnhost's, for each batch size and client count."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot", file=sys.stderr)
        return
    labels = [f"batch {r['batch']}\n{r['clients']} conn" for r in rows]
    positions = range(len(rows))
    figure, axis = plt.subplots(figsize=(8, 4.5))
    axis.bar(
        [x - 0.2 for x in positions],
        [r["ours"]["objects_per_second"] for r in rows],
        width=0.4,
        label="crdconvert (ours)",
    )
    axis.bar(
        [x + 0.2 for x in positions],
        [r["agnhost"]["objects_per_second"] for r in rows],
        width=0.4,
        label="agnhost crd-conversion-webhook",
    )
    for x, r in zip(positions, rows, strict=True):
        top = max(r["ours"]["objects_per_second"], r["agnhost"]["objects_per_second"])
        axis.annotate(
            f"{r['ratio_objects_per_second']}x", (x, top), ha="center", va="bottom", fontsize=8
        )
    axis.set_xticks(list(positions), labels, fontsize=8)
    axis.set_yscale("log")
    axis.set_ylabel("objects converted per second")
    axis.set_title(f"Conversion webhooks side by side (load generator: {generator})")
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=3.0, help="of each measurement")
    parser.add_argument("--rounds", type=int, default=3, help="measurements of each server")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 100, 1000])
    parser.add_argument(
        "--generator",
        choices=sorted(GENERATORS),
        default="python",
        help="the load generator, the same for both servers (wrk: a C client, see wrk(1))",
    )
    args = parser.parse_args()
    measure_port = GENERATORS[args.generator]
    release = versions.resolve()
    agnhost_binary = assets.agnhost(release)
    rows = []
    # Each server is stopped on the way out, also when a later one fails to start.
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as running:
        directory = Path(tmp)
        ca = certs.CertificateAuthority(directory)
        serving = ca.issue_server("shared", *certs.LOOPBACK_NAMES)
        ours = LocalWebhook(ca, directory, serving=serving, fault_control=False)
        running.callback(ours.stop)
        ours.start()
        agnhost_port = ports.free_port()
        agnhost = start_agnhost(agnhost_binary, serving, agnhost_port, directory / "agnhost.log")
        running.callback(agnhost.stop)
        floor = None
        if args.generator == "wrk":  # only wrk is light enough to show the floor
            floor_port = ports.free_port()
            floor = start_http_floor(serving, floor_port, directory / "floor.log")
            running.callback(floor.stop)

        def compare(batch: int, clients: int) -> tuple[dict, dict]:
            servers = {
                "ours": (ours.port, review(batch)),
                "agnhost": (
                    agnhost_port,
                    review(batch, "stable.example.com/v1", "stable.example.com/v2"),
                ),
            }
            # A short run of the same load first, not counted (the generators' own warm-up is
            # one Python client for 0.5 s): a fresh server's first seconds under a load are
            # slower, and the one measured first would pay for that.
            for port, body in servers.values():
                measure_port(port, str(ca.cert_path), body, batch, clients, WARM_UP)
            rounds: dict[str, list[dict]] = {name: [] for name in servers}
            for number in range(args.rounds):
                order = list(servers) if number % 2 == 0 else list(reversed(servers))
                for name in order:
                    port, body = servers[name]
                    result = measure_port(
                        port, str(ca.cert_path), body, batch, clients, args.seconds
                    )
                    rounds[name].append(result)
            return median_round(rounds["ours"]), median_round(rounds["agnhost"])

        for clients in args.clients:
            for batch in args.batches:
                mine, theirs = compare(batch, clients)
                row = {
                    "batch": batch,
                    "clients": clients,
                    "ours": mine,
                    "agnhost": theirs,
                    "ratio_objects_per_second": round(
                        mine["objects_per_second"] / theirs["objects_per_second"], 2
                    ),
                }
                if floor is not None:
                    row["http_floor"] = measure_port(
                        floor_port,
                        str(ca.cert_path),
                        review(batch),
                        batch,
                        clients,
                        args.seconds,
                        check_answer=False,
                    )
                rows.append(row)
                print(
                    json.dumps(
                        {k: v for k, v in row.items() if k not in ("ours", "agnhost")}
                        | {
                            "ours": mine["objects_per_second"],
                            "agnhost": theirs["objects_per_second"],
                        }
                    ),
                    flush=True,
                )
    OUT.mkdir(parents=True, exist_ok=True)
    name = "agnhost_compare" if args.generator == "python" else f"agnhost_compare-{args.generator}"
    (OUT / f"{name}.json").write_text(json.dumps(rows, indent=2))
    plot(rows, args.generator, OUT / f"{name}.png")
    print(
        "| batch | clients | ours objects/s | agnhost objects/s | ours/agnhost | "
        "ours p50 ms | agnhost p50 ms |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['batch']} | {r['clients']} | {r['ours']['objects_per_second']} | "
            f"{r['agnhost']['objects_per_second']} | {r['ratio_objects_per_second']} | "
            f"{r['ours']['latency_ms_p50']} | {r['agnhost']['latency_ms_p50']} |"
        )


if __name__ == "__main__":
    main()
