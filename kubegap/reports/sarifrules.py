"""SARIF reportingDescriptors: one per policy validation, and one per engine rule seen in the results.

The help text carries what a reviewer needs without leaving the alert: how to fix, why (the incident or
document behind the rule), the parameters that set its thresholds, and how to exempt a workload.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubegap.enginerules import EXEMPTION_REASON, INVALID_DECLARATION, INVALID_MANIFEST
from kubegap.findings import Finding, Severity
from kubegap.policy import EXEMPTION_PREFIX, Policy, Reference, Validation, param_text
from kubegap.reports.sariflog import ReportingDescriptor

# Where the bundled rules are documented: policies/README.md (generated, one anchor per policy id) and the
# section on unreadable input in docs/lint.md, as published for each release.
DOCS = "https://kubegap.dev/docs"
POLICY_DOCS = f"{DOCS}/policies/"
INPUT_DOCS = f"{DOCS}/lint/#input-that-is-reported-instead-of-linted"

# GitHub sorts and labels alerts by this CVSS-like score when a rule is tagged `security`; kubegap's rules
# are about reliability, so the tag is not claimed and the score only orders alerts in other viewers.
SECURITY_SEVERITY = {
    Severity.CRITICAL: "9.0",
    Severity.HIGH: "7.0",
    Severity.MEDIUM: "5.0",
    Severity.LOW: "3.0",
}
LEVEL = {
    Severity.CRITICAL: "error",
    Severity.HIGH: "error",
    Severity.MEDIUM: "warning",
    Severity.LOW: "note",
    Severity.INFO: "note",
}

# Rules the engine and the manifest reader report, which no policy file describes.
_ENGINE_RULES = {
    INVALID_DECLARATION: (
        "A declaration annotation this policy reads cannot be parsed",
        "The annotation is counted as absent, so the policy judges the workload as if it were not there.",
    ),
    EXEMPTION_REASON: (
        "An exemption annotation gives no reason",
        "An exemption without a reason exempts nothing: the policy is still evaluated. "
        "State why the workload is exempt so that reviewers can judge it.",
    ),
}


class RuleTable:
    """Descriptors in a stable order: policy validations first, then engine rules as first seen."""

    def __init__(self, policies: Sequence[Policy]) -> None:
        self.descriptors: list[ReportingDescriptor] = []
        self._index: dict[str, int] = {}
        self._policies = {p.id: p for p in policies}
        for policy in policies:
            for validation in policy.validations:
                self._add(_validation_descriptor(policy, validation))

    def note(self, finding: Finding) -> None:
        rule_id = f"{finding.policy}/{finding.rule}"
        if rule_id not in self._index:
            self._add(_engine_descriptor(finding, self._policies.get(finding.policy)))

    def index(self, finding: Finding) -> int:
        return self._index[f"{finding.policy}/{finding.rule}"]

    def _add(self, descriptor: ReportingDescriptor) -> None:
        self._index[descriptor["id"]] = len(self.descriptors)
        self.descriptors.append(descriptor)


def _pascal(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.replace("_", "-").split("-") if part)


def _descriptor(
    rule_id: str,
    short: str,
    full: str,
    severity: Severity,
    help_text: str,
    help_markdown: str,
    tags: list[str],
    help_uri: str | None = None,
) -> ReportingDescriptor:
    policy, _, rule = rule_id.partition("/")
    properties: dict[str, Any] = {"tags": list(dict.fromkeys(tags)), "precision": "high"}
    if severity in SECURITY_SEVERITY:
        properties["security-severity"] = SECURITY_SEVERITY[severity]
    properties["kubegap-severity"] = severity.value
    descriptor: ReportingDescriptor = {
        "id": rule_id,
        "name": f"{_pascal(policy)}/{_pascal(rule)}",
        "shortDescription": {"text": short},
        "fullDescription": {"text": full},
        "defaultConfiguration": {"level": LEVEL[severity]},
        "help": {"text": help_text, "markdown": help_markdown},
        "properties": properties,
    }
    if help_uri is not None:
        descriptor["helpUri"] = help_uri
    return descriptor


def help_uri(policy: Policy | None) -> str | None:
    """The documentation of a bundled policy; a user's own policy has no page kubegap knows of."""
    if policy is None or not policy.source.startswith("policies/"):
        return None
    return f"{POLICY_DOCS}#{policy.id}"


