"""What the tests do to a cluster: apply and wait for CRDs (``crds``), write and read a CRD's
versions and their stored bytes (``versioned``), migrate storage (``migrate``, and Kubernetes'
own ``storage_migration``), and record what happened (``transcript``)."""
