"""Exemption annotations: `ignore.kubegap.dev/<policy>: "[RULE[,RULE…]: ][until YYYY-MM-DD: ]reason"`.

- `"reason"` exempts every rule of the policy; `"timeout-bounded,watchdog-enabled: reason"` only those.
- `"until 2027-03-01: reason"` exempts up to and including that day (UTC); from the next day it exempts
  nothing and is reported, as a blank reason is, so that an exception cannot outlive its purpose unseen.
- A blank reason, an unknown rule or an unreadable date exempts nothing and is reported (RULES.md §3).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from kubegap.suggest import did_you_mean

_RULES: Final = re.compile(r"^\s*([a-z0-9][a-z0-9-]*(?:\s*,\s*[a-z0-9][a-z0-9-]*)*)\s*:\s*(.*)$", re.S)
_UNTIL: Final = re.compile(r"^\s*until\s+([^:]*?)\s*:\s*(.*)$", re.S)


@dataclass(slots=True, unsafe_hash=True)
class Exemption:
    reason: str  # empty when it exempts nothing
    rules: frozenset[str] | None = None  # None: every rule of the policy
    problem: str | None = None  # why it exempts nothing, said in the finding
    fix: str | None = None

    def covers(self, rule: str) -> bool:
        return bool(self.reason) and (self.rules is None or rule in self.rules)


def parse(key: str, value: object, rules: Sequence[str], today: datetime.date) -> Exemption:
    text = "" if value is None else str(value).strip()  # `key:` with no value is null in YAML
    named: frozenset[str] | None = None
    found = _RULES.match(text)
    if found and any(r.strip() in rules for r in found[1].split(",")):
        named = frozenset(r.strip() for r in found[1].split(","))
        unknown = sorted(named - set(rules))
        if unknown:
            hint = did_you_mean(unknown[0], rules)
            return _void(
                f"exemption {key} names no rule {unknown[0]!r} of its policy{hint}, so it exempts nothing",
                f"Name rules of the policy: {', '.join(rules)}.",
            )
        text = found[2].strip()
    until = _UNTIL.match(text)
    if until:
        try:
            day = datetime.date.fromisoformat(until[1])
        except ValueError:
            return _void(
                f"exemption {key}: {until[1]!r} is not a date (YYYY-MM-DD), so it exempts nothing",
                "Write the date as YYYY-MM-DD, e.g. until 2027-03-01: reason.",
            )
        if day < today:
            return _void(
                f"exemption {key} expired on {day.isoformat()}, so it exempts nothing",
                "Fix the finding and remove the annotation, or set a new date if the reason holds.",
            )
        text = until[2].strip()
    if not text:
        return _void(
            f"exemption {key} has no reason, so it exempts nothing",
            'Say why the workload is exempt, e.g. "short smoke test, no checkpoints needed".',
        )
    return Exemption(text, named)


def _void(problem: str, fix: str) -> Exemption:
    return Exemption("", None, problem, fix)
