"""Generated inputs and the properties they must keep, shared by the bounded tests (tests/test_properties.py)
and the long on-demand run (benchmarks/fuzz.py).

Each `check_*` function states one property and raises AssertionError (or lets an unexpected exception out)
when an input breaks it; each `*_inputs` strategy generates what that property is checked on.
"""

from __future__ import annotations

import copy
import functools
import json
import re
import shlex
from collections.abc import Iterator
from typing import Any

import yaml
from hypothesis import strategies as st

from kubegap import durations, lint, manifests, raw
from kubegap.config import Settings
from kubegap.enginerules import INVALID_MANIFEST
from kubegap.evaluate import Engine, build_engine
from kubegap.facts import argv, shell
from kubegap.findings import Result
from tests.support.samples import FAILING_PYTORCHJOB, example_objects

# --- the manifest reader ------------------------------------------------------------------------------

MANIFEST_RULES = frozenset(
    {
        "yaml-syntax",
        "duplicate-key",
        "alias-limit",
        "too-deep",
        "number-range",
        "too-large",
        "unrendered-template",
        "binary",
        "not-an-object",
    }
)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=20),
    st.sampled_from(["on", "0755", "1:30", "2024-01-01", "=", "~", "!!", "*a", "&a", "{{ .Values.x }}"]),
)
_DATA = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
_OBJECTS = st.fixed_dictionaries(
    {
        "apiVersion": st.sampled_from(["v1", "batch/v1", "kubeflow.org/v1"]),
        "kind": st.sampled_from(["Pod", "Job"]),
    },
    optional={"metadata": _DATA, "spec": _DATA},
)
_FRAGMENTS = st.sampled_from(
    [
        "a: &x [1, 2]\nb: *x\n",
        "a: *missing\n",
        "x: !!python/object:os.system ls\n",
        "x: !custom 3\n",
        "x: !!binary aGVsbG8=\n",
        "<<: {a: 1}\n",
        "a: 1\na: 2\n",
        "\t- tab\n",
        "key: 'unterminated\n",
        "%YAML 1.1\n---\n",
        "...\n",
        "---\n",
        "- [[[[[[\n",
        "k: " + "9" * 5_000 + "\n",
        "\x00",
        "\ufeff",
    ]
)


@st.composite
def manifest_inputs(draw: st.DrawFn) -> bytes:
    """YAML streams built from dumped objects, hostile fragments and raw text, in UTF-8 or not."""
    parts = draw(
        st.lists(
            st.one_of(
                _OBJECTS.map(lambda o: yaml.safe_dump(o, allow_unicode=True)),
                _DATA.map(lambda d: yaml.safe_dump(d, allow_unicode=True)),
                _FRAGMENTS,
                st.text(max_size=40),
            ),
            max_size=5,
        )
    )
    text = draw(st.sampled_from(["---\n", "\n", ""])).join(parts)
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    data = text.encode("utf-8", "surrogatepass")
    if draw(st.booleans()):
        data = b"\xef\xbb\xbf" + data
    if draw(st.integers(0, 9)) == 0:
        data += draw(st.binary(max_size=8))
    return data


def check_manifest(data: bytes, engine: Engine) -> None:
    """Any bytes: documents or invalid-manifest findings, never an exception, and lint goes on."""
    documents = list(manifests.Reader().read_bytes(data, "fuzz.yaml"))
    for doc in documents:
        assert (doc.obj is None) != (doc.error is None)
        if doc.error is not None:
            assert doc.error.rule in MANIFEST_RULES, doc.error
            assert doc.error.message and "\n" not in doc.error.message
    report = lint.lint_documents(documents, engine)
    invalid = [f for f in report.findings if f.policy == INVALID_MANIFEST]
    assert len(invalid) == sum(doc.error is not None for doc in documents)


# --- the engine on type-confused objects --------------------------------------------------------------

