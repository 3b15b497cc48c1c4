"""The knob catalogue, one row per knob form, read through `facts.gather` as the policies see it."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from kubegap import facts, globs
from kubegap.errors import PolicyError
from kubegap.facts import ObjectFacts, knobs, model
from kubegap.kinds import workload_of

CATALOGUE = knobs.load()
CONTAINER_PATH = "spec.template.spec.containers[0]"


def job(
    container: dict[str, Any],
    annotations: dict[str, str] | None = None,
    template_annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A two-pod batch Job whose one container has 8 GPUs: distributed training."""
    main = {
        "name": "trainer",
        "image": "trainer:1",
        "resources": {"limits": {"nvidia.com/gpu": 8}},
        **container,
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "ml", "annotations": annotations or {}},
        "spec": {
            "parallelism": 2,
            "template": {
                "metadata": {"annotations": template_annotations or {}},
                "spec": {"containers": [main]},
            },
        },
    }


def gather(obj: dict[str, Any], catalogue: knobs.Catalogue = CATALOGUE) -> ObjectFacts:
    workload = workload_of(obj)
    assert workload is not None
    return facts.gather(obj, workload, catalogue, {})


def container_facts(obj: dict[str, Any], catalogue: knobs.Catalogue = CATALOGUE) -> dict[str, Any]:
    units = gather(obj, catalogue).units["container"]
    found: dict[str, Any] = units[0].bindings["container"]
    return found


def bash(script: str) -> dict[str, Any]:
    return {"command": ["bash", "-c"], "args": [script]}


def env(**values: str) -> dict[str, Any]:
    return {"env": [{"name": k, "value": v} for k, v in values.items()]}


# (case, container, seconds, source it names, path it points at)
TIMEOUTS: list[tuple[str, dict[str, Any], float, str, str]] = [
    (
        "Megatron minutes",
        {"args": ["pretrain_gpt.py", "--distributed-timeout-minutes", "20"]},
        1200.0,
        "--distributed-timeout-minutes 20 (Megatron-LM)",
        "args[1]",
    ),
    (
        "Megatron minutes with =",
        {"args": ["--distributed-timeout-minutes=15"]},
        900.0,
        "--distributed-timeout-minutes 15",
        "args[0]",
    ),
    ("HF seconds", {"args": ["--ddp_timeout", "1800"]}, 1800.0, "--ddp_timeout 1800 (HF Trainer)", "args[0]"),
    ("HF dashed", {"args": ["--ddp-timeout=600"]}, 600.0, "--ddp-timeout 600", "args[0]"),
    (
        "torchtitan seconds",
        {"args": ["--comm.train_timeout_seconds", "300"]},
        300.0,
        "--comm.train_timeout_seconds 300 (torchtitan)",
        "args[0]",
    ),
    (
        "DeepSpeed minutes from env",
        env(DEEPSPEED_TIMEOUT="20"),
        1200.0,
        "DEEPSPEED_TIMEOUT=20 (env)",
        "env[0]",
    ),
    (
        "DeepSpeed exported in a script",
        bash("export DEEPSPEED_TIMEOUT=15 && deepspeed train.py"),
        900.0,
        "DEEPSPEED_TIMEOUT=15 (export)",
        "args[0]",
    ),
    (
        "DeepSpeed as a command prefix",
        bash("DEEPSPEED_TIMEOUT=45 deepspeed train.py"),
        2700.0,
        "DEEPSPEED_TIMEOUT=45 (prefix)",
        "args[0]",
    ),
    (
        "Lightning override in seconds",
        {"args": ["trainer.strategy.init_args.timeout=1800"]},
        1800.0,
        "trainer.strategy.init_args.timeout=1800 (Lightning)",
        "args[0]",
    ),
    (
        "Lightning flag as H:MM:SS",
        {"args": ["--trainer.strategy.init_args.timeout", "0:20:00"]},
        1200.0,
        "--trainer.strategy.init_args.timeout 0:20:00",
        "args[0]",
    ),
    ("Lightning duration", {"args": ["--trainer.strategy.init_args.timeout=25m"]}, 1500.0, "25m", "args[0]"),
    (
        "flag inside bash -c torchrun",
        bash("cd /w && torchrun --nproc_per_node 8 train.py --ddp_timeout 900"),
        900.0,
        "--ddp_timeout 900",
        "args[0]",
    ),
    (
        "last occurrence wins",
        {"args": ["--ddp_timeout", "7200", "--ddp_timeout", "600"]},
        600.0,
        "600",
        "args[2]",
    ),
    (
        "the longest of several knobs counts",
        {"args": ["--ddp_timeout", "600"], **env(DEEPSPEED_TIMEOUT="60")},
        3600.0,
        "DEEPSPEED_TIMEOUT=60",
        "env[0]",
    ),
    (
        "$VAR from env",
        {"args": ["--ddp_timeout", "$T"], **env(T="900")},
        900.0,
        "--ddp_timeout $T",
        "args[0]",
    ),
    ("${VAR} from env", {"args": ["--ddp_timeout=${T}"], **env(T="901")}, 901.0, "${T}", "args[0]"),
    ("$(VAR) from env", {"args": ["--ddp_timeout", "$(T)"], **env(T="902")}, 902.0, "$(T)", "args[0]"),
    ("$VAR from a script export", bash("export T=903; python t.py --ddp_timeout $T"), 903.0, "$T", "args[0]"),
]


