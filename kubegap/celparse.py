"""CEL source to a syntax tree, for the Python fast path (kubegap.fastcel).

Only what kubegap's policies need is understood; anything else (bytes, unsigned integers, messages,
qualified names) raises `Unsupported`, and the expression then runs in the CEL runtime alone. The runtime
also compiles every expression, so a syntax error is reported by it, never here. The grammar and its
precedence follow the CEL language definition (github.com/google/cel-spec, doc/langdef.md, "Syntax"):
`?:` binds loosest, then `||`, `&&`, the relations (`< <= >= > == != in`), `+ -`, `* / %`, the unary
`! -`, and member access, calls and indexing tightest.
"""

from __future__ import annotations

import re
from typing import Any

from kubegap.integers import INT64_MAX

# A tree is a tuple whose first item names the node:
#   ("lit", value)  ("id", name)  ("sel", target, field)  ("has", target, field)  ("index", target, key)
#   ("call", name, target or None, args)  ("macro", name, target, variable, args)
#   ("list", items)  ("map", pairs)  ("not", x)  ("neg", x)  ("op", symbol, left, right)
#   ("and", left, right)  ("or", left, right)  ("cond", test, then, otherwise)
Tree = tuple[Any, ...]

MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})
RELATIONS = frozenset({"<", "<=", ">=", ">", "==", "!=", "in"})
_RESERVED = frozenset(
    {"as", "break", "const", "continue", "else", "for", "function", "if", "import", "let", "loop", "package"}
    | {"namespace", "return", "var", "void", "while"}
)
_TOKEN = re.compile(
    r"""(?P<space>\s+|//[^\n]*)
    |(?P<string>[rR]?(?:'''(?:\\.|[^\\])*?'''|\"\"\"(?:\\.|[^\\])*?\"\"\"|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"))
    |(?P<number>(?:\d+\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|0[xX][0-9a-fA-F]+|\d+)(?![\w.]))
    |(?P<name>[A-Za-z_]\w*)
    |(?P<op>&&|\|\||==|!=|<=|>=|[-+*/%!<>?:.,()\[\]{}])""",
    re.VERBOSE | re.DOTALL,
)
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_ESCAPE = re.compile(
    r"\\(?:([abfnrtv\\'\"`?])|([0-3][0-7]{2})|x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8}))"
)


class Unsupported(Exception):
    """The expression uses CEL the fast path does not know: the runtime evaluates it alone."""


def parse(source: str) -> Tree:
    return _Parser(_tokens(source)).whole()


def _tokens(source: str) -> list[tuple[str, str]]:
    out = []
    at = 0
    while at < len(source):
        found = _TOKEN.match(source, at)
        if found is None:
            raise Unsupported(f"unexpected text at {at}")
        kind = found.lastgroup or ""
        if kind != "space":
            out.append((kind, found.group()))
        at = found.end()
    out.append(("end", ""))
    return out


def _string(text: str) -> str:
    raw = text[0] in "rR"
    body = text[1:] if raw else text
    quote = 3 if body[:3] in ("'''", '"""') else 1
    body = body[quote:-quote]
    if "\\" not in body:
        return body
    if raw:  # whether a raw string's backslash escapes its quote differs between parsers
        raise Unsupported("a raw string with a backslash")
    if _ESCAPE.sub("", body).count("\\"):
        raise Unsupported("an escape the fast path does not know")
    return _ESCAPE.sub(_unescape, body)


def _unescape(found: re.Match[str]) -> str:
    simple, octal, hexa, short, long = found.groups()
    if simple is not None:
        return _ESCAPES.get(simple, simple)
    code = int(octal, 8) if octal else int(hexa or short or long, 16)
    if 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
        raise Unsupported("an escape that is no code point")
    return chr(code)


