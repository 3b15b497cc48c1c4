"""The bundled policy examples: each one holds under both CEL runtimes, and together they cover every rule.

An example (`policies/<policy>/examples/{pass,fail,skip}-<scenario>.yaml`) states in `# expect:` lines
which rules of its policy pass, fail or are skipped, and in a `# params:` line the parameters it runs
with; `kubegap test` and this module check the same thing. A cluster policy's example (`hot-spares`,
`link-monitor`) is a file of Nodes and Pods, judged as the audit judges a cluster it has listed in full.
"""

from __future__ import annotations

import shutil
from collections import defaultdict
from importlib.resources import files
from pathlib import Path

import pytest

from kubegap import cli, policy, testing
from kubegap.cel import BACKENDS
from kubegap.config import Settings
from kubegap.evaluate import Engine

ROOT = Path(str(files("kubegap.policies")))
POLICIES = policy.load()
# A node pool is no object to annotate: a `pool` validation cannot be exempted, so it is never skipped.
UNEXEMPTABLE = ("pool",)
# Cluster policies are judged by the audit alone: their blank exemptions are tested over the test API
# server (tests/audit/test_cluster.py), where lint has no findings to agree with
# (tests/audit/test_consistency.py).
CLUSTER = ("pool", "cluster-node")
EXAMPLES = list(testing.discover(ROOT))
COVERED_RESULTS = ("pass", "fail", "skip")

_ENGINES: dict[tuple[str, tuple[str, str]], Engine] = {}


def _engine(backend: str, example: testing.Example) -> Engine:
    """One engine per runtime, policy and `# params:` set, as `kubegap test` builds them."""
    key = (backend, example.engine_key())
    if key not in _ENGINES:
        _ENGINES[key] = testing.build(example, Settings(cel_backend=backend))
    return _ENGINES[key]


def _id(example: testing.Example) -> str:
    return f"{example.policy}/{example.path.name}"


def test_every_policy_has_examples() -> None:
    with_examples = {e.policy for e in EXAMPLES}
    assert with_examples == {p.id for p in POLICIES}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("example", EXAMPLES, ids=_id)
def test_example_holds(example: testing.Example, backend: str) -> None:
    outcome = testing.run_example(example, _engine(backend, example))
    assert outcome.problems == ()


def _covered() -> dict[str, dict[str, set[str]]]:
    """policy id -> result -> rules some example expects with that result."""
    covered: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for example in EXAMPLES:
        for result, rules in example.expected.items():
            covered[example.policy][result] |= rules
    return covered


def test_every_validation_passes_fails_and_is_skipped_somewhere() -> None:
    covered = _covered()
    missing = [
        f"{p.id}: {v.name} never expected to {result}"
        for p in POLICIES
        for v in p.validations
        for result in COVERED_RESULTS
        if v.name not in covered[p.id][result] and not (result == "skip" and v.scope in UNEXEMPTABLE)
    ]
    assert missing == []


def test_engine_rules_have_fail_examples() -> None:
    covered = _covered()
    # Every policy can be exempted; only policies that read declarations can meet an unreadable one.
    wanted = [(p.id, "exemption-reason") for p in POLICIES if p.scope not in CLUSTER]
    wanted += [(p.id, "invalid-declaration") for p in POLICIES if p.declarations]
    assert [w for w in wanted if w[1] not in covered[w[0]]["fail"]] == []


def test_every_policy_has_a_not_applicable_example() -> None:
    none_expected = {
        e.policy for e in EXAMPLES if not any(e.expected[r] for r in (*COVERED_RESULTS, "error"))
    }
    assert none_expected == {p.id for p in POLICIES}


def test_kubegap_test_passes_on_the_bundled_examples(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["test"]) == 0
    assert f"{len(EXAMPLES)} passed, 0 failed" in capsys.readouterr().out


def test_kubegap_test_fails_on_a_wrong_expectation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "restart-budget"
    shutil.copytree(ROOT / "restart-budget", copy)
    assert cli.main(["test", str(tmp_path)]) == 0
    # The manifest now disables retries while its expectation still says pass.
    example = copy / "examples" / "pass-job-default-backoff.yaml"
    text = example.read_text("utf-8")
    assert "\n  backoffLimit:" not in text
    example.write_text(text.replace("\nspec:\n", "\nspec:\n  backoffLimit: 0\n", 1), "utf-8")
    capsys.readouterr()
    assert cli.main(["test", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "FAIL restart-budget: pass-job-default-backoff.yaml" in out
    assert "got fail for auto-restart, not expected" in out
