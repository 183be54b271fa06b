"""The upgrade gate: will this CRD release (and its webhook) upgrade the clusters that run
the earlier releases safely? ``python -m crdharness gate GATE.yaml``; see README."""
