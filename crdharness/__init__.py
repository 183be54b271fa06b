"""crdharness: end-to-end test harness for versioned Kubernetes CustomResourceDefinitions.

The package is organised by concern:

- ``versions``      which Kubernetes releases the harness supports, and how to name them
- ``assets``        finding ``kube-apiserver``, ``kubectl`` and ``etcd`` (explicit dir, cache,
                    envtest archive, Go build) — with ``cache``, ``envtest_archive`` and ``gobuild``
- ``certs``         every certificate and key, made with trustme
- ``processes``     starting and always stopping child processes (with ``guardian``)
- ``controlplane``  etcd + kube-apiserver on loopback (the "local" backend): an ``EtcdServer``
                    and an ``APIServer`` composed by ``ControlPlane``
- ``etcd``          reading what etcd stores for an object
- ``cluster``       the object tests receive, whatever the backend
- ``pytest_plugin`` the harness as a pytest plugin: options, cluster/CRD/webhook fixtures,
                    reporting
"""

from crdharness.errors import HarnessError

__all__ = ["HarnessError"]