@pytest.mark.parametrize(
    ("case", "container", "seconds", "source", "path"), TIMEOUTS, ids=[t[0] for t in TIMEOUTS]
)
def test_collective_timeout(
    case: str, container: dict[str, Any], seconds: float, source: str, path: str
) -> None:
    found = container_facts(job(container))["collectiveTimeout"]
    assert found["seconds"] == pytest.approx(seconds)
    assert source in found["source"]
    assert found["path"] == f"{CONTAINER_PATH}.{path}"


@pytest.mark.parametrize(
    ("case", "annotations", "template_annotations", "seconds", "where"),
    [
        ("workload", {"kubegap.dev/collective-timeout": "20m"}, {}, 1200.0, "metadata"),
        ("template", {}, {"kubegap.dev/collective-timeout": "1h"}, 3600.0, "spec.template.metadata"),
        (
            "template before workload",
            {"kubegap.dev/collective-timeout": "50m"},
            {"kubegap.dev/collective-timeout": "5m"},
            300.0,
            "spec.template.metadata",
        ),
    ],
)
def test_collective_timeout_declaration(
    case: str, annotations: dict[str, str], template_annotations: dict[str, str], seconds: float, where: str
) -> None:
    found = container_facts(job({}, annotations, template_annotations))["collectiveTimeout"]
    assert found["seconds"] == seconds
    assert found["path"] == f"{where}.annotations['kubegap.dev/collective-timeout']"
    assert found["source"].startswith("kubegap.dev/collective-timeout: ")


def test_declaration_and_knob_take_the_longest() -> None:
    found = container_facts(
        job({"args": ["--ddp_timeout", "600"]}, {"kubegap.dev/collective-timeout": "45m"})
    )
    assert found["collectiveTimeout"]["seconds"] == 2700.0


def test_the_longest_of_several_values_is_the_first_of_equals() -> None:
    found = [(60.0, "a", ("x",)), (600.0, "b", ("y",)), (30.0, "c", ("z",)), (600.0, "d", ("w",))]
    assert model.longest(found) == model.seconds(600.0, "b", ("y",))
    assert model.longest(found[:1]) == model.seconds(60.0, "a", ("x",))
    assert model.longest([]) is None


