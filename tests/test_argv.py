from __future__ import annotations

from typing import Any

import pytest

from kubegap.facts import argv
from kubegap.facts.argv import CommandLine, tokenize
from kubegap.fieldpath import FieldPath


def words(container: dict[str, Any]) -> list[str]:
    return [t.text for t in tokenize(container).tokens]


def flag(cmd: CommandLine, name: str) -> str | None:
    """The value of the last occurrence of a flag; KeyError when it is absent."""
    found = cmd.flag_values(frozenset({name}))
    if not found:
        raise KeyError(name)
    return found[-1][1]


# (case, container, the tokens it yields)
TOKENS: list[tuple[str, dict[str, Any], list[str]]] = [
    (
        "command and args",
        {"command": ["torchrun"], "args": ["train.py", "--lr", "3e-4"]},
        ["torchrun", "train.py", "--lr", "3e-4"],
    ),
    (
        "numbers become words, junk does not",
        {"args": ["--steps", 500, 1.5, True, None, {"a": 1}]},
        ["--steps", "500", "1.5"],
    ),
    ("no command at all", {}, []),
    ("command not a list", {"command": "torchrun train.py", "args": "x"}, []),
    (
        "bash -c script",
        {"command": ["bash", "-c"], "args": ["torchrun train.py --save-interval 500"]},
        ["bash", "-c", "torchrun", "train.py", "--save-interval", "500"],
    ),
    (
        "sh -c in one command list",
        {"command": ["/bin/sh", "-c", "python t.py"]},
        ["/bin/sh", "-c", "python", "t.py"],
    ),
    ("bash -lc", {"command": ["bash", "-lc", "python t.py"]}, ["bash", "-lc", "python", "t.py"]),
    ("bash -ec", {"command": ["/usr/bin/bash", "-ec", "a b"]}, ["/usr/bin/bash", "-ec", "a", "b"]),
    ("bash -e -c", {"command": ["bash", "-e", "-c", "a b"]}, ["bash", "-e", "-c", "a", "b"]),
    ("bash --login -c", {"command": ["bash", "--login", "-c", "a b"]}, ["bash", "--login", "-c", "a", "b"]),
    (
        "python -c is not a shell",
        {"command": ["python", "-c", "import x; x.run()"]},
        ["python", "-c", "import x; x.run()"],
    ),
    (
        "a script file is not a script",
        {"command": ["bash", "run.sh", "-c", "a b"]},
        ["bash", "run.sh", "-c", "a b"],
    ),
    (
        "double quotes",
        {"command": ["sh", "-c", "python t.py --name \"my run\" --x='a b'"]},
        ["sh", "-c", "python", "t.py", "--name", "my run", "--x=a b"],
    ),
    (
        "escapes in double quotes",
        {"command": ["sh", "-c", r'echo "a\"b" "\$HOME" "c\d"']},
        ["sh", "-c", "echo", 'a"b', "$HOME", r"c\d"],
    ),
    ("escaped space", {"command": ["sh", "-c", r"echo a\ b"]}, ["sh", "-c", "echo", "a b"]),
    (
        "operators split words",
        {"command": ["sh", "-c", "a&&b;c||d|e&f"]},
        ["sh", "-c", "a", "b", "c", "d", "e", "f"],
    ),
    (
        "comment to the end of the line",
        {"command": ["sh", "-c", "run --a 1 # --b 2\nrun --c 3"]},
        ["sh", "-c", "run", "--a", "1", "run", "--c", "3"],
    ),
    (
        "a # inside a word is no comment",
        {"command": ["sh", "-c", "run --name=exp#1 --save-interval 500"]},
        ["sh", "-c", "run", "--name=exp#1", "--save-interval", "500"],
    ),
    (
        "line continuations",
        {"command": ["bash", "-c", "torchrun \\\n  --nnodes 2 \\\n  train.py"]},
        ["bash", "-c", "torchrun", "--nnodes", "2", "train.py"],
    ),
    (
        "continuation inside a word joins it",
        {"command": ["bash", "-c", "tra\\\nin.py"]},
        ["bash", "-c", "train.py"],
    ),
    (
        "quoted text across lines",
        {"command": ["bash", "-c", 'python -c "\nimport os\n"\nrun']},
        ["bash", "-c", "python", "-c", "\nimport os\n", "run"],
    ),
    (
        "a command substitution is one word: its spaces and parentheses end nothing",
        {
            "command": [
                "bash",
                "-c",
                "mpirun -np $(( N * 8 )) -x A=1 -H $(cat /etc/hosts | wc -l) `hostname -s` p",
            ]
        },
        [
            "bash",
            "-c",
            "mpirun",
            "-np",
            "$(( N * 8 ))",
            "-x",
            "A=1",
            "-H",
            "$(cat /etc/hosts | wc -l)",
            "`hostname -s`",
            "p",
        ],
    ),
    (
        "a dollar that starts no substitution stays in its word",
        {"command": ["bash", "-c", "echo $HOME a$ ${X:-y} $((1+$(nproc)))"]},
        ["bash", "-c", "echo", "$HOME", "a$", "${X:-y}", "$((1+$(nproc)))"],
    ),
    (
        "unbalanced quote keeps the words",
        {"command": ["bash", "-c", 'echo "open --save-interval 500']},
        ["bash", "-c", "echo", '"open', "--save-interval", "500"],
    ),
]


