"""`kubegap test`: run every policy's examples and compare with what each example expects.

An example is `<policy>/examples/{pass,fail,skip}-<scenario>.yaml`; its leading comment lines say what the
policy must report for it, one line per result:

    # expect: fail timeout-declared, timeout-bounded
    # expect: pass async-error-handling

For every result kind (pass, fail, skip, error) the set of rules that got it must equal the listed set
exactly; an unlisted kind must not occur. `# expect: none` says the policy does not apply at all.

A `# params: {name: value, ...}` line (a YAML flow mapping) runs the example with those parameters of its
policy, as the config file's `params: {<policy>: {...}}` would: for rules a cluster must declare first.

A cluster policy's example (scopes `pool` and `cluster-node`: `hot-spares`, `link-monitor`) is a file of
Nodes and Pods: every document is evaluated on its own, then the file as a whole is judged as the audit
judges a cluster whose Node and Pod lists it read in full (kubegap.audit.cluster).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from kubegap import manifests
from kubegap.audit.cluster import ClusterChecks
from kubegap.config import Settings
from kubegap.errors import UsageError
from kubegap.evaluate import Context, Engine, build_engine
from kubegap.findings import Finding, Result
from kubegap.manifests import configmaps_of

_EXPECT = re.compile(r"#\s*expect:\s*(.*)")
_PARAMS = re.compile(r"#\s*params:\s*(.*)")
RESULTS = ("pass", "fail", "skip", "error")


@dataclass(frozen=True, slots=True)
class Example:
    policy: str
    path: Path
    expected: dict[str, frozenset[str]]  # result -> rules
    params: Mapping[str, Any] = field(default_factory=dict)  # the policy's parameters for this example

    def settings(self, base: Settings) -> Settings:
        """`base` with only this example's policy selected and its `# params:` applied."""
        scoped = replace(base, select=(self.policy,))
        return scoped.with_params({self.policy: self.params}) if self.params else scoped

    def engine_key(self) -> tuple[str, str]:
        """Examples with the same key can share one engine."""
        return self.policy, json.dumps(self.params, sort_keys=True, default=str)


@dataclass(frozen=True, slots=True)
class Outcome:
    example: Example
    actual: dict[str, frozenset[str]]
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def _header(text: str, pattern: re.Pattern[str]) -> Iterator[re.Match[str]]:
    """The matches of `pattern` among an example's leading comment lines."""
    for line in text.splitlines():
        if not line.startswith("#"):
            return
        if match := pattern.match(line):
            yield match


def parse_expectations(text: str, source: str) -> dict[str, frozenset[str]]:
    expected: dict[str, set[str]] = {r: set() for r in RESULTS}
    seen = False
    for match in _header(text, _EXPECT):
        seen = True
        result, _, rules = match.group(1).strip().partition(" ")
        if result == "none":
            continue
        if result not in RESULTS:
            raise UsageError(
                f"{source}: `# expect:` takes one of {', '.join(RESULTS)} or none, not {result!r}"
            )
        expected[result].update(r.strip() for r in rules.split(",") if r.strip())
    if not seen:
        raise UsageError(f"{source}: no `# expect: RESULT rule, …` line at the top")
    return {k: frozenset(v) for k, v in expected.items()}


def parse_params(text: str, source: str) -> dict[str, Any]:
    """The `# params: {...}` line of an example's leading comments; {} without one."""
    found: dict[str, Any] = {}
    for match in _header(text, _PARAMS):
        try:
            value = yaml.safe_load(match.group(1))
        except yaml.YAMLError as err:
            raise UsageError(f"{source}: `# params:` is not YAML: {err}") from None
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise UsageError(f"{source}: `# params:` takes a mapping of parameter names, e.g. {{maxGpus: 8}}")
        found.update(value)
    return found


def discover(root: Path) -> Iterator[Example]:
    for folder in sorted(p for p in root.iterdir() if (p / "policy.yaml").is_file()):
        for path in sorted((folder / "examples").glob("*.y*ml")):
            text = path.read_text("utf-8")
            expected = parse_expectations(text, str(path))
            yield Example(folder.name, path, expected, parse_params(text, str(path)))


def build(example: Example, settings: Settings) -> Engine:
    """An engine for `example`: its policy only, with its `# params:`; a bad one names the example."""
    try:
        return build_engine(example.settings(settings))
    except UsageError as err:
        if not example.params:
            raise
        raise UsageError(f"{example.path}, run with `# params: {dict(example.params)}`: {err}") from None


def _prefix_problems(example: Example) -> list[str]:
    kind = example.path.name.split("-", 1)[0]
    expected = example.expected
    if kind == "fail" and not expected["fail"]:
        return ["a fail- example must expect at least one fail"]
    if kind == "pass" and (expected["fail"] or expected["error"] or not expected["pass"]):
        return ["a pass- example must expect passes and no fail or error"]
    if kind == "skip" and (expected["fail"] or expected["pass"]):
        return ["a skip- example must expect only skips (or none)"]
    if kind not in ("pass", "fail", "skip"):
        return ["example file names start with pass-, fail- or skip-"]
    return []


def _results(documents: Sequence[manifests.Document], engine: Engine) -> Iterator[Finding]:
    """Every object's results, then, for cluster policies (scopes `pool` and `cluster-node`), the results
    over all the file's Nodes and Pods, as the audit judges a cluster it has listed in full."""
    context = Context(configmaps=configmaps_of(documents))
    cluster = ClusterChecks(engine, out_of_scope="")
    for document in documents:
        if document.obj is None:
            continue
        evaluation = engine.evaluate(document.obj, context)
        yield from evaluation.results
        cluster.observe(str(document.obj.get("kind")), str(document.obj.get("apiVersion")), document.obj)
        flagged = any(f.result in (Result.FAIL, Result.ERROR) for f in evaluation.results)
        cluster.judged(document.obj, evaluation.ref, flagged)
    for evaluation in cluster.judge(deadline=None):
        yield from evaluation.results


def run_example(example: Example, engine: Engine) -> Outcome:
    documents = list(manifests.Reader().read([str(example.path)]))
    actual: dict[str, set[str]] = {r: set() for r in RESULTS}
    unreadable = [d.error.message if d.error else "unreadable" for d in documents if d.obj is None]
    for finding in _results(documents, engine):
        if finding.policy == example.policy:
            actual[finding.result.value].add(finding.rule)
    frozen = {k: frozenset(v) for k, v in actual.items()}
    problems = _prefix_problems(example) + [f"unreadable: {m}" for m in unreadable]
    for result in RESULTS:
        missing, extra = example.expected[result] - frozen[result], frozen[result] - example.expected[result]
        if missing:
            problems.append(f"expected {result} for {', '.join(sorted(missing))} but did not get it")
        if extra:
            problems.append(f"got {result} for {', '.join(sorted(extra))}, not expected")
    return Outcome(example, frozen, tuple(problems))


def run(root: Path, settings: Settings, policies: Sequence[str] = ()) -> list[Outcome]:
    """Run the examples under `root` (a folder of policy folders) with `root`'s policies loaded."""
    if not root.is_dir():
        raise UsageError(f"{root}: not a folder of policies")
    examples = [e for e in discover(root) if not policies or e.policy in policies]
    engines: dict[tuple[str, str], Engine] = {}
    with_root = replace(settings, policy_dirs=(*settings.policy_dirs, str(root)))
    outcomes = []
    for example in examples:
        key = example.engine_key()
        if key not in engines:
            engines[key] = build(example, with_root)
        outcomes.append(run_example(example, engines[key]))
    return outcomes
