"""The binaries a control plane runs: which Kubernetes releases are supported (``versions``),
where they come from (``envtest_archive`` or a Go build, ``gobuild``), and the cache both fill
(``cache``); ``assets`` resolves a release to paths on disk."""