_WORKER = ("spec", "pytorchReplicaSpecs", "Worker")
_POD = (*_WORKER, "template", "spec")
_CONTAINER = (*_POD, "containers", 0)
# Fields a type confusion may hit without hiding that this is an 8-GPU training job with findings.
SIDE_FIELDS = (
    ("metadata",),
    ("metadata", "annotations"),
    ("metadata", "labels"),
    ("spec", "runPolicy"),
    (*_WORKER, "replicas"),
    (*_WORKER, "restartPolicy"),
    (*_WORKER, "template", "metadata"),
    (*_POD, "hostNetwork"),
    (*_POD, "resourceClaims"),
    (*_CONTAINER, "env"),
    (*_CONTAINER, "envFrom"),
    (*_CONTAINER, "args"),
    (*_CONTAINER, "command"),
    (*_CONTAINER, "livenessProbe"),
    (*_CONTAINER, "name"),
    (*_CONTAINER, "resources", "requests"),
)
# Fields whose confusion may make the job unreadable as a GPU job: only "never crash" holds.
CORE_FIELDS = (
    ("spec",),
    ("spec", "pytorchReplicaSpecs"),
    _WORKER,
    (*_WORKER, "template"),
    _POD,
    (*_POD, "containers"),
    _CONTAINER,
    (*_CONTAINER, "resources"),
    (*_CONTAINER, "resources", "limits"),
    (*_CONTAINER, "resources", "limits", "nvidia.com/gpu"),
)
CONFUSED = st.one_of(
    _SCALARS,
    st.sampled_from(["abc", "", "8", "-1", "1e3", "10m", "NaN", [], {}, [None], {"a": [1]}]),
    _DATA,
)


@st.composite
def confused_jobs(draw: st.DrawFn, fields: tuple[tuple[str | int, ...], ...]) -> dict[str, Any]:
    """The failing 8-GPU PyTorchJob with some of `fields` replaced by values of the wrong type."""
    job: dict[str, Any] = copy.deepcopy(_failing_job())
    for path in draw(st.lists(st.sampled_from(fields), min_size=1, max_size=4)):
        _put(job, path, draw(CONFUSED))
    return job


@st.composite
def confused_examples(draw: st.DrawFn) -> dict[str, Any]:
    """A bundled policy example with up to three of its values, anywhere, replaced by values of another
    type, or filed under a key that is not text (YAML allows numbers, booleans and null as keys)."""
    obj: dict[str, Any] = copy.deepcopy(draw(st.sampled_from(_examples())))
    for _ in range(draw(st.integers(1, 3))):
        paths = list(_paths(obj))
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent: Any = obj
        for part in path[:-1]:
            parent = parent[part]
        if isinstance(parent, dict) and draw(st.booleans()):
            parent[draw(_KEYS)] = parent.pop(path[-1])
        else:  # a copy: a sampled value is one object, which a later change would change everywhere
            parent[path[-1]] = copy.deepcopy(draw(CONFUSED))
    return obj


_KEYS = st.one_of(st.integers(), st.floats(allow_nan=False), st.booleans(), st.none())


_examples = functools.cache(example_objects)


def _paths(value: Any) -> Iterator[tuple[Any, ...]]:
    """Every place in `value` below its root, (key or index, ...), down to 64 levels: walked with a stack,
    since replaced values may nest generated data in generated data."""
    stack: list[tuple[tuple[Any, ...], Any]] = [((), value)]
    while stack:
        path, inner = stack.pop()
        items = inner.items() if isinstance(inner, dict) else enumerate(inner) if type(inner) is list else ()
        for key, item in items:
            yield (*path, key)
            if len(path) < 64:
                stack.append(((*path, key), item))


@functools.cache
def _failing_job() -> dict[str, Any]:
    job: dict[str, Any] = yaml.safe_load(FAILING_PYTORCHJOB)
    return job


def _put(obj: Any, path: tuple[str | int, ...], value: Any) -> None:
    for part in path[:-1]:
        try:
            obj = obj[part]
        except (KeyError, IndexError, TypeError):
            return  # an earlier confusion removed the parent: nothing left to confuse
    if isinstance(obj, dict) or (isinstance(obj, list) and isinstance(path[-1], int) and path[-1] < len(obj)):
        obj[path[-1]] = value  # type: ignore[index]


