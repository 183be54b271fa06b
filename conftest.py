"""Top-level conftest: the harness's pytest plugin (options, `cluster` and `namespace`)."""

pytest_plugins = ["crdharness.pytest_plugin"]
