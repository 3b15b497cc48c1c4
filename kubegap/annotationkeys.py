"""Annotations under kubegap's prefixes that kubegap does not know: a typo there is silent otherwise.

`kubegap.dev/step-tme: 8s` declares nothing, and `ignore.kubegap.dev/health-probe: "why"` exempts nothing;
both read as if they worked. Each unknown key becomes one finding, with the nearest known key.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from kubegap.enginerules import ANNOTATIONS, UNKNOWN_KEY
from kubegap.facts import ObjectFacts
from kubegap.facts.knobs import Catalogue
from kubegap.facts.purpose import LABEL as PURPOSE_KEY
from kubegap.fieldpath import FieldPath, render
from kubegap.findings import Check, Finding, ObjectRef, Severity, fail
from kubegap.policy import EXEMPTION_PREFIX
from kubegap.suggest import did_you_mean

PREFIXES: Final = ("kubegap.dev/", EXEMPTION_PREFIX)


def known_keys(catalogue: Catalogue, policy_ids: Iterable[str]) -> frozenset[str]:
    declared = {k.annotation for k in catalogue.knobs if k.annotation}
    return frozenset({*declared, PURPOSE_KEY, *(EXEMPTION_PREFIX + p for p in policy_ids)})


def unknown(facts: ObjectFacts, ref: ObjectRef, known: frozenset[str]) -> list[Finding]:
    """One finding per unknown key under kubegap's prefixes, for every annotations map of the object."""
    seen: dict[str, Finding] = {}
    read: set[FieldPath] = set()  # the units of a template share its map, and every unit the object's
    for units in facts.units.values():
        for unit in units:
            for path, notes in unit.annotations:
                if path in read:
                    continue
                read.add(path)
                for key in notes:
                    text = str(key)
                    if text.startswith(PREFIXES) and key not in known:
                        where = render((*path, text))
                        if where not in seen:
                            seen[where] = _finding(text, where, ref, known)
    return list(seen.values())


def _finding(key: str, path: str, ref: ObjectRef, known: frozenset[str]) -> Finding:
    family = sorted(k for k in known if k.startswith(EXEMPTION_PREFIX) == key.startswith(EXEMPTION_PREFIX))
    effect = "exempts nothing" if key.startswith(EXEMPTION_PREFIX) else "declares nothing"
    prefix = EXEMPTION_PREFIX if key.startswith(EXEMPTION_PREFIX) else PREFIXES[0]
    # Names are compared without the shared prefix, which would make any two keys look alike.
    hint = did_you_mean(key.removeprefix(prefix), [k.removeprefix(prefix) for k in family])
    hint = hint.replace("mean ", f"mean {prefix}", 1)
    check = Check(ANNOTATIONS, UNKNOWN_KEY, Severity.MEDIUM, f"Use one of: {', '.join(family)}.")
    return fail(check, ref, f"annotation {key} is not one kubegap reads, so it {effect}{hint}", path=path)