def check_confused(job: dict[str, Any], engine: Engine, must_fail: bool) -> None:
    """Never a crash; and when only side fields were confused, never a clean bill of health."""
    evaluation = engine.evaluate(job)
    assert evaluation.supported
    replicas = raw.dig(job, (*_WORKER, "replicas"))
    if type(replicas) is int and replicas == 0:  # zero pods run no GPUs: a legitimate clean result
        must_fail = False
    if must_fail:
        failing = [r for r in evaluation.results if r.result in (Result.FAIL, Result.ERROR)]
        assert failing, [(r.policy, r.rule, r.result.value) for r in evaluation.results]
    json.dumps([r.to_json() for r in evaluation.results])  # every result renders


def check_retyped(obj: dict[str, Any], engine: Engine) -> None:
    """Never a crash, whatever the kind became; every result renders."""
    json.dumps([r.to_json() for r in engine.evaluate(obj).results])


@functools.cache
def engine(backend: str = "cel-expr") -> Engine:
    return build_engine(Settings(cel_backend=backend))


# --- argv against shlex --------------------------------------------------------------------------------

_PLAIN = st.text(st.sampled_from("abcxyz019_-=./:,+@%"), min_size=1, max_size=6)
_SINGLE = st.text(st.characters(blacklist_characters="'\n\r\x00", codec="utf-8"), max_size=6).map(
    lambda s: f"'{s}'"
)
# Inside double quotes shlex and the shell differ on \$ and \` (the shell unescapes them): leave both out.
_DOUBLE = st.text(st.characters(blacklist_characters='"\\$`\n\r\x00', codec="utf-8"), max_size=6).map(
    lambda s: f'"{s}"'
)
_ESCAPED = st.sampled_from("abc xyz'\"").map(lambda c: "\\" + c)
_WORD = st.lists(st.one_of(_PLAIN, _SINGLE, _DOUBLE, _ESCAPED), min_size=1, max_size=3).map("".join)
_OPERATORS = st.sampled_from([";", "&&", "||", "|", "&"])


@st.composite
def shell_lines(draw: st.DrawFn) -> str:
    """A line of words and operators, separated by blanks so that both splitters see the same tokens."""
    items = draw(st.lists(st.one_of(_WORD, _WORD, _OPERATORS), min_size=1, max_size=8))
    spaces = draw(st.lists(st.sampled_from([" ", "  ", "\t"]), min_size=len(items), max_size=len(items)))
    return "".join(item + space for item, space in zip(items, spaces, strict=True))


def plain_scripts() -> st.SearchStrategy[str]:
    """Mostly plain words and blanks, with now and then what makes a script more than that (a quote, an
    escape, an operator, `$(`, a comment, a line break, a blank or a letter that is not ASCII)."""
    plain = list("ab-=/.$~!<>{}:,_1 \t\r") * 8
    rare = ["'", '"', "\\", "`", "#", ";", "&", "|", "(", ")", "\n", "\xa0", "\x0b", "é", "\u2028"]
    return st.text(alphabet=st.sampled_from(plain + rare), max_size=40)


def check_shell_line(line: str) -> None:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    expected = list(lexer)
    assert shell.words(line) == expected


def check_tokenize(container: dict[str, Any]) -> None:
    """Any command/args, of any type: a command line, never an exception."""
    line = argv.tokenize(container)
    assert all(isinstance(token.text, str) for token in line.tokens)


CONTAINERS = st.fixed_dictionaries(
    {},
    optional={
        "command": st.one_of(CONFUSED, st.lists(st.one_of(st.text(max_size=30), _SCALARS), max_size=4)),
        "args": st.one_of(CONFUSED, st.lists(st.one_of(st.text(max_size=30), shell_lines()), max_size=4)),
    },
)

# --- durations against Go's time.ParseDuration ----------------------------------------------------------

# Go: "a possibly signed sequence of decimal numbers, each with optional fraction and a unit suffix";
# units ns, us, µs (U+00B5), μs (U+03BC), ms, s, m, h; "0" alone needs no unit
# (pkg.go.dev/time#ParseDuration).
GO_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "\u00b5s": 1e-6,
    "\u03bcs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_GO_NUMBER = re.compile(r"([0-9]*)(?:\.([0-9]*))?")


