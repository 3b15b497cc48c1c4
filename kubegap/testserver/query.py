"""List query parameters of the test API server: label and field selectors, continue tokens."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable, Mapping

from kubegap.testserver.catalog import ApiError

# --- label and field selectors ---------------------------------------------------------------------------

_REQUIREMENT = re.compile(
    r"\s*(?:(?P<not>!)\s*(?P<absent>[\w./-]+)"
    r"|(?P<key>[\w./-]+)\s*(?:(?P<op>==|!=|=)\s*(?P<value>[\w.-]*)"
    r"|\s+(?P<setop>in|notin)\s*\((?P<values>[^)]*)\))?)\s*(?:,|$)"
)


def parse_label_selector(text: str) -> list[tuple[str, str, frozenset[str]]]:
    """Requirements as (key, operator, values); operators: =, !=, in, notin, exists, !exists."""
    out: list[tuple[str, str, frozenset[str]]] = []
    pos = 0
    while pos < len(text):
        match = _REQUIREMENT.match(text, pos)
        if match is None or match.end() == pos:
            raise ApiError(400, "BadRequest", f"unable to parse requirement: {text[pos:]!r}")
        pos = match.end()
        if match["absent"]:
            out.append((match["absent"], "!exists", frozenset()))
        elif match["op"]:
            out.append((match["key"], "!=" if match["op"] == "!=" else "=", frozenset({match["value"]})))
        elif match["setop"]:
            values = frozenset(v.strip() for v in match["values"].split(",") if v.strip())
            out.append((match["key"], match["setop"], values))
        else:
            out.append((match["key"], "exists", frozenset()))
    return out


def labels_match(labels: Mapping[str, str], requirements: Iterable[tuple[str, str, frozenset[str]]]) -> bool:
    for key, op, values in requirements:
        present = key in labels
        value = labels.get(key)
        ok = {
            "=": present and value in values,
            "in": present and value in values,
            "!=": not present or value not in values,
            "notin": not present or value not in values,
            "exists": present,
            "!exists": not present,
        }[op]
        if not ok:
            return False
    return True


def parse_field_selector(text: str) -> list[tuple[str, bool, str]]:
    """(field, equal?, value) for metadata.name / metadata.namespace, the fields every resource supports."""
    out: list[tuple[str, bool, str]] = []
    for term in filter(None, (t.strip() for t in text.split(","))):
        match = re.fullmatch(r"(metadata\.name|metadata\.namespace)\s*(==|!=|=)\s*([\w.-]*)", term)
        if match is None:
            raise ApiError(
                400,
                "BadRequest",
                f'"{term}" is not a known field selector: only "metadata.name", "metadata.namespace"',
            )
        out.append((match[1], match[2] != "!=", match[3]))
    return out


# --- continue tokens -------------------------------------------------------------------------------------


def encode_continue(rv: int, start: str) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode()


def decode_continue(token: str) -> tuple[int, str]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        return int(data["rv"]), str(data["start"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ApiError(400, "BadRequest", f"continue key is not valid: {exc}") from exc
