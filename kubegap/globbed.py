"""`globbed`: for each `globs` parameter, the names of a unit that it matches, found in Python before CEL
runs (RULES.md §3).

A policy tests a name from one of the contract's name lists (`template.resourceNames`,
`template.toleratedKeys`, `container.envNames`, `node.marks`, `node.images`: the fields declared
`globbed`) with `name in globbed.nicResources`. The same test written `name.matches(params.nicResources)`
is still valid, but cel-expr compiles the regular expression at every evaluation (about 50 µs for a
five-glob parameter, more than the rest of a unit's program) and a Python function called from CEL leaks
memory in it on every call, so the names are matched here instead: each name once per engine, and each
set of names (most containers of a cluster carry one of a few) once while it is remembered.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubegap import globs, raw
from kubegap.facts.contract import GLOBBED

# Names remembered per parameter, each of at most 317 characters: the longest qualified name Kubernetes
# takes as a resource name or a taint key, a 253-character DNS-subdomain prefix, "/" and a 63-character
# name (apimachinery's IsQualifiedName). A webhook sees arbitrary names, and its memory must stay flat.
_REMEMBERED = 4096
_NAME_KEPT = 317
# Sets of a unit's names remembered with what they match, whatever else the unit holds (its arguments): a
# cluster's containers carry a few hundred sets at most. Only sets of up to 256 names and 8,192 characters
# are kept, so at worst (every set new, every name long) they hold about 12 MB, whatever a webhook is sent.
_SETS = 512
_SET_SIZE = 256
_SET_TEXT = 8192


class Globber:
    """Matches the `globs` parameters of one activation group against each unit's names."""

    def __init__(self, parameters: Mapping[str, tuple[Iterable[str], Iterable[str]]]) -> None:
        """`parameters`: name -> (its globs, the scopes where its policy has validations)."""
        self.patterns = {name: globs.compiled(tuple(values)) for name, (values, _) in parameters.items()}
        self._at: dict[str, list[str]] = {}  # scope -> the parameters its expressions can read
        for name, (_, scopes) in parameters.items():
            for scope in scopes:
                self._at.setdefault(scope, []).append(name)
        self._seen: dict[str, dict[str, bool]] = {name: {} for name in self.patterns}
        self._sets: dict[tuple[Any, ...], dict[str, list[str]]] = {}

    def names(self, scope: str, values: dict[str, Any]) -> dict[str, list[str]]:
        """Parameter -> the names in the unit's name lists (`values`: its CEL variables) that it matches,
        sorted; every parameter a policy with validations at `scope` has is there, `[]` where nothing
        matches."""
        lists: list[list[Any]] = []
        for variable, field in GLOBBED.get(scope, ()):
            record = values.get(variable)
            listed = record.get(field) if raw.is_mapping(record) else None
            if isinstance(listed, list) and listed:
                lists.append(listed)
        if not lists:
            return {name: [] for name in self._at.get(scope, ())}
        # the lists as they are, made a key in C: most of kubegap's name lists are sorted, so a set of
        # names is one key
        key = (scope, *map(tuple, lists))
        try:
            known = self._sets.get(key)
            hashable = True
        except TypeError:  # an item that cannot be hashed: a list not built by kubegap, matched anew
            known, hashable = None, False
        if known is None:  # shared by the units that carry these names: never changed once made
            found = {n for listed in lists for n in listed if isinstance(n, str)}
            known = {name: self._matching(name, found) if found else [] for name in self._at.get(scope, ())}
            small = sum(map(len, lists)) <= _SET_SIZE and sum(map(len, found)) <= _SET_TEXT
            if hashable and small and len(self._sets) < _SETS:
                self._sets[key] = known
        return known

    def _matching(self, parameter: str, names: set[str]) -> list[str]:
        seen, pattern = self._seen[parameter], self.patterns[parameter]
        out = []
        for name in names:
            hit = seen.get(name)
            if hit is None:
                hit = pattern.fullmatch(name) is not None
                if len(seen) < _REMEMBERED and len(name) <= _NAME_KEPT:
                    seen[name] = hit
            if hit:
                out.append(name)
        return sorted(out)