def _validation_descriptor(policy: Policy, validation: Validation) -> ReportingDescriptor:
    short = _flat(validation.description) or f"{policy.title}: {validation.name}"
    full = _flat(" ".join((f"{policy.title}.", validation.description, policy.description)))
    fix = validation.remediation or policy.remediation
    text, markdown = _help(policy, fix)
    tags = ["kubernetes", "gpu", "reliability", policy.id, validation.scope]
    return _descriptor(
        f"{policy.id}/{validation.name}",
        short,
        full,
        validation.severity,
        text,
        markdown,
        tags,
        help_uri(policy),
    )


def _engine_descriptor(finding: Finding, policy: Policy | None) -> ReportingDescriptor:
    rule_id = f"{finding.policy}/{finding.rule}"
    if finding.policy == INVALID_MANIFEST:
        short = f"The document cannot be read as a Kubernetes object ({finding.rule})"
        full = (
            f"{short}. kubegap reports the unreadable document and still checks the other documents of the "
            "file; nothing in this document was checked."
        )
        text = f"How to fix: {finding.remediation}"
        tags = ["kubernetes", "correctness"]
        return _descriptor(rule_id, short, full, finding.severity, text, _md(text), tags, INPUT_DOCS)
    short, why = _ENGINE_RULES.get(finding.rule, (f"{finding.policy}: {finding.rule}", ""))
    if policy is not None:
        full = f"{policy.title}: {short[:1].lower()}{short[1:]}. {why}".strip()
        text, markdown = _help(policy, finding.remediation)
    else:
        full = f"{short}. {why}".strip()
        text = f"How to fix: {finding.remediation}"
        markdown = _md(text)
    tags = ["kubernetes", "gpu", "reliability", finding.policy]
    return _descriptor(rule_id, short, full, finding.severity, text, markdown, tags, help_uri(policy))


def _help(policy: Policy, fix: str) -> tuple[str, str]:
    """(plain text, Markdown) help: fix, why, parameters, exemption."""
    exempt = f'{EXEMPTION_PREFIX}{policy.id}: "<reason>"'
    params = [(f"{p.name} = {param_text(p, p.default)}", _flat(p.description)) for p in policy.params]
    text = [f"How to fix: {fix}", "", f"Why: {_why(policy.references, markdown=False)}"]
    markdown = [f"**How to fix**: {fix}", "", f"**Why**: {_why(policy.references, markdown=True)}"]
    if params:
        text += ["", "Parameters (defaults): " + "; ".join(f"{p} ({meaning})" for p, meaning in params)]
        markdown += ["", "**Parameters** (defaults):", "", *[f"- `{p}`: {meaning}" for p, meaning in params]]
    text += ["", f"How to exempt: annotate the workload or its pod template with {exempt}."]
    markdown += ["", f"**How to exempt**: annotate the workload or its pod template with `{exempt}`."]
    return "\n".join(text), "\n".join(markdown)


def _why(references: Sequence[Reference], markdown: bool) -> str:
    if not references:
        return "see the policy description."
    out = []
    for ref in references:
        if markdown or not ref.url:
            out.append(ref.markdown() if markdown else ref.label())
        else:
            out.append(f"{ref.label()} <{ref.url}>")
    return "; ".join(out)


def _flat(text: str) -> str:
    """Policy descriptions are wrapped YAML block text; viewers reflow it, so join the lines."""
    return " ".join(text.split())


def _md(text: str) -> str:
    head, _, rest = text.partition(": ")
    return f"**{head}**: {rest}" if rest else text
