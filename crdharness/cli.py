"""Command line: ``python -m crdharness <command>``.

- ``versions``                 the supported Kubernetes versions
- ``binaries [--k8s-version]`` make sure the binaries exist (build them if needed); print where
- ``up [--k8s-version]``       start a local cluster and leave it running
- ``down [WORKSPACE ... | --all]``  list clusters left running by ``up`` or ``--keep-cluster``;
  stop those named, or every one
- ``gate GATE.yaml``           the upgrade gate on your own CRD history and webhook
- ``gate-merge DIR ...``       the reports of ``gate --shard K/N`` jobs made one verdict
- ``image``                    build the webhook image (and, without a registry, its base)
- ``sabotage [NAME ...]``      break the system under test on purpose; the suite must fail
- ``coverage [-v]``            which catalogue behaviours the tests cover (exit 1 if any of
                               groups A-P is neither covered nor explained)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from crdharness import backends, workspace
from crdharness.binaries import assets, versions
from crdharness.errors import HarnessError
from crdharness.progress import to_stderr

# What `crdharness --help` says, for users: what the tool is for and where to start.
DESCRIPTION = """End-to-end tests and an upgrade gate for versioned Kubernetes CRDs, on a real
kube-apiserver and etcd (built or fetched once, then cached in ~/.cache/crdharness)."""
EXAMPLES = """examples:
  crdharness gate gate.yaml                 will my CRD release upgrade the clusters
                                            running my earlier releases?
  crdharness gate gate.yaml --from-cluster ~/.kube/config
                                            will it upgrade this cluster, object by object?
  crdharness up                             a local cluster to try things on (then: down)
  nox -s e2e                                the end-to-end suite of the documented behaviour

The gate exits 0 (pass), 1 (a finding: block the release), 2 (not proven), 3 (could not
run). `crdharness <command> --help` tells more; README.md has the rest."""


def _versions(args) -> None:
    for release in versions.SUPPORTED:
        default = "  (default)" if release == versions.DEFAULT else ""
        print(f"{release.minor}  kubernetes v{release.kubernetes}  etcd v{release.etcd}{default}")


def _binaries(args) -> None:
    release = versions.resolve(args.k8s_version)
    found = assets.resolve(release, args.assets_dir, to_stderr)
    print(f"source: {found.source}")
    for path in (found.kube_apiserver, found.kubectl, found.etcd):
        print(path)
    if args.controller_manager:
        print(assets.controller_manager(release, to_stderr))
    if args.upgrade_pair:
        from crdharness.backends.upgrade import upgrade_pair

        for other in upgrade_pair(release):
            if other != release:
                print(assets.resolve(other, args.assets_dir, to_stderr).kube_apiserver)


def _up(args) -> None:
    running = backends.start(
        backends.Settings(k8s_version=args.k8s_version, assets_dir=args.assets_dir), to_stderr
    )
    if args.controller_manager:
        assert running.cluster.start_controllers is not None  # a local cluster's
        try:
            running.cluster.start_controllers()
        except BaseException:
            running.stop()
            raise
    print(running.keep())


def _down(args) -> None:
    """Stop the kept clusters named, or every one with ``--all``; without either, list them
    and stop none (another run, or another user's, may be using one)."""
    kept = workspace.kept_workspaces()
    if not args.workspaces and not args.all:
        if not kept:
            print("no kept clusters")
            return
        print(f"kept clusters ({len(kept)}), none stopped:")
        for path in kept:
            kubeconfig = path / "kubeconfig"  # a local control plane's
            print(f"  {path}" + (f"  KUBECONFIG={kubeconfig}" if kubeconfig.is_file() else ""))
        print("stop one with `crdharness down PATH`, every one with `crdharness down --all`")
        return
    targets = [Path(p) for p in args.workspaces] or kept
    if not targets:
        print("no kept clusters")
    for path in targets:
        workspace.stop_kept(path)
        print(f"stopped {path}")


def _image(args) -> None:
    from crdharness.webhooks import images

    tag = images.build_webhook_image(to_stderr)
    print(f"{tag} {images.image_size(tag)} bytes")


def _coverage(args) -> int:
    from crdharness.reports import coverage

    result = coverage.report()
    print(result.render(verbose=args.verbose))
    return 1 if result.missing or result.unknown else 0


def _gate(args) -> int:
    from crdharness.gate import cli as gate_cli

    return gate_cli.run(args)


def _gate_merge(args) -> int:
    from crdharness.gate import cli as gate_cli

    return gate_cli.merge(args)


def _sabotage(args) -> int:
    from crdharness import sabotage

    return sabotage.main(args.names, args.pytest_args)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="crdharness",
        description=DESCRIPTION,
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser("versions", help="list supported Kubernetes versions").set_defaults(
        run=_versions
    )
    for name, run, text in (
        ("binaries", _binaries, "build or fetch kube-apiserver, kubectl and etcd"),
        ("up", _up, "start a local cluster and keep it running"),
    ):
        sub = commands.add_parser(name, help=text)
        sub.add_argument("--k8s-version", default=None)
        sub.add_argument("--assets-dir", default=None)
        sub.add_argument(
            "--controller-manager",
            action="store_true",
            help="also kube-controller-manager (namespace, garbage collector, storage migrator)",
        )
        sub.add_argument(
            "--upgrade-pair",
            action="store_true",
            help="also the adjacent minor the upgrade tests switch to (binaries only)",
        )
        sub.set_defaults(run=run)
    commands.add_parser("image", help="build the webhook image").set_defaults(run=_image)
    cov = commands.add_parser("coverage", help="catalogue behaviours covered by the tests")
    cov.add_argument("-v", "--verbose", action="store_true", help="list the covering tests")
    cov.set_defaults(run=_coverage)
    sab = commands.add_parser("sabotage", help="break the system on purpose; the suite must fail")
    sab.add_argument("names", nargs="*", help="which sabotages (default: all)")
    sab.add_argument("--pytest-args", nargs="*", default=[], help="passed on to pytest")
    sab.set_defaults(run=_sabotage)
    gate = commands.add_parser("gate", help="the upgrade gate on your own CRDs and webhook")
    from crdharness.gate.cli import add_arguments

    add_arguments(gate)
    gate.set_defaults(run=_gate)
    merge = commands.add_parser(
        "gate-merge", help="the reports of `gate --shard K/N` jobs made one verdict"
    )
    from crdharness.gate.cli import merge_arguments

    merge_arguments(merge)
    merge.set_defaults(run=_gate_merge)
    down = commands.add_parser(
        "down", help="list kept clusters; stop those named, or all with --all"
    )
    down.add_argument("workspaces", nargs="*", help="the kept clusters' workspaces to stop")
    down.add_argument("--all", action="store_true", help="stop every kept cluster")
    down.set_defaults(run=_down)
    # Everything after `--` is for pytest (`gate`); argparse loses it under subcommands.
    argv = list(sys.argv[1:] if argv is None else argv)
    passed_on = argv[argv.index("--") + 1 :] if "--" in argv else []
    args = parser.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    if hasattr(args, "pytest_args"):
        args.pytest_args = [*args.pytest_args, *passed_on]
    try:
        status = args.run(args)
    except HarnessError as exc:
        print(f"crdharness: error: {exc}", file=sys.stderr)
        # The gate's 1 means a finding and 2 "not proven": it could not run is 3.
        return 3 if args.command in ("gate", "gate-merge") else 1
    except KeyboardInterrupt:
        return 130
    return status or 0
