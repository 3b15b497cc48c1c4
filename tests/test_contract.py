"""The facts contract: gathered facts keep to it, and policies that read an undeclared name are refused."""

from __future__ import annotations

import re
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest

from kubegap import facts, kinds, manifests, policy, schema, testing
from kubegap.activation import expressions
from kubegap.audit import demo
from kubegap.cli import main
from kubegap.errors import PolicyError
from kubegap.facts import contract, declare, knobs, reads, reference
from kubegap.facts.cluster import ClusterView, node_unit_facts, pools
from kubegap.lint import configmaps_of

ROOT = Path(__file__).resolve().parent.parent
BUNDLED = Path(str(files("kubegap.policies")))


def _gathered() -> Iterator[tuple[str, facts.ObjectFacts]]:
    catalogue = knobs.load()
    for example in testing.discover(BUNDLED):
        documents = list(manifests.Reader().read([str(example.path)]))
        configmaps = configmaps_of(documents)
        for index, document in enumerate(documents):
            obj, label = document.obj, f"{example.policy}/{example.path.name}#{index}"
            gathered = kinds.gather(obj, catalogue, configmaps) if obj is not None else None
            if gathered is not None:
                yield label, gathered


def _cluster_gathered() -> Iterator[tuple[str, facts.ObjectFacts]]:
    """The cluster scopes over the demo's cluster: the examples' Nodes, the demo pool, job and monitors."""
    view = ClusterView(knobs.load())
    nodes = [d.obj for d in manifests.Reader().read([str(BUNDLED)]) if d.obj and d.obj.get("kind") == "Node"]
    for node in (*nodes, *demo.NODES):
        view.add_node(node, flagged=False)
    job = {**demo.training_job(), "metadata": {"name": demo.JOB, "uid": "uid-of-the-job"}}
    for pod in demo.cluster_pods(job, [str(n["metadata"]["name"]) for n in (*nodes, *demo.NODES)]):
        view.add_pod(pod)
    for seen in view.gpu_nodes():
        yield f"cluster-node/{seen.name}", node_unit_facts(seen)
    for name, gathered in pools(view, "node.kubernetes.io/instance-type"):
        yield f"pool/{name}", gathered


GATHERED = list(_gathered()) + list(_cluster_gathered())


def _departures(gathered: facts.ObjectFacts) -> list[str]:
    scopes = {s for s, units in gathered.units.items() if units}
    # kinds that are not workloads, and the audit's cluster units, have object facts of their own
    own = next((s for s in scopes if s in ("node", "claim", "cluster-node", "pool")), "workload")
    object_facts = contract.SCOPES[own]["facts"]
    found = declare.problems(dict(gathered.facts), object_facts, "facts")
    for scope, units in gathered.units.items():
        declared = contract.SCOPES[scope]
        for unit in units:
            assert unit.scope == scope
            for name, value in unit.bindings.items():
                assert name in declared, f"{scope} unit binds {name}, which the contract does not declare"
                found += declare.problems(value, declared[name], name)
    return found


def test_every_example_is_gathered() -> None:
    assert len(GATHERED) > 50
    assert {s for _, g in GATHERED for s, units in g.units.items() if units} == set(contract.SCOPES)


@pytest.mark.parametrize(("label", "gathered"), GATHERED, ids=[label for label, _ in GATHERED])
def test_gathered_facts_keep_to_the_contract(label: str, gathered: facts.ObjectFacts) -> None:
    assert _departures(gathered) == []


def test_every_declared_fact_shows_in_some_example() -> None:
    """A declared fact no example produces is either dead or untested; the cost-model inputs are the
    only ones examples leave out (tests/test_impact.py covers them)."""
    seen: set[str] = set()

    def walk(value: Any, path: str) -> None:
        seen.add(path)
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(inner, f"{path}.{key}")
        elif isinstance(value, list):
            for inner in value:
                walk(inner, f"{path}[]")

    for _, gathered in GATHERED:
        walk(dict(gathered.facts), "facts")
        for units in gathered.units.values():
            for unit in units:
                for name, value in unit.bindings.items():
                    walk(value, name)
    declared = {
        row[0] for variable, _, kind, _ in reference._SECTIONS for row in reference._rows(variable, kind)
    }
    unseen = {
        p for p in declared - seen if not p.startswith(("facts.expectedRuntime", "facts.checkpoint.saveTime"))
    }
    assert unseen == set()


@pytest.mark.parametrize(
    ("value", "wanted"),
    [
        ({"kind": "Job", "group": "batch", "extra": 1}, "facts.extra: not declared in the facts contract"),
        ({"kind": "Job"}, "facts.group: declared as always present, but missing"),
        ({"kind": 3, "group": ""}, "facts.kind: int 3 is not a string"),
    ],
)
def test_departures_are_named(value: dict[str, Any], wanted: str) -> None:
    assert declare.problems(value, contract.NODE_OBJECT, "facts") == [wanted]


