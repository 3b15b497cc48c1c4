"""The words of an admission answer: denial message, warnings and audit annotations, each size-bounded.

The bounds come from what the API server and kubectl do with them: warnings over 120 characters read
badly and over 256 may be cut, more than 4,096 characters of warnings in total are dropped; a denial
message is shown verbatim to the user after "admission webhook ... denied the request:", so it stays
under 1 KiB and says how many findings it left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kubegap.findings import Finding, ObjectRef
from kubegap.impact import gpu_hours_text

MAX_MESSAGE_BYTES = 1024
MAX_ITEM_BYTES = 300  # one finding in a denial message: room for three under the cap
MAX_WARNING_CHARS = 120
MAX_WARNINGS = 20  # findings listed one by one; then a single summary line
MAX_ANNOTATION_CHARS = 512
_ELLIPSIS = "..."  # ASCII: warnings travel as HTTP `Warning` headers


def sort_key(finding: Finding) -> tuple[int, str, str, str, str, str]:
    """Worst first, then a stable order, so that the findings cut off by a limit are the mildest."""
    return (
        -finding.severity.rank,
        finding.policy,
        finding.rule,
        finding.role or "",
        finding.container or "",
        finding.path or "",
    )


def finding_id(finding: Finding) -> str:
    return f"{finding.policy}/{finding.rule}"


def worth(finding: Finding) -> str:
    """` (fix saves ~298k GPU-h/mo)`: the cost model's figure in a few words, placed early enough to survive
    a cut, in ASCII because warnings travel as HTTP headers."""
    saved = finding.impact.saved if finding.impact is not None else None
    return f" (fix saves ~{gpu_hours_text(saved)} GPU-h/mo)" if saved is not None and saved > 0 else ""


def where(finding: Finding) -> str:
    parts = [p for p in (finding.role, finding.container) if p]
    return "/".join(parts)


def denial(ref: ObjectRef, denied: Sequence[Finding], reasons: Sequence[str] = ()) -> str:
    """`<object> denied by N kubegap rules: [sev] policy/rule (role R, container C): message Fix: ...`."""
    items = [_item(f) for f in sorted(denied, key=sort_key)] + [
        _cut_bytes(r, MAX_ITEM_BYTES) for r in reasons
    ]
    count = len(items)
    noun = "finding" if count == 1 else "findings"
    header = f"kubegap: {ref.display()} has {count} blocking {noun}: "
    return _fit(header, items)


def _item(finding: Finding) -> str:
    at = f" ({finding.where()})" if finding.where() else ""
    fix = f" Fix: {finding.remediation.strip()}" if finding.remediation.strip() else ""
    head = f"[{finding.severity.value}] {finding_id(finding)}{worth(finding)}{at}"
    text = f"{head}: {finding.message.strip()}{fix}"
    return _cut_bytes(" ".join(text.split()), MAX_ITEM_BYTES)


def _fit(header: str, items: Sequence[str]) -> str:
    kept: list[str] = []
    for index, item in enumerate(items):
        text = header + "; ".join([*kept, item]) + _more(len(items) - index - 1)
        if kept and len(text.encode()) > MAX_MESSAGE_BYTES:
            break
        kept.append(item)
    return header + "; ".join(kept) + _more(len(items) - len(kept))


def _more(count: int) -> str:
    return f"; and {count} more (kubegap lint lists all)" if count else ""


def warnings(lines: Iterable[str], total: int | None = None) -> list[str]:
    """At most MAX_WARNINGS lines, each cut to MAX_WARNING_CHARS, then one line saying how many were left."""
    listed = list(lines)
    total = len(listed) if total is None else total
    out = [_cut_chars(line, MAX_WARNING_CHARS) for line in listed[:MAX_WARNINGS]]
    if total > len(out):
        out.append(f"kubegap: {total - len(out)} more findings not shown; kubegap lint lists all")
    return out


def warning_line(finding: Finding) -> str:
    at = where(finding)
    text = f"{finding_id(finding)}{worth(finding)}{f' [{at}]' if at else ''}: {finding.message.strip()}"
    return " ".join(text.split())


def annotation_value(ids: Iterable[str]) -> str:
    """Unique ids in first-seen order, comma-separated, cut at a bound with a count of the rest."""
    unique = list(dict.fromkeys(ids))
    value = ""
    for index, item in enumerate(unique):
        candidate = f"{value},{item}" if value else item
        tail = f",+{len(unique) - index} more"
        if len(candidate) + len(tail) > MAX_ANNOTATION_CHARS and index + 1 < len(unique):
            return (value + tail) if value else tail.lstrip(",")
        value = candidate
    return value


def _cut_chars(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - len(_ELLIPSIS)].rstrip() + _ELLIPSIS


def _cut_bytes(text: str, limit: int) -> str:
    raw = text.encode()
    if len(raw) <= limit:
        return text
    return raw[: limit - len(_ELLIPSIS)].decode(errors="ignore").rstrip() + _ELLIPSIS