def _number(text: str) -> Tree:
    if any(c in text for c in ".eE") and not text.lower().startswith("0x"):
        return ("lit", float(text))
    value = int(text, 0) if text.lower().startswith("0x") else int(text)
    if value > INT64_MAX:
        raise Unsupported("an integer literal past int64")
    return ("lit", value)


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens = tokens
        self.at = 0

    def peek(self) -> str:
        return self.tokens[self.at][1] if self.tokens[self.at][0] == "op" else self.tokens[self.at][0]

    def take(self, text: str | None = None) -> tuple[str, str]:
        token = self.tokens[self.at]
        if text is not None and token[1] != text:
            raise Unsupported(f"expected {text!r}, found {token[1]!r}")
        self.at += 1
        return token

    def whole(self) -> Tree:
        tree = self.expr()
        if self.tokens[self.at][0] != "end":
            raise Unsupported("text after the expression")
        return tree

    def expr(self) -> Tree:
        test = self.binary(0)
        if self.peek() != "?":
            return test
        self.take("?")
        then = self.binary(0)
        self.take(":")
        return ("cond", test, then, self.expr())

    # loosest first; each level is left-associative
    _LEVELS = (("||",), ("&&",), tuple(RELATIONS), ("+", "-"), ("*", "/", "%"))

    def binary(self, level: int) -> Tree:
        if level == len(self._LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while True:
            token = self.tokens[self.at]
            symbol = token[1] if token[0] in ("op", "name") else None
            if symbol not in self._LEVELS[level]:
                return left
            self.take()
            right = self.binary(level + 1)
            kind = {"||": "or", "&&": "and"}.get(symbol or "")
            left = (kind, left, right) if kind else ("op", symbol, left, right)

    def unary(self) -> Tree:
        if self.peek() == "!":
            self.take()
            return ("not", self.unary())
        if self.peek() == "-":
            self.take()
            return ("neg", self.unary())
        return self.member()

    def member(self) -> Tree:
        tree = self.primary()
        while True:
            if self.peek() == ".":
                self.take()
                kind, name = self.take()
                if kind != "name" or name in _RESERVED or name == "in":
                    raise Unsupported(f"field {name!r}")
                tree = self.call(name, tree) if self.peek() == "(" else ("sel", tree, name)
            elif self.peek() == "[":
                self.take()
                key = self.expr()
                self.take("]")
                tree = ("index", tree, key)
            elif self.peek() == "{":
                raise Unsupported("message construction")
            else:
                return tree

    def call(self, name: str, target: Tree | None) -> Tree:
        self.take("(")
        args = self.items(")")
        if name in MACROS and target is not None:
            if len(args) not in (2, 3) or args[0][0] != "id" or (len(args) == 3 and name != "map"):
                raise Unsupported(f"macro {name} with these arguments")
            return ("macro", name, target, args[0][1], tuple(args[1:]))
        if name == "has" and target is None:
            if len(args) != 1 or args[0][0] != "sel":
                raise Unsupported("has() of something other than a field")
            return ("has", args[0][1], args[0][2])
        return ("call", name, target, tuple(args))

    def items(self, close: str) -> list[Tree]:
        out: list[Tree] = []
        while self.peek() != close:
            out.append(self.expr())
            if self.peek() != ",":
                break
            self.take(",")
        self.take(close)
        return out

    def primary(self) -> Tree:
        kind, text = self.take()
        if kind == "number":
            return _number(text)
        if kind == "string":
            return ("lit", _string(text))
        if kind == "name":
            if text in ("true", "false"):
                return ("lit", text == "true")
            if text == "null":
                return ("lit", None)
            if text in _RESERVED or text == "in":
                raise Unsupported(f"reserved word {text!r}")
            return self.call(text, None) if self.peek() == "(" else ("id", text)
        if text == "(":
            tree = self.expr()
            self.take(")")
            return tree
        if text == "[":
            return ("list", tuple(self.items("]")))
        if text == "{":
            pairs = []
            while self.peek() != "}":
                key = self.expr()
                self.take(":")
                pairs.append((key, self.expr()))
                if self.peek() != ",":
                    break
                self.take(",")
            self.take("}")
            return ("map", tuple(pairs))
        raise Unsupported(f"unexpected {text!r}")