@pytest.mark.parametrize(("case", "container", "expected"), TOKENS, ids=[t[0] for t in TOKENS])
def test_tokens(case: str, container: dict[str, Any], expected: list[str]) -> None:
    assert words(container) == expected


def test_token_paths_point_at_the_element_they_came_from() -> None:
    cmd = tokenize({"command": ["bash", "-c"], "args": ["torchrun t.py --save-interval 500", "--extra", "1"]})
    paths: list[tuple[str, FieldPath]] = [(t.text, t.path) for t in cmd.tokens]
    assert paths == [
        ("bash", ("command", 0)),
        ("-c", ("command", 1)),
        ("torchrun", ("args", 0)),
        ("t.py", ("args", 0)),
        ("--save-interval", ("args", 0)),
        ("500", ("args", 0)),
        ("--extra", ("args", 1)),
        ("1", ("args", 2)),
    ]


def test_skipped_junk_keeps_the_indexes_of_the_rest() -> None:
    cmd = tokenize({"args": [None, "--a", True, "1"]})
    assert [(t.text, t.path) for t in cmd.tokens] == [("--a", ("args", 1)), ("1", ("args", 3))]


# (case, args, flag, value): `--flag value`, `--flag=value`, dotted flags; the last occurrence wins.
FLAGS: list[tuple[str, list[Any], str, str | None]] = [
    ("space", ["--save-interval", "500"], "--save-interval", "500"),
    ("equals", ["--save-interval=500"], "--save-interval", "500"),
    ("equals, empty value", ["--save-interval="], "--save-interval", ""),
    ("value holding =", ["--env=A=B"], "--env", "A=B"),
    ("dotted", ["--checkpoint.interval", "100"], "--checkpoint.interval", "100"),
    ("dotted with equals", ["--comm.train_timeout_seconds=300"], "--comm.train_timeout_seconds", "300"),
    ("negative value", ["--offset", "-1"], "--offset", "-1"),
    ("followed by another flag", ["--bf16", "--lr", "1"], "--bf16", None),
    ("at the end", ["train.py", "--bf16"], "--bf16", None),
    ("last wins", ["--save-interval", "100", "--x", "--save-interval=200"], "--save-interval", "200"),
    ("last wins across command and args", ["--save-interval", "300"], "--save-interval", "300"),
    ("single dash", ["-n", "4"], "-n", "4"),
]


@pytest.mark.parametrize(("case", "args", "name", "value"), FLAGS, ids=[f[0] for f in FLAGS])
def test_flag_values(case: str, args: list[Any], name: str, value: str | None) -> None:
    cmd = tokenize({"command": ["torchrun", "--save-interval=1"], "args": args})
    assert flag(cmd, name) == value


def test_flag_values_are_in_command_line_order_across_names() -> None:
    cmd = tokenize({"args": ["--save-steps", "5", "--save_steps", "7", "--save-steps=9"]})
    found = cmd.flag_values(frozenset({"--save_steps", "--save-steps"}))
    assert [(name, value) for name, value, _ in found] == [
        ("--save-steps", "5"),
        ("--save_steps", "7"),
        ("--save-steps", "9"),
    ]
    assert [t.path for _, _, t in found] == [("args", 0), ("args", 2), ("args", 4)]


def test_absent_flag() -> None:
    assert tokenize({"args": ["--a", "1"]}).flag_values(frozenset({"--b"})) == []


