"""The CEL fast path (kubegap.fastcel over kubegap.celops) against both CEL runtimes, on hand-picked and
generated expressions.

The contract: where the fast path answers, each runtime gives that same value (same type, same text,
`-0.0` apart from `0.0`); where a runtime errs, the fast path declines (`celops.Unsure`). It holds for
both runtimes at once, since a policy runs on either: an answer where the two disagree must be declined.
A runtime that refuses to compile an expression (cel-expr type-checks `'a' == null`, cel-python refuses a
trailing comma) never meets the fast path, since kubegap.batch compiles every program with the runtime
first; that runtime is left out of the comparison, and the case counts as answered only where some
runtime compiled it.
"""

from __future__ import annotations

import copy
import math
import random
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from celpy import celtypes

from kubegap import cel, celcost, celops, fastcel
from kubegap.integers import INT64_MAX, INT64_MIN

RUNTIMES = ("cel-expr", "cel-python")
# (outcome, value): "value", "error" (CelError when run) or "refused" (CelError when compiled)
Outcome = tuple[str, Any]


def _plain(value: Any) -> Any:
    """A runtime's value as plain Python (cel-python leaves its own types inside lists and maps)."""
    if isinstance(value, celtypes.BoolType | bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, Mapping):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def same(a: Any, b: Any) -> bool:
    """Equal as CEL values: `1`, `1.0` and `true` differ, so do `0.0` and `-0.0`; NaN equals NaN."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if type(a) is list:
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is dict:
        return a.keys() == b.keys() and all(same(v, b[k]) for k, v in a.items())
    return bool(a == b)


def runtime(name: str, source: str, bindings: Mapping[str, Any]) -> Outcome:
    backend = cel.backend(name)
    try:
        program = backend.compile(source)
    except cel.CelError:
        return "refused", None
    try:
        value = program(backend.activation({k: backend.convert(v) for k, v in bindings.items()}))
    except cel.CelError as err:
        return "error", str(err)[:120]
    return "value", _plain(value)


def check(source: str, bindings: Mapping[str, Any], runtimes: Sequence[str] = RUNTIMES) -> bool:
    """Asserts the contract for one case; returns whether the fast path answered where a runtime ran."""
    assert all(celcost.survey(v)[1] for v in bindings.values())  # the engine's precondition for the fast path
    program = fastcel.compile_fast(source)
    if program is None:
        return False
    before = copy.deepcopy(dict(bindings))
    try:
        fast = fastcel.run(program, bindings)
    except celops.Unsure:
        return False
    finally:
        assert same(dict(bindings), before), f"{source!r} changed its bindings"
    compared = False
    for name in runtimes:
        outcome = runtime(name, source, bindings)
        if outcome[0] == "refused":
            continue
        compared = True
        assert outcome[0] == "value" and same(outcome[1], fast), (
            f"{source!r} over {bindings!r}: fast path {fast!r}, {name} {outcome}"
        )
    return compared


FACTS: dict[str, Any] = {
    "i": 7,
    "neg": -7,
    "two": 2,
    "zero": 0,
    "max": INT64_MAX,
    "min": INT64_MIN,
    "d": 2.5,
    "one": 1.0,
    "nz": -0.0,
    "big": 1e300,
    "inf": math.inf,
    "nan": math.nan,
    "s": "héllo",
    "e": "",
    "emoji": "😀",
    "nl": "a\n",
    "t": True,
    "f": False,
    "n": None,
    "l": [1, 2, 3],
    "ones": [1.0, 2.0],
    "mixed": [1, "a", 2.5, None, True],
    "strs": ["a", "b"],
    "numbered": ["a", 1, "b"],
    "m": {"a": 1, "b": [1, {"c": None}]},
    "mb": {"a": 1, "b": [1, {"c": None}]},
    "nested": [[1], [2, 3]],
    "maps": [{"a": 1}, {"b": 2}],
    "bools": [True, False],
    "globs": ["rdma/*", "nvidia.com/gpu"],
    "numbers": {"space": " 3", "plus": "+3", "exp": "1e3", "zeros": "007", "dot": "3.", "word": "abc"},
    "huge": "9" * 30,
    "minText": "-9223372036854775808",
}
BINDINGS = {"facts": FACTS, "params": {"max": 600.0, "names": ["a", "é"]}}

# Each row runs over BINDINGS on both runtimes; every row compiles in at least one of them.
# fmt: off
CASES = [
    # int64 overflow on + - * and unary minus; INT64_MIN / -1 and % -1
    "facts.max + 1", "facts.max + facts.zero", "facts.min - 1", "facts.min + facts.max", "facts.max * 2",
    "facts.min * -1", "facts.max * -1", "-facts.min", "-facts.max", "-(-9223372036854775807 - 1)",
    "facts.min / -1", "facts.min % -1", "facts.min / 1", "facts.min % 1", "4611686018427387904 * 2",
    "-facts.i", "--facts.i",
    # division and modulo: by zero, negative operands (truncation toward zero)
    "facts.i / 0", "facts.i % 0", "facts.i / facts.zero", "facts.neg / 2", "facts.neg % 2", "facts.i % -2",
    "facts.neg / -2", "facts.neg % -2", "facts.i / -2", "-7 / 2", "7 % -3", "facts.d / 0.0",
    "facts.d / facts.nz",
    "facts.nz / facts.d", "0.0 / 0.0", "facts.d % 2.0",
    # int and double mixed; bool against int
    "facts.i + facts.d", "facts.i == facts.one", "facts.i < facts.d", "facts.one == 1.0", "1 + 1.0",
    "facts.t == 1", "facts.t == facts.i", "facts.f == facts.zero", "facts.t == true", "facts.nz == 0.0",
    "facts.d * 2.0", "facts.big * facts.big", "-facts.nz", "facts.d - 0.5",
    # infinities and NaN (YAML has .inf and .nan)
    "facts.nan == facts.nan", "facts.nan != facts.nan", "facts.nan < 1.0", "[facts.nan] == [facts.nan]",
    "facts.nan in [facts.nan]", "facts.inf == facts.inf", "facts.inf - facts.inf", "-facts.inf",
    "int(facts.nan)", "string(facts.nan)", "durationText(facts.nan)", "durationText(-facts.inf)",
    "facts.inf > facts.max",
    # `== null` for text, int, double, bool, list, map and null
    "facts.s == null", "facts.i == null", "facts.d == null", "facts.t == null", "facts.l == null",
    "facts.m == null", "facts.n == null", "null == facts.n", "facts.s != null", "null == null",
    "'a' == null", "facts.n == facts.e",
    # `in` over lists of mixed types and over maps
    "1 in facts.l", "4 in facts.l", "'a' in facts.mixed", "'z' in facts.mixed", "2.5 in facts.mixed",
    "facts.i in facts.mixed", "null in facts.mixed", "'a' in facts.strs", "'z' in facts.strs",
    "1 in facts.strs",
    "'a' in facts.numbered", "'c' in facts.numbered", "facts.i in facts.ones", "2.0 in facts.ones",
    "'a' in facts.m", "'z' in facts.m", "1 in facts.m", "[1] in facts.nested", "[2, 3] in facts.nested",
    "{'a': 1} in facts.maps", "'a' in facts.s", "true in facts.bools",
    # list and map equality, nested and mixed
    "facts.m == facts.mb", "facts.l == [1, 2, 3]", "facts.l == [1, 2]", "facts.l == facts.ones",
    "facts.nested == [[1], [2, 3]]", "facts.nested == [[1], [2, 4]]", "facts.mixed == facts.mixed",
    "facts.mixed == [1, 'a', 2.5, null, false]", "facts.maps == [{'a': 1}, {'b': 2}]",
    "facts.m == {'a': 1}", "facts.m == {'a': 1, 'b': [1, {'c': null}]}", "facts.m == {'a': 'x', 'b': 1}",
    "facts.l == facts.m", "[] == []", "{} == {}", "facts.strs != ['a', 'b']", "null != facts.m",
    "facts.l != null",
    "facts.s != null", "[facts.n] != [facts.l]", "{'b': null} != {'b': facts.m}",
    "[facts.n, 1] != [facts.m, 2]",
    "[1, facts.n] != [2, facts.m]", "facts.maps != [{'a': null}, {'b': 2}]", "facts.n != facts.n",
    # ordering of text, non-ASCII included
    "facts.s < 'hz'", "'é' < 'z'", "'é' > 'e\u0301'", "facts.emoji > '\uffff'", "facts.e < 'a'", "'B' < 'a'",
    "facts.s >= facts.s", "'a' < 1", "facts.t > facts.f", "facts.l < facts.l",
    # size()
    "size(facts.s)", "size(facts.emoji)", "facts.s.size()", "size(facts.l)", "size(facts.m)", "size(facts.e)",
    "size(facts.i)", "size(facts.n)", "size('e\u0301')",
    # string(), int(), double()
    "string(facts.i)", "string(facts.min)", "string(facts.t)", "string(facts.f)", "string(facts.d)",
    "string(facts.nz)", "string(facts.n)", "string(facts.s)", "string(facts.l)",
    "int(facts.numbers.space)", "int(facts.numbers.plus)", "int(facts.numbers.exp)",
    "int(facts.numbers.zeros)",
    "int(facts.numbers.dot)", "int(facts.numbers.word)", "int(facts.huge)", "int(facts.minText)", "int('-0')",
    "int(facts.d)", "int(-2.5)", "int(facts.nz)", "int(facts.big)", "int(9.2e18)", "int(facts.t)",
    "int(facts.n)",
    "double(facts.numbers.space)", "double(facts.numbers.plus)", "double(facts.numbers.exp)",
    "double(facts.numbers.zeros)", "double(facts.numbers.dot)", "double(facts.numbers.word)",
    "double(facts.huge)", "double('-0')", "double('.5')", "double(facts.i)", "double(facts.max)",
    "double(facts.t)",
    # indexes and keys
    "facts.l[0]", "facts.l[2]", "facts.l[3]", "facts.l[-1]", "facts.l[facts.min]", "facts.l[1.0]",
    "facts.l['a']",
    "facts.m['a']", "facts.m['z']", "facts.m.z", "facts.m.b[1].c", "facts.s[0]", "facts.n.a", "facts.l.a",
    "facts.m[1]", "facts.nested[1][0]",
    # has() on maps, lists, text and null
    "has(facts.m.a)", "has(facts.m.z)", "has(facts.m.b)", "has(facts.l.a)", "has(facts.s.a)",
    "has(facts.n.a)",
    "has(facts.m.b.c)", "has(facts.missing)", "has(facts.missing.a)",
    # && and || with an erring side, in both orders, and with a side that is no bool
    "facts.m.z && false", "false && facts.m.z", "facts.m.z || true", "true || facts.m.z",
    "facts.m.z || false",
    "true && facts.m.z", "facts.i && false", "false && facts.i", "facts.i || true", "true || facts.i",
    "facts.i && true", "true && facts.i", "facts.n || false", "facts.l[9] && facts.t", "facts.t && facts.f",
    "facts.t || facts.i", "!facts.t", "!facts.i", "!facts.n", "!!facts.f",
    # ?: with a test that is no bool, and an erring branch not taken
    "facts.i ? 1 : 2", "facts.n ? 1 : 2", "facts.s ? 1 : 2", "facts.t ? 1 : facts.m.z",
    "facts.f ? facts.m.z : 'x'",
    "facts.t ? 'a' : 1", "facts.t ? facts.t ? 1 : 2 : 3",
    # every macro: over lists, over maps (their keys), over what is neither, nested and shadowing
    "facts.l.all(x, x > 0)", "facts.l.all(x, x > 1)", "facts.mixed.all(x, x == 1)", "facts.bools.all(x, x)",
    "facts.mixed.all(x, x)", "[false, 1].all(x, x)", "[1, false].all(x, x)", "facts.l.exists(x, x > 2)",
    "facts.mixed.exists(x, x == 'a')", "facts.bools.exists(x, x)", "[1, true].exists(x, x)",
    "facts.l.exists_one(x, x > 2)", "facts.l.exists_one(x, x > 1)", "facts.mixed.exists_one(x, x == 1)",
    "facts.l.map(x, x * 2)", "facts.l.map(x, x > 1, x * 2)", "facts.l.map(x, x, x)",
    "facts.l.filter(x, x != 2)",
    "facts.mixed.filter(x, x == 1)", "facts.l.map(x, x * facts.max)", "facts.m.all(k, k != 'z')",
    "facts.m.exists(k, k == 'b')", "facts.m.map(k, k)", "facts.m.filter(k, k == 'a')", "facts.s.all(c, true)",
    "facts.i.exists(x, true)", "facts.n.map(x, x)", "facts.nested.exists(x, x.exists(x, x > 2))",
    "facts.nested.map(x, x.map(x, x + 1))", "facts.nested.map(x, x.map(y, x))",
    "facts.l.map(facts, facts + 1)",
    "facts.l.map(l, facts.l.filter(x, x < l))", "[1, 2].map(x, [x].map(y, x + y))", "[].all(x, x)",
    "[].exists_one(x, x)", "facts.maps.map(m, has(m.a))",
    # an error inside a comprehension that CEL's `&&`, `||` or `exists` would not reach
    "false && facts.l.map(x, x / 0) == []", "facts.t || facts.l.filter(x, x / 0 == 1) == []",
    "false && facts.l.exists_one(x, x / 0 == 1)", "false && facts.i.exists(x, true)",
    "false && facts.l.map(x, x) == [1]", "has(facts.m.z) && facts.m.z.exists(x, x)",
    "facts.t || [facts.d].map(y, y.b) == []", "[1, 0].exists(x, x == 1 ? true : [x].map(y, 1 / y) == [])",
    "[1, 0].all(x, x == 1 ? false : [facts.d].map(y, y.b) == [])", "facts.l.exists(x, [x].map(y, y) == [1])",
    # what kubegap.fastcel tests in place: text against a text literal, a key, has(), a range, a bool, and
    # kubegap.batch's binding of one value (`[e].map(v, body)[0]`); each also where the operand is not so
    "facts.s == 'héllo'", "facts.s != 'héllo'", "facts.s != 'x'", "facts.e == ''", "facts.i == 'x'",
    "facts.i != 'x'", "facts.n != 'x'", "facts.l == 'a'", "facts.m != 'a'", "facts.m.a != 'a'",
    "facts.m['b']", "facts.l['b']", "facts.s['b']", "facts.n['b']", "has(facts.m.b)", "has(facts.l.b)",
    "facts.strs.exists(x, x == 'b')", "facts.s.exists(x, true)", "facts.m.exists(k, k == 'a')",
    "facts.bools.exists(x, x)", "facts.l.all(x, x)", "facts.t && facts.f", "facts.i || facts.t",
    "[facts.s].map(v, v != 'héllo')[0]", "[facts.m].map(v, v.a)[0]", "[facts.n].map(v, has(v.a))[0]",
    "[facts.l].map(v, v.exists(x, x > 2))[0]", "[1, 2].map(v, v)[0]", "[].map(v, v)[0]",
    "[facts.m].map(v, v.z)[0]", "[facts.i].map(v, v, v)[0]", "[facts.i].map(v, v)[1]",
    "[facts.i].map(v, v)[facts.zero]", "facts.t == false", "facts.t != true", "facts.i == 7", "facts.i != 7",
    "facts.d == 2.5", "facts.d != 2.5", "facts.nan == 0.0", "facts.nan != 0.0", "facts.i == 7.0",
    "facts.d == 2", "facts.t == 1", "facts.i == true", "facts.n == false", "facts.l == 1", "'b' in facts.mb",
    "'b' in facts.l", "'b' in facts.n",
    # string literals: escapes, raw, triple-quoted; comments and trailing commas; hex and float literals
    r"'a\nb'", r"'a\tb'", r"'a\\b'", r"'a\'b'", r'"a\"b"', r"'\x41'", r"'\X41'", r"'\u00e9'", r"'\U0001F600'",
    r"'\101'", r"'\?'", r"'\`'", r"'\a\b\f\v\r'", r"'\ud800'", r"r'a\nb'", r"R'\x41'", r"r'\''",
    "'''a'b'''", r"'''a\'''b'''", '"""a"b"""', "'''line\nbreak'''", '"""cr\rlf\r\n"""', "'''a\x0bb'''",
    "'a' + // comment\n 'b'", "1 + // one\n2 // end", "[1, 2,]", "{'a': 1,}", "[,]", "{'a': 1, 'a': 2}",
    "0x1F", "0XfF", "0x7fffffffffffffff", "0x8000000000000000", "-0x8000000000000000", "-9223372036854775808",
    "9223372036854775807", "1.5", "1e3", "1.5e-3", ".5", "1e400", "-0.0", "007", "1u", "b'a'", "{1: 2}",
    "{'a': 1}.a", "[1, 'a'] + ['b']", "[1] + [1.0]", "facts.l + facts.ones", "facts.s + facts.emoji",
    "'a' + 1",
    # startsWith, endsWith, contains, matches with arguments that are no text
    "facts.s.startsWith('hé')", "facts.s.startsWith(facts.i)", "facts.i.startsWith('1')",
    "facts.s.endsWith('')",
    "facts.s.endsWith(facts.n)", "facts.s.contains('ll')", "facts.s.contains(facts.l)", "facts.l.contains(1)",
    "facts.s.matches(facts.i)", "facts.i.matches('1')", "matches(facts.s, '^h')", "'e\u0301'.startsWith('e')",
    "('a' + facts.s).contains('a')", "(facts.s + facts.s).startsWith('h')",
    "facts.strs.exists(x, x.contains('a'))",
    "facts.strs.map(x, x + x).exists(x, x.contains('a'))", "'abc'.contains('b')",
    "facts.m.b[1].c.contains('a')",
    # durationText of a double and of an int; joined and matchesAny over items that are no text
    "durationText(facts.d)", "durationText(facts.i)", "durationText(5)", "durationText(facts.nz)",
    "durationText(facts.big)", "durationText(9.2e18)", "durationText(params.max)", "durationText(facts.s)",
    "durationText(facts.d / 0.0)", "joined(facts.strs)", "joined(facts.l)", "joined(facts.numbered)",
    "joined(facts.mixed)", "joined(facts.ones)", "joined(facts.bools)", "joined(facts.nested)",
    "joined(facts.m)",
    "joined(facts.s)", "joined([facts.min, facts.emoji])", "matchesAny('rdma/ib', facts.globs)",
    "matchesAny('cpu', facts.globs)", "matchesAny('a', facts.numbered)", "matchesAny('1', facts.l)",
    "matchesAny(facts.i, facts.strs)", "matchesAny('a', facts.m)", "matchesAny('a', facts.s)",
    "matchesAny('', [])",
    # precedence and associativity
    "1 + 2 * 3 - 4 / 2 % 3", "!true == false", "true || false && false", "1 in [1] == true", "1 < 2 == true",
    "true ? 1 : false ? 2 : 3", "-1 in [-1]", "1 - -1", "- 1", "!!true", "1 < 2 < 3", "(1 + 2) * 3",
    "facts.i - 2 - 3", "facts.i / 2 / 2", "facts.i % 4 % 2", "{'a': [1, 2]}.a[1] * -facts.i",
    # names the fast path does not bind, and other CEL it does not know
    "size", "int", "type(1)", "dyn(1)", "facts.l.size() == 3", "missing.a",
    # a bool by construction against a bool literal, and negated: written without a check
    "(facts.i < 8) == true", "(facts.i < 8) == false", "(facts.i > 8) != true", "(facts.i > 8) != false",
    "(facts.t && facts.f) == false", "facts.l.exists(x, x > 2) != false", "!(facts.i < 8)",
    "!(facts.t || facts.f)", "!facts.l.all(x, x > 0)", "!(facts.i / 0 > 1)", "(facts.s > 1) == true",
    # a variable against a number: of the number's type, ordered in place; of another, checked
    "facts.i > 0", "facts.i >= 7", "facts.i < 7", "facts.i <= 6", "facts.d > 2.0", "facts.d <= 2.5",
    "facts.max > 0", "facts.min < 0", "facts.nan < 1.0", "facts.nan >= 1.0", "facts.nz < 0.0",
    "facts.i > 1.0", "facts.d > 1", "facts.t > 0", "facts.s > 1", "facts.n < 1", "facts.l > 0",
    # a variable `in` another: text in a map tested in place, anything else checked
    "facts.s in facts.m", "facts.strs.map(x, x in facts.m)", "facts.mixed.map(x, x in facts.m)",
    "facts.i in facts.m", "facts.strs.map(x, x in facts.numbered)", "facts.strs.map(x, x in facts.s)",
]
# fmt: on


@pytest.mark.parametrize("source", CASES)
def test_hand_picked(source: str) -> None:
    check(source, BINDINGS)


def test_hand_picked_cases_are_mostly_answered() -> None:
    """The table exercises the fast path, not only its refusals."""
    answered = sum(check(source, BINDINGS) for source in CASES)
    assert answered > len(CASES) // 3, f"{answered} of {len(CASES)}"


# (pattern, text): where RE2 (both runtimes) and Python's re differ, and where they do not
# fmt: off
REGEXES = [
    ("^a$", "a\n"), ("a$", "a\n"), ("a$", "a"), ("$", "\n"), ("^$", ""), ("a$$", "a"), ("^^a", "a"),
    ("(?m)^b$", "a\nb\n"), ("(?m)a$", "a\n"), ("(?m)^$", "a\n"), ("(?m)a\n^", "a\n"), ("(?m)$\r", "a\r\n"),
    ("(?s)a.b", "a\nb"), ("a.b", "a\nb"), ("^.$", "\r"), ("^.$", "😀"), ("(?ims)a", "A"), ("(?ss)a", "a"),
    ("(?i)é", "É"), ("(?i)k", "K"), ("(?i)k", "\u212a"), ("(?i)[k]", "\u212a"), ("(?i)s", "\u017f"),
    ("(?i)^ss$", "ß"),
    ("(?i)[a-z]", "K"), ("(?i)[^k]", "K"), ("(?i)", "A"), ("(?i)(?m)a", "A"), ("a(?i)b", "aB"),
    (r"^\d$", "٣"), (r"^\D$", "٣"), (r"^[^\d]$", "٣"), (r"^[\D]$", "٣"), (r"^\d+$", "123"), (r"^\w$", "é"),
    (r"^\W$", "é"), (r"^\w+$", "a_1"), (r"^\s$", "\x0b"), (r"^[\s]$", "\x0b"), (r"^\S$", "\x0b"),
    (r"^\s$", "\xa0"),
    (r"^\s$", "\t"), (r"^\s*0\s*$", " 0\n"),
    ("^[]a]$", "]"), ("^[^]a]$", "]"), ("^[]]$", "]"), ("^[]$", "]"), ("^[^]$", "^"), ("^[^^]$", "^"),
    (r"^[\]]$", "]"), (r"^[\[]$", "["), ("^[a[]$", "["), ("^[-a]$", "-"), ("^[a-]$", "-"), ("[z-a]", "-"),
    ("^[[:alpha:]]$", "a"), ("^[[:alpha:]]$", ":"), ("[a&&b]", "&"), ("[a--b]", "-"), ("[a||b]", "|"),
    ("[a~~b]", "~"),
    (r"^[\w-]$", "-"), (r"^[\w-a]$", "-"), (r"^[\s-a]$", "!"), (r"^[\d-a]$", ":"), (r"^[!-\w]$", "-"),
    (r"^[\.-\d]$", "."), (r"^[a-\d]$", "-"), (r"^[\w.-]+$", "a-b.c"), (r"^[a\d-z]$", "b"),
    (r"^[\--\/]$", "."),
    (r"\bfoo\b", "a foo b"), (r"\b\B", ""), (r"a\Z", "a"), (r"a\z", "a"), (r"\Aa", "a"), (r"^\pL$", "a"),
    ("^a{,3}$", "a{,3}"), ("^a{,3}$", "aa"), ("a{1001}", "a"), ("a{1000}", "b"), ("^a{0}$", ""),
    ("^a{2,1}$", ""),
    ("^a{01}$", "a"), ("^a{01}$", "a{01}"), ("^a{1,02}$", "aa"), ("^a{00}$", ""), ("^a{1,}b{1,}$", "ab"),
    ("^x{", "x{"), ("^x{a}", "x{a}"), ("^x{2", "x{2"), ("^x}", "x}"), ("^(?:a{1000})*$", "ab"),
    ("^a*+$", "aaa"), ("^a**$", "aa"), ("^a+?$", "aa"), ("^a??$", ""), ("^a{2}?$", "aa"), ("(?U)^a+", "aa"),
    ("a(?=b)", "ab"), ("a(?!b)", "ab"), ("(?<=a)b", "ab"), (r"(a)\1", "aa"), ("(?P<x>a)", "a"),
    ("(?<x>a)", "a"),
    ("^(a|b)*$", "ab"), ("(?:a)", "a"), ("^(?:)$", ""), ("()", ""), ("a|", ""), ("x|*", "x"), ("(", "a"),
    (")", "a"),
    ("*", "a"), ("(?x)^ a$", "a"), (r"\Qa.b\E", "a.b"), (r"^\x41$", "A"), (r"^\x{41}$", "A"), (r"^\n$", "\n"),
    (r"^\0$", "\x00"), (r"\.", "."), (r"\ ", " "), (r"\#", "#"), (r"\<", "<"), (r"\_", "_"), (r"\%", "%"),
    (r"^\$", "$"), (r"\\", "\\"), ("é", "é"), ("^[😀]$", "😀"), ("^#a$", "#a"), ("^ a$", " a"),
    ("^[0-9]+$", "12a"), ("^rdma/.*$", "rdma/ib"), ("a", "b" * 3000), ("^a*b", "a" * 3000),
]
# fmt: on


@pytest.mark.parametrize(("pattern", "text"), REGEXES)
def test_regex(pattern: str, text: str) -> None:
    check("facts.text.matches(facts.pattern)", {"facts": {"text": text, "pattern": pattern}})
    check(f"facts.text.matches({_quoted(pattern)})", {"facts": {"text": text}})


def test_regexes_are_mostly_answered() -> None:
    answered = sum(check("facts.t.matches(facts.p)", {"facts": {"t": t, "p": p}}) for p, t in REGEXES)
    assert answered > len(REGEXES) // 3, f"{answered} of {len(REGEXES)}"


def _quoted(text: str, rng: random.Random | None = None) -> str:
    """`text` as a CEL string literal; given `rng`, in a random quote and with random escapes."""
    quote = rng.choice(("'", '"', "'''", '"""')) if rng is not None else "'"
    out = []
    for c in text:
        if c in "\\'\"":
            out.append("\\" + c)
        elif ord(c) < 0x20 or (rng is not None and rng.random() < 0.2):
            out.append(_escaped(c, rng.randrange(3) if rng is not None else 0))
        else:
            out.append(c)
    return quote + "".join(out) + quote


