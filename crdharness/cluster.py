"""The object every test receives, whatever the backend behind it."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import requests
from kubernetes import client, config

from crdharness import curl_http
from crdharness.binaries.versions import Release
from crdharness.errors import HarnessError
from crdharness.etcd import EtcdReader, StoredObject
from crdharness.kubeconfig import environment_for


def new_api_client(kubeconfig: Path, credentials_dir: Path) -> client.ApiClient:
    """The official client for a kubeconfig, without urllib3's automatic retries: a 429 or a
    dropped connection must reach the test (which waits with a deadline where it means to),
    not be retried silently behind a Retry-After.

    The client writes the kubeconfig's embedded certificates and key to files, by default in
    /tmp, removed only at a normal exit: a killed run would leave private keys behind. They go
    to ``credentials_dir`` instead, a directory of the run that is removed however it ends.
    """
    configuration = client.Configuration()
    config.load_kube_config(
        config_file=str(kubeconfig),
        client_configuration=configuration,
        temp_file_path=str(credentials_dir),
    )
    configuration.retries = False
    return client.ApiClient(configuration)


POOL_SIZE = 64  # connections kept to the API server


@dataclass(frozen=True)
class Exchange:
    """One answer of ``ApiHttp.exchange``: its status, headers (a repeated header's values
    joined by ", ", as ``requests`` gives them) and body."""

    status: int
    headers: Mapping[str, str]
    data: bytes


class ApiHttp(requests.Session):
    """Raw HTTP to the API server (Warning headers, discovery, exact status codes).

    Authenticated like the official client. ``trust_env`` is off, so a machine-wide
    ``REQUESTS_CA_BUNDLE`` cannot replace the cluster's CA.
    """

    def __init__(self, configuration: client.Configuration):
        super().__init__()
        self.trust_env = False
        # The gate sends many requests at once (``gate.concurrency``): a connection each.
        self.mount("https://", requests.adapters.HTTPAdapter(pool_maxsize=POOL_SIZE))
        self.base_url = configuration.host.rstrip("/")
        self.verify = configuration.ssl_ca_cert or configuration.verify_ssl
        if configuration.cert_file:
            self.cert = (configuration.cert_file, configuration.key_file)
        # A kubeconfig's token, as the official client sends it (it keeps it as "BearerToken"
        # since v25; "authorization" before).
        bearer = configuration.auth_settings().get("BearerToken")
        if bearer and bearer["value"]:
            self.headers["Authorization"] = bearer["value"]
        self._pool: curl_http.Handles | None = None
        self._pool_lock = threading.Lock()

    def request(self, method, url, *args, **kwargs):
        if url.startswith("/"):
            url = self.base_url + url
        kwargs.setdefault("timeout", 30)
        return super().request(method, url, *args, **kwargs)

    def exchange(
        self,
        method: str,
        path: str,
        data: bytes | None = None,
        content_type: str = "application/json",
        timeout: float = 30.0,
    ) -> Exchange:
        """One request through libcurl handles whose TLS is set up once, for the gate's
        hundreds of thousands of requests (``curl_http``: ``request`` re-checks the CA and key
        files on disk and merges the session's settings for each, a fifth of the gate's own
        CPU on a provider's release). No redirects, retries, proxies or compression, as
        ``request`` here. Failures raise ``requests``' own exceptions, as ``request`` would."""
        # The User-Agent ``request`` sends: the API server names an update's field manager
        # after it, and the gate knows its own writes by that name (``GATE_MANAGERS``).
        headers = {"Accept": "application/json", "User-Agent": str(self.headers["User-Agent"])}
        if data is not None:
            headers["Content-Type"] = content_type
        if "Authorization" in self.headers:
            headers["Authorization"] = str(self.headers["Authorization"])
        status, answered, body = self._handles().exchange(
            method, self.base_url + path, data, headers, timeout
        )
        return Exchange(status, answered, body)

    def _handles(self) -> curl_http.Handles:
        with self._pool_lock:  # the gate's threads start at once: one pool for them all
            if self._pool is None:
                verify = self.verify if isinstance(self.verify, (str, bool)) else True
                cert, key = self.cert if isinstance(self.cert, tuple) else (self.cert, None)
                self._pool = curl_http.Handles(curl_http.Tls(verify, cert, key))
            return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
        super().close()


# What a cluster can do, declared by its backend (``Cluster.capabilities``), so that fixtures,
# the bundle and tests ask for a capability instead of testing which backend runs.
ETCD = "etcd"  # ``cluster.etcd`` reads the stored bytes of every object
CONTROL_PLANES = "control-planes"  # the harness runs the control plane: more of them, with
# flags of a test's own (no watch cache), upgrades and rollbacks of kube-apiserver
HOST_LOOPBACK = "host-loopback"  # the API server reaches webhooks on this machine's 127.0.0.1
IMAGE_LOADER = "image-loader"  # ``cluster.load_image`` puts a local image on the nodes
SERVICE_ROUTING = "service-routing"  # webhooks run in the cluster, reached through a Service


@dataclass
class LocalProcesses:
    """What a control plane the harness started runs on this machine: the teardown tests,
    ``crdharness down`` and the benchmarks check these; None for kind and existing clusters."""

    pids: dict[str, int]  # by process name: etcd, kube-apiserver, kube-controller-manager
    ports: list[int]  # every loopback port they listen on
    guardian_pid: int | None  # the process that stops them if the run is killed
    start_to_ready_seconds: float | None = None


@dataclass
class Cluster:
    name: str
    backend: str  # the --cluster name, for messages; ask ``capabilities`` what it can do
    kubeconfig: Path
    kubectl_path: Path
    # Where the client may write credentials it takes from the kubeconfig (removed with the
    # run); see new_api_client.
    credentials_dir: Path
    etcd: EtcdReader | None = None
    etcd_unavailable: str = ""  # why ``etcd`` is None, for the error a test gets
    logs: dict[str, Path] = field(default_factory=dict)
    capabilities: frozenset[str] = frozenset({HOST_LOOPBACK})
    # The Kubernetes release the harness started ("1.37.2"); None for an existing cluster.
    kubernetes: str | None = None
    # The backend's directory on this machine (the control plane's workspace, kind's work
    # directory); None for an existing cluster.
    workspace: Path | None = None
    processes: LocalProcesses | None = None
    # IMAGE_LOADER: load a local image into the nodes (image, a scratch directory) and say how.
    load_image: Callable[[str, Path], str] | None = None
    # Write the backend's own logs (e.g. ``kind export logs``) into a directory, for the bundle.
    export_logs: Callable[[Path], None] | None = None
    # SERVICE_ROUTING: the reference webhook (an image already loaded) as a Deployment behind
    # a Service, with certificates from a CA: ``deploy_webhook(ca, image)``, not yet started.
    deploy_webhook: Callable[..., object] | None = None
    # Starts the controllers the local backend does not run by default (namespace, garbage
    # collector, storage version migrator); None where the cluster runs its own (kind, existing).
    start_controllers: Callable[[], None] | None = None
    # Replaces kube-apiserver with another release's on the same etcd data (an upgrade or a
    # rollback) and returns the seconds it was away; None where the harness does not run the
    # control plane (kind, existing).
    switch_kubernetes: Callable[[Release], float] | None = None

    def can(self, capability: str) -> bool:
        return capability in self.capabilities

    @cached_property
    def api_client(self) -> client.ApiClient:
        return new_api_client(self.kubeconfig, self.credentials_dir)

    @property
    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(self.api_client)

    @property
    def apiextensions(self) -> client.ApiextensionsV1Api:
        return client.ApiextensionsV1Api(self.api_client)

    @property
    def custom_objects(self) -> client.CustomObjectsApi:
        return client.CustomObjectsApi(self.api_client)

    @cached_property
    def http(self) -> ApiHttp:
        return ApiHttp(self.api_client.configuration)

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess:
        """Run kubectl against this cluster; stdout and stderr (warnings) are captured."""
        result = subprocess.run(
            [str(self.kubectl_path), *args],
            input=input,
            capture_output=True,
            text=True,
            env=environment_for(self.kubeconfig),
            timeout=120,
            check=False,
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} exited {result.returncode}: {result.stderr.strip()}"
            )
        return result

    def server_version(self) -> str:
        """What the API server says it is: ``/version``'s gitVersion, e.g. "v1.37.2"."""
        return self.http.get("/version").json()["gitVersion"]

    def stored(
        self, group: str, plural: str, name: str, namespace: str | None = None
    ) -> StoredObject | None:
        """What etcd holds for a custom resource (None if the key does not exist)."""
        if self.etcd is None:
            raise HarnessError(f"etcd inspection is not available here: {self.etcd_unavailable}")
        return self.etcd.custom_resource(group, plural, name, namespace)

    def close(self) -> None:
        if "api_client" in self.__dict__:
            self.api_client.close()
        if "http" in self.__dict__:
            self.http.close()