def test_flags_inside_a_script_point_at_the_script() -> None:
    cmd = tokenize({"command": ["bash", "-c", "cd /w && torchrun train.py --save-interval 500"]})
    ((name, value, token),) = cmd.flag_values(frozenset({"--save-interval"}))
    assert (name, value, token.path) == ("--save-interval", "500", ("command", 2))


# (case, args, expected (key, value) overrides)
OVERRIDES: list[tuple[str, list[str], list[tuple[str, str]]]] = [
    ("hydra dotted", ["trainer.max_steps=100"], [("trainer.max_steps", "100")]),
    ("plain key", ["checkpoint_period=1000"], [("checkpoint_period", "1000")]),
    ("append", ["+exp.x=1"], [("exp.x", "1")]),
    ("force", ["++exp.x=2"], [("exp.x", "2")]),
    (
        "hms value",
        ["exp_manager.checkpoint_callback_params.train_time_interval=00:10:00"],
        [("exp_manager.checkpoint_callback_params.train_time_interval", "00:10:00")],
    ),
    ("flags are not overrides", ["--lr=1", "-x=2"], []),
    ("deletion without value", ["~trainer.logger"], []),
    ("not a key", ["3=4", "=x", "a b=c"], []),
    ("order kept", ["a=1", "b=2", "a=3"], [("a", "1"), ("b", "2"), ("a", "3")]),
]


@pytest.mark.parametrize(("case", "args", "expected"), OVERRIDES, ids=[o[0] for o in OVERRIDES])
def test_overrides(case: str, args: list[str], expected: list[tuple[str, str]]) -> None:
    cmd = tokenize({"command": ["python", "train.py"], "args": args})
    assert [(key, value) for key, value, _ in cmd.overrides] == expected


def test_override_token_path() -> None:
    cmd = tokenize({"command": ["python", "train.py"], "args": ["x=1", "checkpoint_period=1000"]})
    assert [token.path for _, _, token in cmd.overrides] == [("args", 0), ("args", 1)]


# (case, script, expected (name, value, how) assignments)
SCRIPT_ENV: list[tuple[str, str, list[tuple[str, str, str]]]] = [
    ("export one", "export A=1", [("A", "1", "export")]),
    ("export several", "export A=1 B=2", [("A", "1", "export"), ("B", "2", "export")]),
    ("export quoted", "export A='x y' B=\"z\"", [("A", "x y", "export"), ("B", "z", "export")]),
    ("export after &&", "cd /w && export A=1", [("A", "1", "export")]),
    ("export after ;", "echo hi; export A=1", [("A", "1", "export")]),
    ("export on a later line", "echo hi\nexport A=1\ntorchrun t.py", [("A", "1", "export")]),
    ("export name only", "export A", []),
    ("export -n option", "export -n A=1", [("A", "1", "export")]),
    ("prefix", "A=1 torchrun t.py", [("A", "1", "prefix")]),
    ("two prefixes", "A=1 B=2 torchrun t.py", [("A", "1", "prefix"), ("B", "2", "prefix")]),
    ("prefix after operator", "cd /w && A=1 run", [("A", "1", "prefix")]),
    ("prefix across continuation", "A=1 \\\nB=2 run", [("A", "1", "prefix"), ("B", "2", "prefix")]),
    ("argument is not an assignment", "run A=1", []),
    ("export is an argument", "echo export A=1", []),
    ("empty value", "export A=", [("A", "", "export")]),
    ("value with =", "export OPTS=a=b", [("OPTS", "a=b", "export")]),
    ("commented out", "# export A=1\nrun", []),
    ("in order, last later", "export A=1; export A=2", [("A", "1", "export"), ("A", "2", "export")]),
]


@pytest.mark.parametrize(("case", "script", "expected"), SCRIPT_ENV, ids=[s[0] for s in SCRIPT_ENV])
def test_script_env(case: str, script: str, expected: list[tuple[str, str, str]]) -> None:
    cmd = tokenize({"command": ["bash", "-c", script]})
    assert [(a.name, a.value, a.how) for a in cmd.env] == expected
    assert all(a.path == ("command", 2) for a in cmd.env)


def test_assignments_outside_a_script_are_arguments() -> None:
    assert tokenize({"command": ["env", "A=1", "torchrun"], "args": ["export", "B=2"]}).env == ()


