"""The rules kubegap's engine reports itself, which no policy file declares: their ids, defined here only.

They live apart from the findings record and from the policy model because every layer names them: the
manifest reader and lint (unreadable documents, deadlines), the engine, the policy loader (which reserves
two names), the webhook, the reports and `kubegap fix`. RULES.md §4 lists what each one means.

Some are policies of their own (a finding's `policy`); two are rules every policy carries (a finding's
`rule`, under the policy's own id), so no policy may name a validation after them.
"""

from __future__ import annotations

# Policies of the engine (a finding's `policy`), with their rules.
INVALID_MANIFEST = "invalid-manifest"  # a document that cannot be read as a Kubernetes object
TOO_DEEP = "too-deep"  # its rule for an object nested deeper than kubegap reads (YAML or evaluation)
NOT_EVALUATED = "not-evaluated"  # lint: an object whose evaluation ran past its deadline
DEADLINE = "deadline"
UNRESOLVED_COUNT = "unresolved-count"  # an accelerator count that is not a whole number
RESOURCES = "resources"
ANNOTATIONS = "annotations"  # an annotation under kubegap's prefixes that kubegap does not read
UNKNOWN_KEY = "unknown-key"

# Rules every policy carries (a finding's `rule`): a declaration it reads cannot be parsed; an exemption of
# it gives no reason (or has expired).
INVALID_DECLARATION = "invalid-declaration"
EXEMPTION_REASON = "exemption-reason"
POLICY_RULES = frozenset({INVALID_DECLARATION, EXEMPTION_REASON})
