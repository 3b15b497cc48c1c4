"""`kubegap mcp`: the lint, audit and rule catalogue served to coding agents over the Model Context Protocol.

Every tool is read-only: it lints text it is given, or reads the cluster with GET/LIST only (plus one
SelfSubjectRulesReview, a POST that creates nothing, to report what the credentials could do). The package
imports the `mcp` SDK only in `kubegap.mcp.server`, so the rest is usable and testable without it.
"""
