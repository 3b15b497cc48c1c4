from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from kubegap.config import Settings, load_config, parse_set
from kubegap.errors import PolicyError, UsageError
from kubegap.findings import Severity
from kubegap.options import add_engine_arguments, settings_from_args

HEADER = "apiVersion: kubegap.dev/v1alpha1\nkind: Config\n"


def write(tmp_path: Path, body: str, name: str = "kubegap.yaml") -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + body)
    return path


def test_no_config_file_gives_defaults() -> None:
    settings = load_config(None)
    assert settings == Settings()
    assert settings.fail_on is Severity.HIGH
    assert settings.cel_backend == "auto"


def test_every_field_is_read(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
policies: [nccl-timeout, checkpoint-interval]
skip: [health-probes]
params:
  nccl-timeout: {maxCollectiveTimeout: 20m}
  gpu-nic-topology: {nicResources: ["rdma/*"]}
policyDirs: [mine]
knobFiles: [/abs/knobs.yaml]
failOn: medium
celBackend: cel-python
webhook: {failurePolicy: Ignore}
audit: {resolveConfigMaps: true}
""",
    )
    settings = load_config(str(path))
    assert settings.select == ("nccl-timeout", "checkpoint-interval")
    assert settings.skip == ("health-probes",)
    assert settings.params == {
        "nccl-timeout": {"maxCollectiveTimeout": "20m"},
        "gpu-nic-topology": {"nicResources": ["rdma/*"]},
    }
    assert settings.fail_on is Severity.MEDIUM
    assert settings.cel_backend == "cel-python"
    assert settings.webhook == {"failurePolicy": "Ignore"}
    assert settings.audit == {"resolveConfigMaps": True}
    assert settings.knob_files == ("/abs/knobs.yaml",)
    assert settings.policy_dirs == (str(tmp_path / "mine"),)


def test_relative_paths_are_relative_to_the_config_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path / "conf", "policyDirs: [../rules, local]\nknobFiles: [k/knobs.yaml]\n")
    monkeypatch.chdir(tmp_path)
    settings = load_config("conf/kubegap.yaml")
    assert [Path(p).resolve() for p in settings.policy_dirs] == [
        tmp_path / "rules",
        tmp_path / "conf" / "local",
    ]
    assert [Path(p).resolve() for p in settings.knob_files] == [tmp_path / "conf" / "k" / "knobs.yaml"]
    assert path.is_file()


def test_missing_config_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such config file"):
        load_config(str(tmp_path / "nope.yaml"))


@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        ("failOn: urgent\n", "/failOn"),
        ("celBackend: fast\n", "/celBackend"),
        ("policies: [Not_An_Id]\n", "/policies/0"),
        ("param: {}\n", "/"),  # misspelt key
        ("params: {nccl-timeout: 20m}\n", "/params/nccl-timeout"),
        ("policyDirs: mine\n", "/policyDirs"),
    ],
)
def test_schema_errors_name_file_and_pointer(tmp_path: Path, body: str, pointer: str) -> None:
    path = write(tmp_path, body)
    with pytest.raises(PolicyError) as caught:
        load_config(str(path))
    message = str(caught.value)
    assert message.startswith(f"{path}: not a valid config file")
    assert f"\n  {pointer}: " in message, message


def test_not_yaml_is_a_policy_error(tmp_path: Path) -> None:
    path = tmp_path / "kubegap.yaml"
    path.write_text("a: [\n")
    with pytest.raises(PolicyError, match="not valid YAML"):
        load_config(str(path))


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        ([], {}),
        (["nccl-timeout.maxCollectiveTimeout=20m"], {"nccl-timeout": {"maxCollectiveTimeout": "20m"}}),
        (
            ["a.x=1", "a.y=2", "b.z=3", "a.x=4"],  # the last --set of a param wins
            {"a": {"x": "4", "y": "2"}, "b": {"z": "3"}},
        ),
        (["p.list=a,b=c"], {"p": {"list": "a,b=c"}}),  # the value may hold `=`
        (["p.v="], {"p": {"v": ""}}),
        (["with.dots.param=1"], {"with.dots": {"param": "1"}}),
    ],
)
def test_parse_set(items: list[str], expected: dict[str, Any]) -> None:
    assert parse_set(items) == expected


@pytest.mark.parametrize("item", ["nccl-timeout", "maxCollectiveTimeout=20m", ".x=1", "p.=1", "=1"])
def test_parse_set_rejects(item: str) -> None:
    with pytest.raises(UsageError, match=r"expected POLICY\.PARAM=VALUE"):
        parse_set([item])


def test_a_map_parameter_is_read_from_the_config_file(tmp_path: Path) -> None:
    path = write(tmp_path, "params: {gpu-nic-rails: {railsPerNode: {p5.48xlarge: 32, 8: 8}}}\n")
    assert load_config(str(path)).params == {"gpu-nic-rails": {"railsPerNode": {"p5.48xlarge": 32, 8: 8}}}


def test_with_params_merges_without_touching_the_original() -> None:
    base = Settings(params={"a": {"x": "1", "y": "2"}})
    merged = base.with_params({"a": {"x": "9"}, "b": {"z": "3"}})
    assert merged.params == {"a": {"x": "9", "y": "2"}, "b": {"z": "3"}}
    assert base.params == {"a": {"x": "1", "y": "2"}}


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_engine_arguments(parser)
    return parser.parse_args(argv)


def test_command_line_goes_on_top_of_the_config_file(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "policies: [restart-budget]\nskip: [gpu-node-health]\nfailOn: low\ncelBackend: cel-expr\n"
        "params: {nccl-timeout: {maxCollectiveTimeout: 25m, maxHeartbeatTimeout: 5m}}\npolicyDirs: [mine]\n",
    )
    args = parse_args(
        [
            "--config",
            str(path),
            "--policy",
            "nccl-timeout",
            "--skip",
            "health-probes",
            "--set",
            "nccl-timeout.maxCollectiveTimeout=20m",
            "--fail-on",
            "critical",
            "--cel-backend",
            "cel-python",
            "--policies",
            "more",
            "--knobs",
            "k.yaml",
        ]
    )
    settings = settings_from_args(args)
    assert settings.select == ("nccl-timeout",)  # --policy replaces the file's list
    assert settings.skip == ("gpu-node-health", "health-probes")  # --skip adds to it
    assert settings.params == {"nccl-timeout": {"maxCollectiveTimeout": "20m", "maxHeartbeatTimeout": "5m"}}
    assert settings.fail_on is Severity.CRITICAL
    assert settings.cel_backend == "cel-python"
    assert settings.policy_dirs == (str(tmp_path / "mine"), "more")
    assert settings.knob_files == ("k.yaml",)


def test_config_file_values_stand_when_the_command_line_is_silent(tmp_path: Path) -> None:
    path = write(tmp_path, "policies: [restart-budget]\nfailOn: low\ncelBackend: cel-expr\n")
    settings = settings_from_args(parse_args(["--config", str(path)]))
    assert settings.select == ("restart-budget",)
    assert settings.fail_on is Severity.LOW
    assert settings.cel_backend == "cel-expr"


def test_fail_on_must_be_a_severity() -> None:
    with pytest.raises(SystemExit):
        parse_args(["--fail-on", "urgent"])
