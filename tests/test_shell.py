"""kubegap.facts.shell: scripts of `sh -c` split as the shell reads them, and always split."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kubegap.facts import shell

# Each of these once kept the scanner in place for ever, appending empty words until memory ran out: a
# substitution never closed, a backslash at the end, and a blank the shell does not split at.
ENDLESS_ONCE = {
    "$(": ["$("],
    "a $(b": ["a", "$(b"],
    "`": ["`"],
    "x`y": ["x`y"],
    "torchrun train.py \\": ["torchrun", "train.py", "\\"],
    "a\x0bb c": ["a\x0bb", "c"],
    "--name a\xa0b": ["--name", "a\xa0b"],
}


def _split_in_a_child(scripts: list[str], setup: str = "") -> list[list[str]]:
    """`shell.words` of each script in a child process, so that a scanner that never ends fails the test
    (after two minutes) instead of hanging the suite."""
    code = f"import json, re, sys\nfrom kubegap.facts import shell\n{setup}\n"
    code += "print(json.dumps([shell.words(s) for s in json.loads(sys.stdin.read())]))"
    child = subprocess.run(
        [sys.executable, "-c", code], input=json.dumps(scripts), capture_output=True, text=True, timeout=120
    )
    assert child.returncode == 0, child.stderr
    result: list[list[str]] = json.loads(child.stdout)
    return result


def test_scripts_that_once_never_ended_are_split() -> None:
    assert _split_in_a_child(list(ENDLESS_ONCE)) == list(ENDLESS_ONCE.values())


def test_a_scanner_that_reads_nothing_falls_back_to_blanks() -> None:
    # a piece pattern that matches nothing: the scanner must still end
    setup = 'shell._PIECE = re.compile(r"(?!)()()()()")'
    assert _split_in_a_child(["a 'b c' d", "x $(y"], setup) == [["a", "'b", "c'", "d"], ["x", "$(y"]]


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("torchrun --nnodes 4 train.py --lr 3e-4", ["torchrun", "--nnodes", "4", "train.py", "--lr", "3e-4"]),
        ("a\tb\r\nc", ["a", "b", "\n", "c"]),
        ("echo $HOME ${X:-1} a>b", ["echo", "$HOME", "${X:-1}", "a>b"]),
        ("echo \"$(date +%s)\" 'x y' a\\ b # note", ["echo", "$(date +%s)", "x y", "a b"]),
        ("a && b; c | d", ["a", "&&", "b", ";", "c", "|", "d"]),
        ("echo 'unbalanced", ["echo", "'unbalanced"]),
    ],
)
def test_words_as_the_shell_reads_them(script: str, expected: list[str]) -> None:
    assert shell.words(script) == expected == shell.scanned(script)


def test_a_script_is_plain_exactly_when_every_character_is_printable_ascii_but_a_special_one() -> None:
    """The one character class that tells a plain script (`_NOT_PLAIN`) against its definition: a blank the
    shell splits at, or printable ASCII other than the quotes, escapes, comment and operators."""
    plain = set(" \t\r") | {chr(c) for c in range(0x21, 0x7F)} - set("'\"\\`#;&|()")
    told = shell._NOT_PLAIN.search
    wrong = [hex(c) for c in range(0x110000) if (told(chr(c)) is None) != (chr(c) in plain)]
    assert wrong == []