# (case, container, what `unresolved` must mention)
NO_TIMEOUT: list[tuple[str, dict[str, Any], list[str]]] = [
    ("nothing set", {"args": ["train.py"]}, []),
    ("NCCL_TIMEOUT is a placebo", env(NCCL_TIMEOUT="1800"), []),
    ("NCCL_IB_TIMEOUT is a transport setting", env(NCCL_IB_TIMEOUT="22"), []),
    (
        "value from a Secret",
        {
            "env": [
                {"name": "DEEPSPEED_TIMEOUT", "valueFrom": {"secretKeyRef": {"name": "tuning", "key": "t"}}}
            ]
        },
        ["env DEEPSPEED_TIMEOUT from Secret tuning"],
    ),
    (
        "flag value from a Secret variable",
        {
            "args": ["--ddp_timeout", "$(T)"],
            "env": [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "s", "key": "t"}}}],
        },
        ["env T from Secret s", "--ddp_timeout $(T) (HF Trainer): its value cannot be seen"],
    ),
    ("undefined variable", {"args": ["--ddp_timeout", "$NOPE"]}, ["--ddp_timeout $NOPE (HF Trainer)"]),
    ("duration where seconds are read", {"args": ["--ddp_timeout", "30m"]}, ["--ddp_timeout 30m"]),
    (
        "negative minutes",
        {"args": ["--distributed-timeout-minutes", "-1"]},
        ["--distributed-timeout-minutes -1"],
    ),
    (
        "flag without value",
        {"args": ["--ddp_timeout"]},
        ["--ddp_timeout (HF Trainer): its value cannot be seen"],
    ),
]


@pytest.mark.parametrize(("case", "container", "mentions"), NO_TIMEOUT, ids=[n[0] for n in NO_TIMEOUT])
def test_no_collective_timeout(case: str, container: dict[str, Any], mentions: list[str]) -> None:
    found = container_facts(job(container))
    assert "collectiveTimeout" not in found
    for text in mentions:
        assert any(text in u for u in found["unresolved"]), found["unresolved"]
    assert found["unresolvedText"] == "; ".join(found["unresolved"])
    if not mentions:
        assert found["unresolved"] == []


# (case, container, expected facts.checkpoint without unresolvedText)
CHECKPOINTS: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("Megatron save interval with =", {"args": ["--save-interval=500", "--save=/ckpt"]}, {"steps": 500}),
    (
        "Megatron save interval inside bash -c torchrun",
        bash("torchrun --nnodes 2 pretrain_gpt.py --save-interval 500 --save /ckpt"),
        {"steps": 500},
    ),
    (
        "Megatron persistent save interval",
        {"args": ["--persistent-save-interval", "1000", "--save", "/ckpt"]},
        {"steps": 1000},
    ),
    (
        "NeMo time interval",
        {"args": ["exp_manager.checkpoint_callback_params.train_time_interval=00:10:00"]},
        {"interval": 600.0},
    ),
    (
        "NeMo time interval appended",
        {"args": ["+exp_manager.checkpoint_callback_params.train_time_interval=00:30:00"]},
        {"interval": 1800.0},
    ),
    ("Lightning time interval", {"args": ["train_time_interval=0:05:00"]}, {"interval": 300.0}),
    ("time interval as a Go duration", {"args": ["--train_time_interval", "15m"]}, {"interval": 900.0}),
    (
        "NeMo step interval",
        {"args": ["exp_manager.checkpoint_callback_params.every_n_train_steps=200"]},
        {"steps": 200},
    ),
    ("HF save steps, strategy unset", {"args": ["--save_steps", "500"]}, {"steps": 500}),
    ("HF save steps, dashed", {"args": ["--save-steps=300"]}, {"steps": 300}),
    (
        "HF save steps, strategy steps",
        {"args": ["--save_strategy", "steps", "--save_steps", "400"]},
        {"steps": 400},
    ),
    (
        "HF save steps, strategy STEPS",
        {"args": ["--save_strategy=STEPS", "--save_steps", "400"]},
        {"steps": 400},
    ),
    (
        "HF save steps ignored for epoch strategy",
        {"args": ["--save_strategy", "epoch", "--save_steps", "500"]},
        {},
    ),
    (
        "HF save steps ignored for best strategy",
        {"args": ["--save_steps", "500", "--save_strategy=best"]},
        {},
    ),
    ("HF strategy no", {"args": ["--save_strategy", "no"]}, {"disabled": "--save_strategy no (HF Trainer)"}),
    ("HF strategy =no", {"args": ["--save_strategy=no"]}, {"disabled": "--save_strategy no (HF Trainer)"}),
    ("HF strategy NO", {"args": ["--save-strategy", "NO"]}, {"disabled": "--save-strategy NO (HF Trainer)"}),
    (
        "MaxText disabled",
        {"args": ["enable_checkpointing=False"]},
        {"disabled": "enable_checkpointing=False (MaxText)"},
    ),
    (
        "MaxText disabled, lower case",
        {"args": ["enable_checkpointing=false"]},
        {"disabled": "enable_checkpointing=false"},
    ),
    ("MaxText enabled", {"args": ["enable_checkpointing=True"]}, {}),
    ("MaxText period", {"args": ["checkpoint_period=1000"]}, {"steps": 1000}),
    (
        "MaxText disabled with a period",
        {"args": ["enable_checkpointing=False", "checkpoint_period=1000"]},
        {"disabled": "enable_checkpointing=False", "steps": 1000},
    ),
    (
        "torchtitan disabled",
        {"args": ["--checkpoint.enable_checkpoint", "false"]},
        {"disabled": "--checkpoint.enable_checkpoint false (torchtitan)"},
    ),
    ("torchtitan disabled with =", {"args": ["--checkpoint.enable_checkpoint=False"]}, {"disabled": "False"}),
    (
        "torchtitan switch without value",
        {"args": ["--checkpoint.enable_checkpoint", "--checkpoint.interval", "100"]},
        {"steps": 100},
    ),
    ("torchtitan interval", {"args": ["--checkpoint.interval", "250"]}, {"steps": 250}),
    ("Accelerate steps", {"args": ["--checkpointing_steps", "50"]}, {"steps": 50}),
    (
        "$VAR steps",
        {"args": ["--save-interval", "$SAVE", "--save", "/ckpt"], **env(SAVE="200")},
        {"steps": 200},
    ),
    ("zero steps are unreadable", {"args": ["--save-interval", "0", "--save", "/ckpt"]}, {}),
    ("epoch steps are unreadable", {"args": ["--checkpointing_steps", "epoch"]}, {}),
    ("nothing", {"args": ["train.py"]}, {}),
]


