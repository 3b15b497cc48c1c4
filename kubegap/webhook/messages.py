"""The words of an admission answer: denial message, warnings and audit annotations, each size-bounded.

The bounds come from what the API server and kubectl do with them (Kubernetes "Dynamic Admission Control",
response warnings): a warning over 256 characters may be cut by the API server, and warnings past 4,096
characters in total are dropped. So each warning says the rule, the value found and the limit (the
finding's message) in at most 256 characters, cut only between words. The fix goes in the denial message,
which is shown verbatim after "admission webhook ... denied the request:", stays under 1 KiB and says how
many findings it left out. The full findings go in an audit annotation, for the API server's audit log.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kubegap import jsontext
from kubegap.findings import Finding, ObjectRef
from kubegap.impact import gpu_hours_text

MAX_MESSAGE_BYTES = 1024
MAX_ITEM_BYTES = 300  # one finding in a denial message: room for three under the cap
MAX_WARNING_CHARS = 256
MAX_WARNINGS_CHARS = 4096  # all warnings of one answer together
MAX_WARNINGS = 20  # findings listed one by one; then a single summary line
MAX_ANNOTATION_CHARS = 512
MAX_DETAILS_CHARS = 4096  # the `findings` audit annotation: whole records only
_record_text = jsontext.encoder(ensure_ascii=False, separators=(",", ":"))
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
    head = f"[{finding.severity._value_}] {finding_id(finding)}{worth(finding)}{at}"
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
    """At most MAX_WARNINGS lines, each cut between words to MAX_WARNING_CHARS, all within
    MAX_WARNINGS_CHARS, then one line saying how many were left out."""
    listed = list(lines)
    total = len(listed) if total is None else total
    summary_room = 80  # the closing "N more findings not shown" line
    out: list[str] = []
    used = 0
    for line in listed[:MAX_WARNINGS]:
        cut = _cut_words(line, MAX_WARNING_CHARS)
        if used + len(cut) + summary_room > MAX_WARNINGS_CHARS:
            break
        out.append(cut)
        used += len(cut)
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


def details(findings: Sequence[Finding]) -> str:
    """The findings in full (rule, place, message, fix) as compact JSON, whole records only, for the
    audit log; records past MAX_DETAILS_CHARS are counted in a last `{"more": N}` entry."""
    kept: list[str] = []
    used = 2  # the brackets
    for index, finding in enumerate(findings):
        record = _record_text(_record(finding))
        rest = len(findings) - index - 1
        room = len(f',{{"more":{rest}}}') if rest else 0
        if used + len(record) + 1 + room > MAX_DETAILS_CHARS:
            more = _record_text({"more": len(findings) - index})
            return "[" + ",".join([*kept, more]) + "]"
        kept.append(record)
        used += len(record) + 1
    return "[" + ",".join(kept) + "]"


def _record(finding: Finding) -> dict[str, object]:
    record: dict[str, object] = {"id": finding_id(finding), "severity": finding.severity._value_}
    record["result"] = finding.result._value_
    optional = {"role": finding.role, "container": finding.container, "path": finding.path}
    record |= {key: value for key, value in optional.items() if value}
    record |= {"message": finding.message.strip(), "fix": finding.remediation.strip()}
    return record


def _cut_words(text: str, limit: int) -> str:
    """At most `limit` characters, cut at a space (a single over-long word is cut as a last resort)."""
    if len(text) <= limit:
        return text
    head = text[: limit - len(_ELLIPSIS) + 1]
    space = head.rfind(" ")
    head = head[:space] if space > 0 else head[:-1]
    return head.rstrip(" ,;:") + _ELLIPSIS


def _cut_bytes(text: str, limit: int) -> str:
    """At most `limit` UTF-8 bytes, cut at a space and never inside a character."""
    if len(text.encode()) <= limit:
        return text
    head = text.encode()[: limit - len(_ELLIPSIS) + 1].decode(errors="ignore")
    space = head.rfind(" ")
    head = head[:space] if space > 0 else head[:-1]
    return head.rstrip(" ,;:") + _ELLIPSIS
