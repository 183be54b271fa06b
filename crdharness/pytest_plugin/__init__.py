"""The harness as a pytest plugin: ``-p crdharness.pytest_plugin`` (or ``pytest_plugins`` in a
conftest) gives any project a real cluster and the fixtures that make it useful.

- ``options``: command-line options, markers, and the settings read from them.
- ``clusters``: ``cluster`` (one per session, shared by xdist workers), ``exact_cluster``,
  ``controllers``, ``own_control_plane``, ``upgradable_cluster``, ``namespace``.
- ``crds``: ``group`` (an API group of the test's own), ``make_crd``, ``webhook_crd``.
- ``webhooks``: ``conversion_webhook`` and ``isolated_webhook``, the reference webhook.
- ``selection``: ``--behaviour`` and the tests only the local backend can run.
- ``builds``: the binaries only some tests need, built in the background (those tests last).
- ``timeouts``: a test's timeout never counts a build it waits for.
- ``reporting``: control-plane logs and catalogue claims on failures, the failure bundle,
  transcripts, JUnit properties.
"""

pytest_plugins = [
    "crdharness.pytest_plugin.options",
    "crdharness.pytest_plugin.clusters",
    "crdharness.pytest_plugin.crds",
    "crdharness.pytest_plugin.webhooks",
    "crdharness.pytest_plugin.selection",
    "crdharness.pytest_plugin.builds",
    "crdharness.pytest_plugin.timeouts",
    "crdharness.pytest_plugin.reporting",
]