def checkpoint_view(found: dict[str, Any]) -> dict[str, Any]:
    view: dict[str, Any] = {}
    if "interval" in found:
        view["interval"] = found["interval"]["seconds"]
    if "steps" in found:
        view["steps"] = found["steps"]["steps"]
    if "disabled" in found:
        view["disabled"] = found["disabled"]["source"]
    return view


@pytest.mark.parametrize(("case", "container", "expected"), CHECKPOINTS, ids=[c[0] for c in CHECKPOINTS])
def test_checkpoint(case: str, container: dict[str, Any], expected: dict[str, Any]) -> None:
    view = checkpoint_view(gather(job(container)).facts["checkpoint"])
    if "disabled" in expected:
        assert expected.pop("disabled") in view.pop("disabled")
    assert view == expected


def test_checkpoint_paths_point_at_the_knob() -> None:
    found = gather(job(bash("torchrun pretrain_gpt.py --save-interval 500 --save /ckpt"))).facts["checkpoint"]
    assert found["steps"] == {
        "steps": 500,
        "source": "--save-interval 500 (Megatron-LM)",
        "path": f"{CONTAINER_PATH}.args[0]",
    }


@pytest.mark.parametrize(
    ("annotations", "template_annotations", "interval", "source"),
    [
        ({"kubegap.dev/step-time": "1.2s"}, {}, 600.0, "--save-interval 500 (Megatron-LM) at step time 1.2s"),
        ({}, {"kubegap.dev/step-time": "8.4s"}, 4200.0, "at step time 8.4s"),
        ({"kubegap.dev/step-time": "1m"}, {"kubegap.dev/step-time": "2s"}, 1000.0, "at step time 2s"),
    ],
)
def test_step_time_turns_steps_into_time(
    annotations: dict[str, str], template_annotations: dict[str, str], interval: float, source: str
) -> None:
    found = gather(
        job({"args": ["--save-interval", "500", "--save", "/ckpt"]}, annotations, template_annotations)
    ).facts["checkpoint"]
    assert found["interval"]["seconds"] == pytest.approx(interval)
    assert source in found["interval"]["source"]
    assert "steps" not in found


def test_checkpoint_interval_declaration() -> None:
    found = gather(job({}, {"kubegap.dev/checkpoint-interval": "5m"})).facts["checkpoint"]
    assert found["interval"] == {
        "seconds": 300.0,
        "text": "5m",
        "source": "kubegap.dev/checkpoint-interval: 5m",
        "path": "metadata.annotations['kubegap.dev/checkpoint-interval']",
    }