def test_types_are_strict_about_bool_int_and_double() -> None:
    assert declare.problems(True, declare.INT, "x") == ["x: bool True is not a int"]
    assert declare.problems(1, declare.DOUBLE, "x") == ["x: int 1 is not a double"]
    assert declare.problems(1, declare.BOOL, "x") == ["x: int 1 is not a bool"]
    env = declare.MapOf(declare.STRING, "names")
    assert declare.problems({"A": 1}, env, "env") == ["env['A']: int 1 is not a string"]
    assert declare.problems(["a", 2], declare.ListOf(declare.STRING), "l") == ["l[1]: int 2 is not a string"]


def test_the_reference_is_current() -> None:
    checked_in = (ROOT / "docs" / "facts.md").read_text("utf-8")
    assert checked_in == reference.markdown(), (
        "docs/facts.md is stale: run `python -m kubegap.facts.reference > docs/facts.md`"
    )


# --- knob settings: declared in the contract only ---------------------------------------------------------


def test_the_knob_schema_takes_its_settings_from_the_contract() -> None:
    enum = schema._validator("knobs").schema["$defs"]["knob"]["properties"]["setting"]["enum"]
    assert enum == contract.setting_names()
    text = (ROOT / "kubegap" / "schemas" / "knobs.schema.json").read_text("utf-8")
    named = re.findall(r'"setting": \{"const": "(\w+)"\}', text)  # its rules for particular settings
    assert named and set(named) <= set(enum)


def test_a_knob_of_an_undeclared_setting_is_refused(tmp_path: Path) -> None:
    extra = tmp_path / "knobs.yaml"
    extra.write_text(
        "apiVersion: kubegap.dev/v1alpha1\nkind: KnobCatalogue\n"
        "knobs: [{setting: colectiveTimeout, flags: [--t], unit: s}]\n",
        "utf-8",
    )
    with pytest.raises(PolicyError, match="/knobs/0/setting"):
        knobs.load([str(extra)])


def test_every_setting_shows_as_a_declared_fact() -> None:
    for setting in contract.SETTINGS:
        if setting.fact is not None:
            scope = "container" if setting.fact.startswith("container.") else "workload"
            assert reads.problems(f"has({setting.fact})", scope, [], None) == [], setting.name


_SETTING_USES = re.compile(
    r'(?:setting\s*==\s*|by_setting\(|declared\(|hidden\([^,]+,\s*|Reading\()"(\w+)"'
    r"|setting in \(([^)]*)\)"
)


def test_the_code_names_only_declared_settings() -> None:
    used: set[str] = set()
    for path in (ROOT / "kubegap").rglob("*.py"):
        for match in _SETTING_USES.finditer(path.read_text("utf-8")):
            used |= {match[1]} if match[1] else set(re.findall(r'"(\w+)"', match[2]))
    assert {"collectiveTimeout", "checkpointDisabled", "stepTime", "expectedRuntime"} <= used
    assert used <= set(contract.setting_names())


# --- the load-time check of what expressions read ---------------------------------------------------------


def test_every_bundled_policy_passes_the_load_time_check() -> None:
    """kubegap does not re-check its own policies at start (policy.load): this is where they are checked."""
    bundled = policy.load()
    assert len(bundled) >= 15
    for loaded in bundled:
        reads.check(loaded)


def test_a_user_policy_is_checked_when_it_loads(tmp_path: Path) -> None:
    source = (Path(__file__).parents[1] / "policies" / "nccl-timeout" / "policy.yaml").read_text()
    (tmp_path / "mine.yaml").write_text(source.replace("container.gpus", "container.gpu"))
    with pytest.raises(PolicyError, match="did you mean gpus"):
        policy.load([str(tmp_path)])


def test_every_bundled_expression_reads_only_declared_names() -> None:
    checked = 0
    for loaded in policy.load():
        for text in expressions(loaded):
            for scope in {v.scope for v in loaded.validations}:
                names = [p.name for p in loaded.params]
                globbed = [p.name for p in loaded.params if p.type == "globs"]
                found = reads.problems(text, scope, names, None, globbed)
                assert [p for p in found if "variables" not in p and "do not see" not in p] == [], text
                checked += 1
    assert checked > 50


