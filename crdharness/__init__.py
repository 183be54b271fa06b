"""crdharness: end-to-end test harness for versioned Kubernetes CustomResourceDefinitions.

Each folder is one layer; a module imports only from the flat foundations, its own folder and
the folders before it (``tests/test_layers.py`` checks it):

- foundations (flat modules): ``errors``, ``polling``, ``progress``, ``paths``, ``ports``,
  ``certs``, ``kubeconfig``, ``processes`` and ``guardian``, ``workspace``, ``etcd``,
  ``cluster`` (the ``Cluster`` every backend returns), ``pytest_support``
- ``binaries``      supported Kubernetes releases and their binaries (envtest archive, Go
                    build, cache)
- ``webhooks``      the reference conversion webhook (process or container), its image,
                    webhook client certificates
- ``scenarios``     what tests do to a cluster: CRDs, versioned objects, migrations,
                    transcripts
- ``backends``      ``local`` (etcd + kube-apiserver on loopback: ``controlplane``),
                    ``kind``, ``existing``
- ``reports``       catalogue coverage, the failure bundle
- ``gate``          the upgrade gate (its own pytest plugin, ``gate.pytest_gate``)
- ``pytest_plugin`` the harness as a pytest plugin: options, fixtures, reporting
- ``cli``, ``sabotage``: the command line, above everything
"""

from crdharness.errors import HarnessError

__all__ = ["HarnessError"]