@pytest.mark.parametrize(
    ("annotation", "text"),
    [
        ("kubegap.dev/checkpoint-interval", "soon"),
        ("kubegap.dev/checkpoint-interval", "10"),
        ("kubegap.dev/step-time", "8.4"),
        ("kubegap.dev/collective-timeout", "-5m"),
    ],
)
def test_unparsable_declaration_is_absent_and_recorded(annotation: str, text: str) -> None:
    gathered = gather(job({"args": ["--save-interval", "500", "--save", "/ckpt"]}, {annotation: text}))
    assert "interval" not in gathered.facts["checkpoint"]
    assert "collectiveTimeout" not in gathered.units["container"][0].bindings["container"]
    (invalid,) = gathered.invalid
    assert (invalid.annotation, invalid.text) == (annotation, text)
    assert invalid.path == ("metadata", "annotations", annotation)
    assert invalid.reason


def test_template_declaration_shadows_the_workload_one_even_when_unparsable() -> None:
    gathered = gather(
        job({}, {"kubegap.dev/checkpoint-interval": "5m"}, {"kubegap.dev/checkpoint-interval": "often"})
    )
    assert "interval" not in gathered.facts["checkpoint"]
    assert [i.text for i in gathered.invalid] == ["often"]


def test_step_interval_without_step_time_keeps_the_steps() -> None:
    found = gather(job({"args": ["--save-interval", "500", "--save", "/ckpt"]})).facts["checkpoint"]
    assert "interval" not in found
    assert found["steps"]["steps"] == 500


def test_unreadable_checkpoint_knob_is_listed() -> None:
    found = gather(
        job(
            {
                "args": ["--save-interval", "$(EVERY)", "--save", "/ckpt"],
                "env": [{"name": "EVERY", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}],
            }
        )
    ).facts["checkpoint"]
    assert "steps" not in found
    assert "--save-interval $(EVERY) (Megatron-LM): its value cannot be seen" in found["unresolvedText"]


def test_user_knob_file_adds_a_flag_without_code(tmp_path: Path) -> None:
    path = tmp_path / "knobs.yaml"
    path.write_text(
        """\
apiVersion: kubegap.dev/v1alpha1
kind: KnobCatalogue
resources:
  accelerator: [example.com/npu]
frameworks:
  - {name: InHouse, defaultTimeout: 20m, tokens: [inhouse-launch]}
knobs:
  - {setting: checkpointSteps, framework: InHouse, flags: [--ckpt-every], unit: steps}
  - {setting: collectiveTimeout, framework: InHouse, env: [INHOUSE_COMM_TIMEOUT], unit: s}
  - {setting: checkpointDisabled, framework: InHouse, flags: [--ckpt], disabledBy: ["OFF"]}
"""
    )
    catalogue = knobs.load([str(path)])
    assert catalogue.is_accelerator("example.com/npu")
    assert not catalogue.is_gpu("example.com/npu")
    container = {"command": ["inhouse-launch", "--ckpt-every", "40"], **env(INHOUSE_COMM_TIMEOUT="600")}
    gathered = gather(job(container), catalogue)
    assert gathered.facts["checkpoint"]["steps"]["source"] == "--ckpt-every 40 (InHouse)"
    found = gathered.units["container"][0].bindings["container"]
    assert found["collectiveTimeout"]["seconds"] == 600.0
    assert (found["framework"]["name"], found["framework"]["defaultTimeout"]) == ("InHouse", 1200.0)
    disabled = gather(job({"args": ["--ckpt", "off"]}), catalogue).facts["checkpoint"]
    assert disabled["disabled"]["source"] == "--ckpt off (InHouse)"
    assert "steps" not in gather(job(container)).facts["checkpoint"]  # the bundled catalogue alone