@pytest.mark.parametrize(
    ("expression", "scope", "wanted"),
    [
        ("has(container.colectiveTimeout)", "container", "did you mean collectiveTimeout?"),
        ("container.collectiveTimeout.secnds > 1.0", "container", "did you mean seconds?"),
        ("facts['checkpoint'].intervl.seconds > 1.0", "workload", "facts.checkpoint.intervl"),
        ("facts.checkpoint.interval.txt == ''", "template", "did you mean text?"),
        ("template.gpusPerPd > 0", "template", "did you mean gpusPerPod?"),
        ("node.gpuCapacty > 0", "node", "did you mean gpuCapacity?"),
        ("node.gpuResources.exists(r, r.capcity > 0)", "node", "reads r.capcity"),
        ("node.conditions.filter(c, c.type == 'Ready')[0].stats == ''", "node", "did you mean status?"),
        (
            "node.conditions.map(c, c.type).exists(t, t.size > 0)",
            "node",
            "t is a string, which has no fields",
        ),
        ("container.gpus > 0", "workload", "reads container, which workload-scope expressions do not see"),
        ("facts.training", "node", "facts of a Node: no field training"),
        ("contaner.gpus > 0", "container", "did you mean container?"),
        (
            "params.maxTimout > 1.0",
            "container",
            "the policy has no parameter maxTimout; did you mean maxTimeout?",
        ),
        ("paramsText.maxTimout == ''", "container", "did you mean maxTimeout?"),
        ("container.name.first == ''", "container", "container.name is a string"),
        ("'x' in globbed.nicHint", "container", "no globs parameter nicHint; did you mean nicHints?"),
        ("'x' in globbed.maxTimeout", "container", "no globs parameter maxTimeout"),  # a duration
        ("globbed.nicHints.exists(n, n.size > 0)", "container", "n is a string, which has no fields"),
    ],
)
def test_undeclared_reads_are_named(expression: str, scope: str, wanted: str) -> None:
    found = reads.problems(expression, scope, ["maxTimeout", "nicHints"], (), ["nicHints"])
    assert len(found) == 1 and wanted in found[0], found


@pytest.mark.parametrize(
    ("expression", "scope"),
    [
        (
            "has(container.collectiveTimeout) && container.collectiveTimeout.seconds <= params.maxTimeout",
            "container",
        ),
        ("container.env['NCCL_DEBUG'] == 'INFO' && container.env.NCCL_DEBUG == 'INFO'", "container"),
        ("container.envNames.exists(n, n.startsWith('NCCL_')) && 'X' in container.envPaths", "container"),
        ("container.env.all(k, container.env[k] != '')", "container"),
        (
            "template.annotations['kubegap.dev/step-time'] != '' && template.resourceNames.all(r, r != '')",
            "template",
        ),
        ("object.spec.whatever.goes && object['kind'] == 'Job'", "workload"),
        ("[1, 2].all(x, x > 0) && {'a': 1}.a == 1 && int(facts.totalGpus) > 0 && type(1) == int", "workload"),
        ("node.resources.map(r, r.name).exists(n, n.startsWith('nvidia'))", "node"),
        ("node.gpuResources.filter(r, r.capacity > r.allocatable).all(r, r.name != '')", "node"),
        ("size(variables.fallbacks) == 0 && paramsText.maxTimeout != ''", "container"),
        ("container.envNames.exists(n, n in globbed.nicHints) && size(globbed.nicHints) > 0", "container"),
        ("this is not CEL (", "container"),  # the compiler reports the syntax error
    ],
)
def test_declared_reads_pass(expression: str, scope: str) -> None:
    assert reads.problems(expression, scope, ["maxTimeout", "nicHints"], ["fallbacks"], ["nicHints"]) == []


@pytest.mark.parametrize(
    ("expression", "names"),
    [
        ("has(object.metadata)", True),
        ("facts.gpuWork || 'object-store' == 'object'", False),
        ('"a \\" object" == x', False),  # an escaped quote does not end the string
        ("r'\\' + object.kind", True),  # a raw string has no escapes: it ends at the second quote
        ("'''multi\nobject''' == x", False),
        ('b"object" == x && object.kind == "Job"', True),
        ("x.object == 1 && objects.x", False),  # a field or another name
        ("[1].exists(object, object > 0)", True),  # a comprehension variable of that name: conservative
    ],
)
def test_the_raw_object_is_read_only_where_named_outside_strings(expression: str, names: bool) -> None:
    assert reads.names_object(expression) is names


def test_variables_are_seen_by_validations_only() -> None:
    assert reads.problems("size(variables.x) > 0", "node", [], None) == [
        "reads variables, which only validations see"
    ]
    assert "no variable y" in reads.problems("variables.y", "node", [], ["x"])[0]


_POLICY = """\
apiVersion: kubegap.dev/v1alpha1
kind: Policy
metadata:
  name: typo
spec:
  title: A typo
  severity: low
  scope: {scope}
  remediation: Fix it.
  validations:
    - name: misspelt
      expression: "{expression}"
"""


@pytest.mark.parametrize(
    ("scope", "expression", "suggestion"),
    [
        ("workload", "facts.trainig", "training"),
        ("template", "template.gpusPerPd > 0", "gpusPerPod"),
        ("container", "has(container.colectiveTimeout)", "collectiveTimeout"),
        ("node", "node.gpuCapacty > 0", "gpuCapacity"),
    ],
)
def test_a_user_policy_with_a_typo_stops_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], scope: str, expression: str, suggestion: str
) -> None:
    folder = tmp_path / "policies"
    (folder / "typo").mkdir(parents=True)
    (folder / "typo" / "policy.yaml").write_text(_POLICY.format(scope=scope, expression=expression), "utf-8")
    manifest = tmp_path / "pod.yaml"
    manifest.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: []}\n", "utf-8")
    assert main(["lint", "--policies", str(folder), str(manifest)]) == 2
    err = capsys.readouterr().err
    assert "policy typo, validation misspelt" in err
    assert f"did you mean {suggestion}?" in err
    assert f"expression: {expression}" in err
