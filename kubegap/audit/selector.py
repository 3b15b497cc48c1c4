"""A label selector (`-l`) checked before any request, so a typo is one clear error, not one per kind.

The grammar is that of k8s.io/apimachinery/pkg/labels (selector.go) and the label syntax of the
Kubernetes "Labels and Selectors" concept page: comma-separated requirements `key`, `!key`, `key=value`,
`key==value`, `key!=value`, `key in (v1,v2)`, `key notin (v1,v2)`, `key>N`, `key<N`. A key is an optional
DNS-subdomain prefix and `/`, then a name of at most 63 characters; a value is at most 63 characters, empty
or alphanumeric at both ends with `-`, `_` and `.` between.
"""

from __future__ import annotations

import re

from kubegap.errors import UsageError

_NAME = r"[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_PREFIX = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*"
_KEY = re.compile(rf"(?:{_PREFIX}/)?{_NAME}")
_VALUE = re.compile(rf"(?:{_NAME})?")
_SET = re.compile(r"^(?P<key>\S+)\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)$")
_COMPARE = re.compile(r"^(?P<key>[^=!<>\s]+)\s*(?P<op>==|=|!=|<|>)\s*(?P<value>.*)$")


def check(text: str) -> None:
    """Raise UsageError naming the first requirement that the API server would reject."""
    for requirement in _split(text):
        _requirement(requirement.strip(), text)


def _split(text: str) -> list[str]:
    """Commas separate requirements, except inside the parentheses of `in (…)`."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts if text.strip() else []


def _requirement(part: str, whole: str) -> None:
    def bad(why: str) -> UsageError:
        return UsageError(f"label selector {whole!r}: {part!r}: {why}")

    if match := _SET.match(part):
        key, values = match["key"], [v.strip() for v in match["values"].split(",")]
        if not all(_VALUE.fullmatch(v) for v in values):
            raise bad("a value is not a label value (at most 63 characters: letters, digits, - _ .)")
    elif match := _COMPARE.match(part):
        key, value = match["key"], match["value"].strip()
        if match["op"] in "<>" and not value.lstrip("-").isdigit():
            raise bad(f"{match['op']} takes a whole number")
        if match["op"] not in "<>" and not _VALUE.fullmatch(value):
            raise bad("the value is not a label value (at most 63 characters: letters, digits, - _ .)")
    else:
        key = part[1:].strip() if part.startswith("!") else part
    if not _KEY.fullmatch(key) or len(key.rpartition("/")[0]) > 253:
        raise bad(f"{key!r} is not a label key (an optional DNS prefix and /, then a name)")
