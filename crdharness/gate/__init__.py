"""The upgrade gate: will this CRD release (and its webhook) upgrade the clusters that run
the earlier releases safely? ``python -m crdharness gate GATE.yaml``; see README.

Its folders are layers, in the order a run flows (``tests/test_layers.py`` holds them to it):
``given`` (the gate file, the manifests) -> ``evidence`` (objects, schemas, what changed)
-> ``webhook`` (the user's, run for the gate) -> ``run`` (the plan and the run's state)
-> ``checks`` -> ``phases`` -> ``reporting``. The flat modules are the foundations every
folder uses (``api``, ``subjects``, ``concurrency``, ``diff``, ``results``) and the entry
points above them all (``cli``, ``pytest_gate``, ``test_gate``).
"""
