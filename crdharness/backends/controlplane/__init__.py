"""The "local" backend: a real etcd and kube-apiserver on loopback, like envtest's.

- ``server``: what every control-plane process has (flags, log, launch, health, stop).
- ``etcd_server`` and ``apiserver``: the two processes, each with its flags and health check.
- ``plane``: ``ControlPlane`` composes them in a workspace with a guardian, certificates and
  a kubeconfig; attaches to one another process started; replaces kube-apiserver in place
  (upgrades); adds kube-controller-manager on demand.
"""

from crdharness.backends.controlplane.plane import PLANE_FILE, ControlPlane, ControlPlaneOptions

__all__ = ["PLANE_FILE", "ControlPlane", "ControlPlaneOptions"]