def go_parse_duration(text: str) -> float | None:
    """Seconds as Go would read `text`, or None where Go returns an error (reference model for tests)."""
    body = text[1:] if text[:1] in "+-" else text
    if body == "0":
        return 0.0
    if not body:
        return None
    total, pos = 0.0, 0
    while pos < len(body):
        number = _GO_NUMBER.match(body, pos)
        assert number is not None  # the pattern matches the empty string
        whole, fraction = number.groups()
        if not whole and not fraction:
            return None  # no digits before the unit
        pos = number.end()
        unit = next((u for u in sorted(GO_UNITS, key=len, reverse=True) if body.startswith(u, pos)), None)
        if unit is None:
            return None
        total += float(f"{whole or 0}.{fraction or 0}") * GO_UNITS[unit]
        pos += len(unit)
    return -total if text.startswith("-") else total


DURATION_TEXT = st.one_of(
    st.lists(
        st.tuples(
            st.sampled_from(["", "0", "1", "10", "1.5", ".5", "1.", ".", "007"]),
            st.sampled_from([*GO_UNITS, "", "d", "sec", "M", "H"]),
        ),
        max_size=4,
    ).map(lambda parts: "".join(n + u for n, u in parts)),
    st.text(st.sampled_from("0123456789.nuµμmsh+-"), max_size=10),
)


def check_duration(text: str) -> None:
    """Unsigned, in Go's range: kubegap reads exactly what Go reads. Signed: Go's syntax, but refused."""
    expected = go_parse_duration(text)
    try:
        got: float | None = durations.parse_go(text)
    except ValueError:
        got = None
    if text[:1] in "+-" and expected not in (None, 0.0):
        assert got is None, "a signed interval is refused on purpose"
        return
    if expected is not None and abs(expected) * 1e9 >= 2**63:
        return  # Go refuses durations past 292 years; kubegap's float seconds hold them
    assert (got is None) == (expected is None), (text, got, expected)
    if got is not None and expected is not None:
        assert abs(got - expected) <= 1e-9 * max(1.0, abs(expected))


# --- the webhook's decoder on AdmissionReview bodies -------------------------------------------------------

_UID = st.one_of(st.uuids().map(str), st.text(max_size=12), _SCALARS)
_GVK = st.one_of(
    st.fixed_dictionaries(
        {
            "group": st.sampled_from(["", "batch", "kubeflow.org", "apps"]),
            "version": st.sampled_from(["v1", "v1beta1"]),
            "kind": st.sampled_from(["Pod", "Job", "PyTorchJob", "Deployment", "ConfigMap"]),
        }
    ),
    _DATA,
)
_REQUEST_OBJECT = st.one_of(st.just(_failing_job()), _OBJECTS, _DATA)


@st.composite
def review_bodies(draw: st.DrawFn) -> bytes:
    """AdmissionReview bodies, mostly well-formed, with fields missing, mistyped or replaced by junk."""
    request = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "uid": _UID,
                "kind": _GVK,
                "operation": st.one_of(st.sampled_from(["CREATE", "UPDATE", "DELETE", "CONNECT"]), _SCALARS),
                "namespace": st.one_of(st.sampled_from(["ml", ""]), _SCALARS),
                "name": st.one_of(st.just("job"), _SCALARS),
                "subResource": st.one_of(st.just("status"), st.none()),
                "object": _REQUEST_OBJECT,
                "oldObject": st.one_of(st.none(), _REQUEST_OBJECT),
                "dryRun": st.one_of(st.booleans(), _SCALARS),
            },
        )
    )
    review = {
        "apiVersion": draw(st.sampled_from(["admission.k8s.io/v1", "admission.k8s.io/v1beta1", 1])),
        "kind": draw(st.sampled_from(["AdmissionReview", "Review"])),
        "request": draw(st.one_of(st.just(request), _DATA)),
    }
    body = json.dumps(copy.deepcopy(review)).encode()
    cut = draw(st.integers(0, 20))
    return body[:-cut] if cut < 3 else body  # now and then a truncated body


def check_review(status: int, reply: bytes, body: bytes) -> None:
    """A 4xx refusal, or a 200 AdmissionReview answering the request's own uid."""
    assert status in (200, 400), (status, reply[:200])
    if status == 200:
        answer = json.loads(reply)
        sent = json.loads(body)["request"]
        assert answer["apiVersion"] == "admission.k8s.io/v1" and answer["kind"] == "AdmissionReview"
        assert answer["response"]["uid"] == sent["uid"]
        assert isinstance(answer["response"]["allowed"], bool)