def _escaped(c: str, style: int) -> str:
    """`c` as a CEL escape: hexadecimal, octal where it fits, or \\u and \\U."""
    if style == 0 and ord(c) < 0x100:
        return f"\\x{ord(c):02x}"
    if style == 1 and ord(c) < 0o400:
        return f"\\{ord(c):03o}"
    return f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}"


# Generated cases: random values, and random expressions over them that are mostly well typed (so the fast
# path has something to answer), now and then not.
# fmt: off
SCALARS = ("int", "double", "string", "bool", "null")
KINDS = (*SCALARS, "list", "map")
INTS = (0, 1, -1, 2, 3, -7, 100, INT64_MAX, INT64_MIN, INT64_MAX - 1, INT64_MIN + 1, 2**62, -(2**31),
        3037000500)
DOUBLES = (0.0, -0.0, 0.5, -2.5, 1.0, 3.0, 0.1, 1e300, -1e300, 5e-324, 2.0**63, 9.2e18, 86400.5, math.nan)
TEXTS = ("", "a", "b", "ab", "A", "é", "e\u0301", "😀", "a\nb", " 3", "3", "-12", "007", "1e3", "3.5", "ß",
         "\u212a")
PATTERNS = ("^a", "b$", "(?i)^a", "^[a-z]+$", r"^\d+$", r"\w", "(?m)^b$", "^.$", "a{01}", r"[\w-a]", "(", "")
GLOBS = ("a*", "*", "rdma/*", "", "é")
KEYS = ("a", "b", "c", "é", "x y", "")
# fmt: on
VALUES: dict[str, Sequence[Any]] = {"int": INTS, "double": DOUBLES, "string": TEXTS, "bool": (True, False)}
_NONFINITE = {"inf": "(1e308 * 10.0)", "-inf": "(-1e308 * 10.0)", "nan": "(1e308 * 10.0 - 1e308 * 10.0)"}