# (case, command line, expected (name, value) forwards)
MPIRUN: list[tuple[str, str, list[tuple[str, str | None]]]] = [
    ("value", "mpirun -x NCCL_DEBUG=INFO python t.py", [("NCCL_DEBUG", "INFO")]),
    ("name only", "mpirun -x LD_LIBRARY_PATH python t.py", [("LD_LIBRARY_PATH", None)]),
    ("several", "mpirun -np 16 -x A=1 -x B python t.py", [("A", "1"), ("B", None)]),
    ("mpiexec", "mpiexec -x A=1 t", [("A", "1")]),
    ("full path", "/opt/openmpi/bin/mpirun -x A=1 t", [("A", "1")]),
    ("empty value", "mpirun -x A= t", [("A", "")]),
    ("not after mpirun", "python -x A=1 t.py", []),
    ("not a name", "mpirun -x 1A=2 -x =3 t", []),
    ("-x at the end", "mpirun -np 2 -x", []),
]


@pytest.mark.parametrize(("case", "line", "expected"), MPIRUN, ids=[m[0] for m in MPIRUN])
def test_mpirun_forwards(case: str, line: str, expected: list[tuple[str, str | None]]) -> None:
    for container in ({"command": ["bash", "-c", line]}, {"command": line.split()}):
        cmd = tokenize(container)
        assert [(a.name, a.value) for a in cmd.forwarded] == expected
        assert all(a.how == "mpirun -x" for a in cmd.forwarded)


def test_mpirun_forward_paths() -> None:
    cmd = tokenize({"command": ["mpirun", "-x", "A=1"], "args": ["-x", "B", "python"]})
    assert [(a.name, a.path) for a in cmd.forwarded] == [("A", ("command", 1)), ("B", ("args", 0))]


@pytest.mark.parametrize(
    ("line", "forwarded"),
    [
        ("mpirun -np 16 -x A=1 python t.py -x B=2", ["A"]),
        ("mpirun --mca btl tcp -x A=1 --allow-run-as-root -x C python t.py", ["A", "C"]),
        ("mpirun -np=4 -x A python t.py", ["A"]),
        ("python t.py -x A=1", []),
    ],
)
def test_mpirun_options_end_at_the_program(line: str, forwarded: list[str]) -> None:
    cmd = tokenize({"command": ["bash", "-c", line]})
    assert [a.name for a in cmd.forwarded] == forwarded


@pytest.mark.parametrize(
    ("script", "sourced"),
    [
        (
            "source /usr/local/gib/scripts/set_nccl_env.sh && torchrun t.py",
            ("/usr/local/gib/scripts/set_nccl_env.sh",),
        ),
        ("set -e\n. ./env.sh; python t.py", ("./env.sh",)),
        ("echo source x; python t.py --from . ", ()),  # only a command that sources, not a word
    ],
)
def test_a_script_that_sources_a_file_says_so(script: str, sourced: tuple[str, ...]) -> None:
    assert tokenize({"command": ["bash", "-c", script]}).sourced == sourced


def test_equal_command_lines_are_tokenised_once_and_shared_read_only() -> None:
    spec = {
        "command": ["bash", "-c"],
        "args": ["export NCCL_DEBUG=WARN; torchrun --nnodes 2 train.py --lr 1"],
    }
    first = argv.tokenize(spec)
    again = argv.tokenize({"command": list(spec["command"]), "args": list(spec["args"])})
    assert again is first  # cached by content, not by the container object
    assert [t.text for t in first.tokens][-2:] == ["--lr", "1"]
    with pytest.raises(TypeError):
        first.flags["--lr"] = ()  # type: ignore[index]  # a shared result cannot be changed by one reader
    other = argv.tokenize({"command": ["bash", "-c"], "args": ["torchrun train.py --lr 2"]})
    assert other is not first and [t.text for t in other.tokens][-1] == "2"


def test_the_tokeniser_cache_is_bounded() -> None:
    limit = argv._parse.cache_info().maxsize
    assert limit is not None
    for index in range(limit + 10):
        argv.tokenize({"command": ["python", "train.py", f"--seed={index}"]})
    assert argv._parse.cache_info().currsize <= limit


def test_a_long_script_is_tokenised_each_time_and_never_kept() -> None:
    # the cache is bounded in entries; a webhook may be sent megabytes of script, so those are not kept
    script = "export NCCL_DEBUG=WARN; " + "echo padding; " * 400 + "torchrun train.py --lr 1"
    spec = {"command": ["bash", "-c"], "args": [script]}
    kept = argv._parse.cache_info().currsize
    first = argv.tokenize(spec)
    assert argv.tokenize(spec) is not first
    assert argv._parse.cache_info().currsize == kept
    assert [t.text for t in first.tokens][-2:] == ["--lr", "1"]