# (case, command, framework recognised, default timeout)
FRAMEWORKS: list[tuple[str, list[str], str | None, float | None]] = [
    ("torchrun", ["torchrun", "train.py"], "PyTorch", 600.0),
    ("python -m torch.distributed.run", ["python", "-m", "torch.distributed.run", "t.py"], "PyTorch", 600.0),
    ("HF by its flags", ["python", "run_clm.py", "--per_device_train_batch_size", "8"], "HF Trainer", 1800.0),
    (
        "a launcher before the trainer it starts",
        ["accelerate", "launch", "run_clm.py", "--save_strategy", "steps"],
        "Accelerate",
        1800.0,
    ),
    (
        "a trainer before plain torchrun",
        ["torchrun", "run_clm.py", "--save_strategy", "steps"],
        "HF Trainer",
        1800.0,
    ),
    ("DeepSpeed launcher", ["/usr/bin/deepspeed", "train.py"], "DeepSpeed", 1800.0),
    ("Accelerate", ["accelerate", "launch", "t.py"], "Accelerate", 1800.0),
    ("Lightning flags", ["python", "main.py", "fit", "--trainer.num_nodes", "2"], "Lightning", 1800.0),
    ("Megatron script", ["torchrun", "pretrain_gpt.py"], "Megatron-LM", 600.0),
    (
        "torchtitan",
        ["torchrun", "-m", "torchtitan.train", "--job.config_file", "x.toml"],
        "torchtitan",
        100.0,
    ),
    ("unknown", ["python", "train.py"], None, None),
]


@pytest.mark.parametrize(("case", "command", "name", "default"), FRAMEWORKS, ids=[f[0] for f in FRAMEWORKS])
def test_framework_recognised(case: str, command: list[str], name: str | None, default: float | None) -> None:
    found = container_facts(job({"command": command}))
    if name is None:
        assert "framework" not in found
    else:
        assert (found["framework"]["name"], found["framework"]["defaultTimeout"]) == (name, default)


def test_the_framework_is_the_first_in_catalogue_order_that_meets_the_command() -> None:
    def first_meeting(words: list[str]) -> knobs.Framework | None:  # the catalogue's rule, as sets
        names = set(words) | {w.rsplit("/", 1)[-1] for w in words}
        flags = {w.partition("=")[0] for w in words if w.startswith("-")}
        return next((f for f in CATALOGUE.frameworks if f.tokens & names or f.flags & flags), None)

    vocabulary = sorted({w for f in CATALOGUE.frameworks for w in f.tokens | f.flags})
    assert len(vocabulary) > 20
    rng = random.Random(7)
    forms = [
        lambda w: w,
        lambda w: f"/opt/bin/{w}",
        lambda w: f"{w}=1",
        lambda w: f"x{w}",
        lambda w: "train.py",
    ]
    seen = set()
    for _ in range(2000):
        words = [rng.choice(forms)(rng.choice(vocabulary)) for _ in range(rng.randint(0, 5))]
        expected = first_meeting(words)
        assert CATALOGUE.framework_of(words) == expected, words
        seen.add(expected.name if expected else None)
    assert len(seen) == len(CATALOGUE.frameworks) + 1  # every framework, and none


HEAD = "apiVersion: kubegap.dev/v1alpha1\nkind: KnobCatalogue\n"


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (
            HEAD + "knobs: [{setting: checkpointSteps, flags: [--x]}]\n",
            "/knobs/0",
        ),
        (
            HEAD + "knobs: [{setting: nap, flags: [--x], unit: s}]\n",
            "/knobs/0/setting",
        ),
        (
            HEAD + "knobs: [{setting: checkpointDisabled, flags: [--x]}]\n",
            "/knobs/0",
        ),
        (
            HEAD + "knobs: [{setting: stepTime, unit: s}]\n",
            "/knobs/0",
        ),
        (
            HEAD + "knobs: [{setting: stepTime, flags: [x y], unit: s}]\n",
            "/knobs/0/flags/0",
        ),
        (
            HEAD + "frameworks: [{name: X, defaultTimeout: 10}]\n",
            "/frameworks/0/defaultTimeout",
        ),
    ],
)
def test_bad_user_catalogue_names_file_and_pointer(tmp_path: Path, text: str, error: str) -> None:
    path = tmp_path / "knobs.yaml"
    path.write_text(text)
    with pytest.raises(PolicyError) as caught:
        knobs.load([str(path)])
    assert str(caught.value).startswith(f"{path}: not a valid knobs file")
    assert f"\n  {error}: " in str(caught.value)