def _kind(value: Any) -> str:
    kinds = {bool: "bool", int: "int", float: "double", str: "string", list: "list", dict: "map"}
    return kinds.get(type(value), "null")


def _value(rng: random.Random, kind: str, depth: int) -> Any:
    inner = KINDS if depth > 0 else SCALARS
    if kind == "list":
        same_kind = rng.choice(inner) if rng.random() < 0.7 else None
        return [_value(rng, same_kind or rng.choice(inner), depth - 1) for _ in range(rng.randrange(4))]
    if kind == "map":
        return {rng.choice(KEYS): _value(rng, rng.choice(inner), depth - 1) for _ in range(rng.randrange(4))}
    return rng.choice(VALUES.get(kind, (None,)))


def _walk(value: Any, path: str, out: dict[str, list[tuple[str, Any]]]) -> None:
    """Every value in `value` by its kind, with the CEL that reads it."""
    out.setdefault(_kind(value), []).append((path, value))
    if type(value) is dict:
        for key, item in value.items():
            _walk(
                item,
                f"{path}.{key}" if key.isidentifier() and key.isascii() else f"{path}[{_quoted(key)}]",
                out,
            )
    elif type(value) is list:
        for at, item in enumerate(value):
            _walk(item, f"{path}[{at}]", out)


