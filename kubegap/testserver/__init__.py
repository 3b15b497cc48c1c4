"""A Kubernetes API server stand-in served in-process: for the audit's tests and `kubegap audit --demo`."""