def test_missing_user_catalogue(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="cannot read"):
        knobs.load([str(tmp_path / "nope.yaml")])


def test_later_framework_of_the_same_name_replaces_it() -> None:
    head = {"apiVersion": "kubegap.dev/v1alpha1", "kind": "KnobCatalogue"}
    merged = knobs.merge(
        [
            ("a", {**head, "frameworks": [{"name": "X", "defaultTimeout": "1m"}, {"name": "Y"}]}),
            ("b", {**head, "frameworks": [{"name": "X", "defaultTimeout": "2m"}]}),
        ]
    )
    assert [(f.name, f.default_timeout) for f in merged.frameworks] == [("X", 120.0), ("Y", None)]


@pytest.mark.parametrize(
    ("pattern", "key", "matches"),
    [
        (
            "*.checkpoint_callback_params.train_time_interval",
            "exp_manager.checkpoint_callback_params.train_time_interval",
            True,
        ),
        (
            "*.checkpoint_callback_params.train_time_interval",
            "checkpoint_callback_params.train_time_interval",
            True,
        ),
        (
            "*.checkpoint_callback_params.train_time_interval",
            "xcheckpoint_callback_params.train_time_interval",
            False,
        ),
        ("train_time_interval", "train_time_interval", True),
        ("train_time_interval", "a.train_time_interval", False),
        ("checkpoint_period", "checkpoint_period_x", False),
    ],
)
def test_override_patterns(pattern: str, key: str, matches: bool) -> None:
    knob = knobs.Knob(
        "checkpointSteps", None, frozenset(), (pattern,), frozenset(), None, "steps", frozenset(), None
    )
    assert knob.matches_override(key) is matches


@pytest.mark.parametrize(
    ("resource", "gpu", "accelerator"),
    [
        ("nvidia.com/gpu", True, True),
        ("amd.com/gpu", True, True),
        ("nvidia.com/mig-1g.5gb", True, True),
        ("nvidia.com/mig-3g.40gb", True, True),
        ("habana.ai/gaudi", False, True),
        ("gpu.intel.com/i915", False, True),
        ("google.com/tpu", False, True),
        ("aws.amazon.com/neuron", False, True),
        ("aws.amazon.com/neuroncore", False, True),
        ("aws.amazon.com/neurondevice", False, True),
        ("nvidia.com/gpu.shared", False, False),
        ("rdma/ib", False, False),
        ("cpu", False, False),
    ],
)
def test_resource_classes(resource: str, gpu: bool, accelerator: bool) -> None:
    assert CATALOGUE.is_gpu(resource) is gpu
    assert CATALOGUE.is_accelerator(resource) is accelerator


def test_resource_classes_remembered_and_past_what_is_remembered_are_the_globs() -> None:
    catalogue = knobs.load()
    kept = knobs._KINDS_KEPT
    names = ["habana.ai/gaudi", "cpu", *(f"nvidia.com/mig-{i}g.5gb" for i in range(kept)), "google.com/tpu"]
    expected = [
        (globs.matches(n, catalogue.gpu_resources), globs.matches(n, catalogue.accelerator_resources))
        for n in names
    ]
    assert expected[0] == (False, True) and expected[-1] == (False, True)
    for _ in range(2):  # asked first, then answered from what the catalogue remembers (or not, past it)
        assert [(catalogue.is_gpu(n), catalogue.is_accelerator(n)) for n in names] == expected
    assert len(catalogue._kinds) == kept


@pytest.mark.parametrize(
    ("args", "disabled"),
    [
        (["--save-interval", "500"], "--save-interval 500 without --save (Megatron-LM)"),
        (
            ["--persistent-save-interval=500", "--load", "/ckpt"],
            "--persistent-save-interval 500 without --save (Megatron-LM)",
        ),
        (["--save-interval", "500", "--save", "/ckpt"], None),
    ],
)
def test_a_megatron_interval_without_a_save_directory_saves_nothing(
    args: list[str], disabled: str | None
) -> None:
    checkpoint = gather(job({"args": args})).facts["checkpoint"]
    if disabled is None:
        assert "disabled" not in checkpoint and checkpoint["steps"]["steps"] == 500
    else:
        assert checkpoint["disabled"]["source"] == disabled