class Gen:
    """Random CEL of a wanted kind over the bindings."""

    def __init__(self, rng: random.Random, bindings: Mapping[str, Any]) -> None:
        self.rng = rng
        self.paths: dict[str, list[tuple[str, Any]]] = {}
        for name, value in bindings.items():
            _walk(value, name, self.paths)
        self.scope: dict[str, str] = {}  # a macro's variable -> the kind of the items it takes

    def expr(self, kind: str, depth: int) -> str:
        if self.rng.random() < 0.08:
            kind = self.rng.choice(KINDS)  # the wrong kind, now and then
        if depth <= 0 or self.rng.random() < 0.25:
            return self.leaf(kind)
        maker = getattr(self, f"make_{kind}")
        text: str = maker(depth - 1)
        return text

    def leaf(self, kind: str) -> str:
        rng = self.rng
        names = [name for name, held in self.scope.items() if held in (kind, "any")]
        if names and rng.random() < 0.6:
            return rng.choice(names)
        roll = rng.random()
        if roll < 0.5 and self.paths.get(kind):
            return rng.choice(self.paths[kind])[0]
        if roll < 0.53:
            return rng.choice(("facts.missing", "facts['x y'].a", "facts.a[7]", "facts.a.b"))
        return self.literal(kind)

    def literal(self, kind: str) -> str:
        rng = self.rng
        if kind == "list":
            item = rng.choice(SCALARS)
            return f"[{', '.join(self.literal(item) for _ in range(rng.randrange(4)))}]"
        if kind == "map":
            pairs = {rng.choice(KEYS): self.literal(rng.choice(SCALARS)) for _ in range(rng.randrange(3))}
            return "{" + ", ".join(f"{_quoted(k)}: {v}" for k, v in pairs.items()) + "}"
        value = _value(rng, kind, 0)
        if type(value) is int:
            if value == INT64_MIN:
                return "(-9223372036854775807 - 1)"
            return f"0x{value:x}" if value > 0 and rng.random() < 0.2 else str(value)
        if type(value) is str:
            return _quoted(value, rng)
        if type(value) is float:
            return repr(value) if math.isfinite(value) else _NONFINITE[repr(value)]
        return "null" if value is None else str(value).lower()

    def cond(self, kind: str, depth: int) -> str:
        return f"({self.expr('bool', depth)} ? {self.expr(kind, depth)} : {self.expr(kind, depth)})"

    def make_int(self, d: int) -> str:
        e, rng = self.expr, self.rng
        return rng.choice(
            (
                lambda: f"({e('int', d)} {rng.choice('+-*/%')} {e('int', d)})",
                lambda: f"-{e('int', d)}",
                lambda: f"size({e(rng.choice(('string', 'list', 'map')), d)})",
                lambda: f"int({e(rng.choice(('string', 'double', 'int', 'bool')), d)})",
                lambda: f"{e('list', d)}[{rng.choice(('0', '1', '-1', '3', e('int', d)))}]",
                lambda: self.cond("int", d),
            )
        )()

    def make_double(self, d: int) -> str:
        e, rng = self.expr, self.rng
        return rng.choice(
            (
                lambda: f"({e('double', d)} {rng.choice('+-*/')} {e('double', d)})",
                lambda: f"-{e('double', d)}",
                lambda: f"double({e(rng.choice(('string', 'double', 'int')), d)})",
                lambda: self.cond("double", d),
            )
        )()

    def make_string(self, d: int) -> str:
        e, rng = self.expr, self.rng
        return rng.choice(
            (
                lambda: f"({e('string', d)} + {e('string', d)})",
                lambda: f"string({e(rng.choice(SCALARS), d)})",
                lambda: f"joined({e('list', d)})",
                lambda: f"durationText({e(rng.choice(('double', 'double', 'int')), d)})",
                lambda: f"{e('map', d)}[{e('string', d)}]",
                lambda: self.cond("string", d),
            )
        )()

    def make_bool(self, d: int) -> str:
        e, rng = self.expr, self.rng
        kind = rng.choice((*SCALARS, *SCALARS[:4], "list", "map", *self.scope.values()))
        kind = kind if kind != "any" else rng.choice(SCALARS)
        return rng.choice(
            (
                lambda: f"({e(kind, d)} {rng.choice(('==', '!=', '<', '<=', '>', '>='))} {e(kind, d)})",
                lambda: f"({e(kind, d)} in {e('list', d)})",
                lambda: f"({e('string', d)} in {e('map', d)})",
                lambda: f"({e('bool', d)} {rng.choice(('&&', '||'))} {e('bool', d)})",
                lambda: f"!{e('bool', d)}",
                lambda: f"has({e('map', d)}.{rng.choice(('a', 'b', 'z'))})",
                lambda: (
                    f"{e('string', d)}.{rng.choice(('startsWith', 'endsWith', 'contains'))}({e('string', d)})"
                ),
                lambda: f"{e('string', d)}.matches({_quoted(rng.choice(PATTERNS))})",
                lambda: (
                    f"matchesAny({e('string', d)}, [{', '.join(_quoted(g) for g in rng.sample(GLOBS, 2))}])"
                ),
                lambda: self.macro(rng.choice(("all", "exists", "exists_one")), d),
                lambda: f"({e(kind, d)} == null)",
                lambda: self.cond("bool", d),
            )
        )()

    def make_list(self, d: int) -> str:
        e, rng = self.expr, self.rng
        return rng.choice(
            (
                lambda: self.leaf("list"),
                lambda: f"({e('list', d)} + {e('list', d)})",
                lambda: self.macro(rng.choice(("map", "filter")), d),
                lambda: self.cond("list", d),
            )
        )()

    def make_map(self, d: int) -> str:
        return self.cond("map", d) if self.rng.random() < 0.3 else self.leaf("map")

    def make_null(self, d: int) -> str:
        return self.cond("null", d) if self.rng.random() < 0.3 else self.leaf("null")

    def ranged(self, d: int) -> tuple[str, str]:
        """What a macro walks, and the kind of its items ("any" where they are mixed or unknown)."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.5 and self.paths.get("list"):
            path, items = rng.choice(self.paths["list"])
            kinds = {_kind(v) for v in items}
            return path, kinds.pop() if len(kinds) == 1 else "any"
        if roll < 0.8:
            kind = rng.choice(SCALARS)
            return f"[{', '.join(self.literal(kind) for _ in range(rng.randrange(4)))}]", kind
        if roll < 0.9:
            return self.expr("map", d), "string"
        return self.expr("list", d), "any"

    def macro(self, name: str, d: int) -> str:
        target, items = self.ranged(d)
        variable = self.rng.choice(("x", "y", "x", "facts"))  # `facts` shadows the binding
        saved = self.scope.get(variable)
        self.scope[variable] = items
        try:
            body = self.expr(self.rng.choice(SCALARS) if name == "map" else "bool", d)
        finally:
            if saved is None:
                del self.scope[variable]
            else:
                self.scope[variable] = saved
        return f"{target}.{name}({variable}, {body})"


def _bindings(rng: random.Random) -> dict[str, Any]:
    facts = {key: _value(rng, rng.choice(KINDS), 2) for key in ("a", "b", "c", "d", "e", "é")}
    return {"facts": facts, "params": {"n": _value(rng, "int", 0), "l": _value(rng, "list", 1)}}


GENERATED = 4000  # each runs on cel-expr; every other one on cel-python as well (it is far slower)


def test_generated() -> None:
    rng = random.Random(20261203)
    answered = 0
    failures = []
    for number in range(GENERATED):
        bindings = _bindings(rng)
        kind = rng.choice(("int", "double", "string", "bool", "bool", "list"))
        source = getattr(Gen(rng, bindings), f"make_{kind}")(rng.randrange(4))  # an operation at the top
        try:
            answered += check(source, bindings, RUNTIMES if number % 2 == 0 else RUNTIMES[:1])
        except AssertionError as err:
            failures.append(str(err).split("\n")[0])
    assert not failures, f"{len(failures)} disagreements, first: " + "\n".join(failures[:10])
    assert answered > 0.3 * GENERATED, f"the fast path answered {answered} of {GENERATED}"


@pytest.mark.parametrize("source", ["[1].a", "'text'.a", "null.a", "true.a", "1.5.a", "{'a': 1}.a"])
def test_compiling_warns_nothing(source: str) -> None:
    """A literal read by a field name is no Python warning on the user's terminal."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        fastcel.compile_fast(source)
    assert not seen, [str(w.message) for w in seen]
    check(source, BINDINGS)


def test_int_of_an_infinity_is_an_error_in_both_runtimes() -> None:
    for name in RUNTIMES:
        assert runtime(name, "int(facts.inf)", BINDINGS)[0] == "error"
