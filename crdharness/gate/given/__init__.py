"""What the user gives: the gate file (``gate_file`` reads it into ``config``) and the release
history's manifests (``manifests``)."""
