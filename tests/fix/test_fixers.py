"""Each fix on real-shaped manifests: where the setting lands, in which unit and style, and the findings
that have no safe fix saying why. Expected texts are written out in full: a fix may change only them."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.fix.support import engine, failing, fix

MANIFESTS = Path(__file__).parent.parent / "data" / "fix" / "manifests"

# A launcher kubegap recognises has a default collective timeout (Megatron-LM 10 min, HF Trainer, DeepSpeed
# and Lightning 30 min, torchtitan 100 s), so a fix writes its knob only when the policy's bound is shorter.
FIVE_MINUTES = {"nccl-timeout": {"maxCollectiveTimeout": "5m"}}
TWENTY_MINUTES = {"nccl-timeout": {"maxCollectiveTimeout": "20m"}}
ONE_MINUTE = {"nccl-timeout": {"maxCollectiveTimeout": "60s"}}


def _changed_lines(before: str, after: str) -> tuple[list[str], list[str]]:
    import difflib

    diff = list(difflib.ndiff(before.splitlines(), after.splitlines()))
    return [d[2:] for d in diff if d.startswith("- ")], [d[2:] for d in diff if d.startswith("+ ")]


def test_megatron_timeout_goes_into_the_bash_script_before_the_next_command() -> None:
    text = (MANIFESTS / "pytorchjob-megatron-script.yaml").read_text()
    the_engine = engine("nccl-timeout", params=FIVE_MINUTES)
    fixed = fix(text, the_engine)
    removed, added = _changed_lines(text, fixed.text)
    assert removed == [line for line in text.splitlines() if "pretrain_gpt.py" in line]
    assert added == [
        removed[0].replace("--save-interval 100 &&", "--save-interval 100 --distributed-timeout-minutes 5 &&")
    ]
    assert not failing(fixed.text, the_engine)


def test_hf_timeout_is_appended_to_block_args_as_strings_and_follows_set() -> None:
    text = (MANIFESTS / "job-hf-block-args.yaml").read_text()
    the_engine = engine("nccl-timeout", params=TWENTY_MINUTES)  # HF's default is 30 min
    fixed = fix(text, the_engine)
    assert _changed_lines(text, fixed.text) == ([], ["            - --ddp_timeout", '            - "1200"'])
    assert not failing(fixed.text, the_engine)


def test_torchtitan_timeout_and_export_in_a_literal_script() -> None:
    text = (MANIFESTS / "jobset-anchored-script.yaml").read_text().replace("- &trainer", "-")
    fixed = fix(text, engine("nccl-timeout", params=ONE_MINUTE))
    removed, added = _changed_lines(text, fixed.text)
    assert removed == [
        "                      export TORCH_NCCL_ASYNC_ERROR_HANDLING=0",
        "                        --job.config_file /cfg/llama3_70b.toml   # 70B",
    ]
    assert added == [
        "                        --job.config_file /cfg/llama3_70b.toml"
        " --comm.train_timeout_seconds 60   # 70B"
    ]


def test_an_anchored_container_is_not_edited_and_says_why() -> None:
    text = (MANIFESTS / "jobset-anchored-script.yaml").read_text()
    fixed = fix(text, engine("nccl-timeout", params=ONE_MINUTE))
    assert not fixed.changed
    notes = {o.finding.rule: o.note for o in fixed.outcomes}
    assert set(notes) == {"timeout-bounded", "async-error-handling"}
    assert all("anchor" in note for note in notes.values())


DEEPSPEED = textwrap.dedent(
    """\
    apiVersion: kubeflow.org/v1
    kind: PyTorchJob
    metadata: {name: ds, namespace: nlp}
    spec:
      pytorchReplicaSpecs:
        Worker:
          replicas: 2
          template:
            spec:
              containers:
                - name: ds
                  image: ds:0.14
                  command: [deepspeed, --num_gpus, "8", train.py, --deepspeed, ds.json]
                  resources: {limits: {nvidia.com/gpu: 8}}
    """
)


def test_deepspeed_gets_the_environment_variable_it_reads_in_minutes() -> None:
    assert not failing(DEEPSPEED, engine("nccl-timeout"))  # DeepSpeed's 30 min default is within 30m
    the_engine = engine("nccl-timeout", params=TWENTY_MINUTES)
    fixed = fix(DEEPSPEED, the_engine)
    removed, added = _changed_lines(DEEPSPEED, fixed.text)
    assert removed == []
    assert added == [
        "              env:",
        "                - name: DEEPSPEED_TIMEOUT",
        '                  value: "20"',
    ]
    assert not failing(fixed.text, the_engine)


def test_efa_pods_get_fi_provider_and_other_fabrics_are_left_with_the_reason() -> None:
    efa = DEEPSPEED.replace("{nvidia.com/gpu: 8}", "{nvidia.com/gpu: 8, vpc.amazonaws.com/efa: 4}")
    fixed = fix(efa, engine("gpu-nic-topology"))
    assert _changed_lines(efa, fixed.text)[1] == [
        "              env:",
        "                - name: FI_PROVIDER",
        "                  value: efa",
    ]
    assert not failing(fixed.text, engine("gpu-nic-topology"))
    rdma = DEEPSPEED.replace("{nvidia.com/gpu: 8}", "{nvidia.com/gpu: 8, rdma/ib: 4}")
    fixed = fix(rdma, engine("gpu-nic-topology"))
    assert not fixed.changed
    (outcome,) = fixed.outcomes
    assert outcome.finding.rule == "nccl-nic-hints" and "does not say which NIC" in outcome.note


NEMO = textwrap.dedent(
    """\
    apiVersion: batch/v1
    kind: Job
    metadata:
      name: nemo
      annotations:
        kubegap.dev/collective-timeout: 2h   # set in code
    spec:
      parallelism: 2
      template:
        spec:
          restartPolicy: Never
          containers:
            - name: nemo
              image: nemo:24.07
              command: [python, train.py, "train_time_interval=01:00:00"]
              resources: {limits: {nvidia.com/gpu: 8}}
    """
)


def test_time_based_interval_and_annotation_are_lowered_to_the_policy_maximum() -> None:
    the_engine = engine("checkpoint-interval", "nccl-timeout")
    fixed = fix(NEMO, the_engine)
    removed, added = _changed_lines(NEMO, fixed.text)
    assert added == [
        "    kubegap.dev/collective-timeout: 30m   # set in code",
        '          command: [python, train.py, "train_time_interval=00:10:00"]',
    ]
    assert len(removed) == 2
    assert not failing(fixed.text, the_engine)


def test_step_interval_is_lowered_to_whole_steps_within_the_bound() -> None:
    text = (
        (MANIFESTS / "pytorchjob-megatron-script.yaml")
        .read_text()
        .replace("--save-interval 100", "--save-interval 250")
    )
    the_engine = engine(
        "checkpoint-interval", params={"checkpoint-interval": {"maxCheckpointInterval": "15m"}}
    )
    fixed = fix(text, the_engine)
    assert "--save-interval 150 &&" in fixed.text  # ⌊15 min / 6 s⌋
    assert not failing(fixed.text, the_engine)


def test_a_probe_in_a_flow_style_container_is_not_rewritten() -> None:
    text = textwrap.dedent(
        """\
        apiVersion: batch/v1
        kind: Job
        metadata: {name: flow}
        spec:
          template:
            spec:
              containers: [{name: t, image: t, resources: {limits: {nvidia.com/gpu: 8}}}]
        """
    )
    fixed = fix(text, engine("health-probes"))
    assert not fixed.changed
    assert "flow-style" in fixed.outcomes[0].note


@pytest.mark.parametrize(
    "rule", ["checkpointing-enabled", "exemption-reason", "nic-attached", "nic-per-rail"]
)
def test_rules_without_a_safe_fix_say_so(rule: str) -> None:
    from kubegap.fix import fixers

    assert rule in {r for _, r in fixers.FIXERS} | set(fixers._BY_RULE)


def test_lightning_timeout_is_declared_with_a_todo_not_guessed_on_the_command_line() -> None:
    text = DEEPSPEED.replace(
        'command: [deepspeed, --num_gpus, "8", train.py, --deepspeed, ds.json]',
        "command: [python, main.py, fit, --trainer.devices=8, --trainer.num_nodes=2]",
    )
    the_engine = engine("nccl-timeout", params=TWENTY_MINUTES)  # Lightning's default is 30 min
    fixed = fix(text, the_engine)
    (outcome,) = fixed.outcomes
    assert outcome.todo and "kubegap.dev/collective-timeout: TODO" in outcome.note
    assert _changed_lines(text, fixed.text) == (
        [],
        [
            "        metadata:",
            "          annotations:",
            "            # kubegap fix: the collective timeout your code sets, at most 20m",
            "            kubegap.dev/collective-timeout: TODO",
        ],
    )
    left = {f.rule for f in failing(fixed.text, the_engine)}
    # Lint fails until the TODO is filled in: the unreadable declaration leaves Lightning's 30 min default.
    assert left == {"invalid-declaration", "timeout-bounded"}


def test_nothing_is_inserted_after_a_block_scalar_that_keeps_trailing_lines() -> None:
    text = DEEPSPEED.replace(
        '              command: [deepspeed, --num_gpus, "8", train.py, --deepspeed, ds.json]\n'
        "              resources: {limits: {nvidia.com/gpu: 8}}\n",
        "              resources: {limits: {nvidia.com/gpu: 8}}\n"
        "              command:\n                - bash\n                - -c\n"
        "                - |+\n                  deepspeed train.py --deepspeed ds.json\n\n",
    )
    fixed = fix(text, engine("health-probes"))
    assert not fixed.changed
    assert "`|+`" in fixed.outcomes[0].note


def test_the_flag_goes_to_the_launcher_not_to_an_echo_or_a_comment_and_before_a_pipe() -> None:
    text = (MANIFESTS / "job-megatron-echo-pipe.yaml").read_text()
    fixed = fix(text, engine("nccl-timeout", params=FIVE_MINUTES))
    assert _changed_lines(text, fixed.text) == (
        ["                --tensor-model-parallel-size 8 | tee /log/out.txt"],
        ["                --tensor-model-parallel-size 8 --distributed-timeout-minutes 5 | tee /log/out.txt"],
    )
    twice = text.replace('echo "starting pretrain_gpt.py"', "echo starting pretrain_gpt.py")
    fixed = fix(twice, engine("nccl-timeout", params=FIVE_MINUTES))
    assert not fixed.changed
    assert "appears 2 times in the script" in fixed.outcomes[0].note


def test_a_trainjob_trainer_is_fixed_in_spec_trainer_and_declared_on_the_workload() -> None:
    text = (MANIFESTS / "trainjobs.yaml").read_text()
    fixed = fix(text, engine("nccl-timeout", params=TWENTY_MINUTES))
    removed, added = _changed_lines(text, fixed.text)
    assert removed == [
        '    command: [torchrun, run_clm.py, --per_device_train_batch_size, "4"]',
        "    env:",
        "      - name: NCCL_TIMEOUT",
        '        value: "600"',
    ]
    assert added == [
        '    command: [torchrun, run_clm.py, --per_device_train_batch_size, "4", --ddp_timeout, "1200"]',
        "  annotations:",
        "    # kubegap fix: the collective timeout your code sets, at most 20m",
        "    kubegap.dev/collective-timeout: TODO",
    ]
    assert fixed.text.index("kubegap.dev/collective-timeout") > fixed.text.index("name: tj2")


def test_a_rank_started_by_mpirun_gets_its_timeout_on_the_launchers_command_line() -> None:
    text = (MANIFESTS / "mpijob-megatron-launcher.yaml").read_text()
    fixed = fix(text, engine("nccl-timeout"))
    assert _changed_lines(text, fixed.text) == (
        [],
        ["                - --distributed-timeout-minutes", '                - "10"'],
    )
    (outcome,) = fixed.outcomes
    assert outcome.finding.container == "worker"
    assert outcome.note.endswith("of container launcher, whose mpirun passes it to the ranks")
    assert not failing(fixed.text, engine("nccl-timeout"))


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            'command: [bash, -c, "export DEEPSPEED_TIMEOUT=120; deepspeed train.py --deepspeed ds.json"]',
            'command: [bash, -c, "export DEEPSPEED_TIMEOUT=30; deepspeed train.py --deepspeed ds.json"]',
        ),
        (
            'command: [bash, -c, "DEEPSPEED_TIMEOUT=45 deepspeed train.py --deepspeed ds.json"]',
            'command: [bash, -c, "DEEPSPEED_TIMEOUT=30 deepspeed train.py --deepspeed ds.json"]',
        ),
    ],
    ids=["export", "prefix"],
)
def test_a_timeout_variable_set_in_a_script_is_lowered_where_it_is_set(before: str, after: str) -> None:
    text = DEEPSPEED.replace('command: [deepspeed, --num_gpus, "8", train.py, --deepspeed, ds.json]', before)
    fixed = fix(text, engine("nccl-timeout"))
    assert _changed_lines(text, fixed.text) == (["              " + before], ["              " + after])
    assert not failing(fixed.text, engine("nccl-timeout"))


def test_a_timeout_variable_in_env_is_lowered_in_minutes() -> None:
    text = DEEPSPEED.replace(
        "              resources:",
        '              env: [{name: DEEPSPEED_TIMEOUT, value: "45"}]\n              resources:',
    )
    fixed = fix(text, engine("nccl-timeout"))
    assert _changed_lines(text, fixed.text)[1] == [
        '              env: [{name: DEEPSPEED_TIMEOUT, value: "30"}]'
    ]


def test_a_default_too_long_with_no_knob_to_write_is_declared_with_a_todo() -> None:
    text = DEEPSPEED.replace(
        'command: [deepspeed, --num_gpus, "8", train.py, --deepspeed, ds.json]',
        "command: [torchrun, --nproc-per-node=8, train.py]",
    )
    assert not failing(text, engine("nccl-timeout"))  # PyTorch's 10 min default is within 30m
    fixed = fix(text, engine("nccl-timeout", params=FIVE_MINUTES))
    (outcome,) = fixed.outcomes
    assert outcome.finding.rule == "timeout-bounded" and outcome.todo
    assert _changed_lines(text, fixed.text) == (
        [],
        [
            "        metadata:",
            "          annotations:",
            "            # kubegap fix: the collective timeout your code sets, at most 5m",
            "            kubegap.dev/collective-timeout: TODO",
        ],
    )


def test_identical_templates_told_once_are_each_fixed() -> None:
    """A JobSet of three identical jobs has one finding per rule, listing every role (RULES.md §4): the
    fix settles it in the first, after which the others are no longer identical and are fixed in turn."""
    job = """\
        - name: {name}
          replicas: 1
          template:
            spec:
              template:
                spec:
                  containers:
                    - name: trainer
                      image: registry.example/llm:1
                      command: [torchrun, --nproc-per-node=8, train.py, --ddp_timeout, "7200"]
                      resources:
                        limits: {{nvidia.com/gpu: 8}}
        """
    jobs = "".join(textwrap.indent(textwrap.dedent(job).format(name=f"job-{i}"), "    ") for i in range(3))
    head = "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: j}\n"
    text = f"{head}spec:\n  replicatedJobs:\n{jobs}"
    the_engine = engine("nccl-timeout", params=TWENTY_MINUTES)
    (told,) = [f for f in failing(text, the_engine) if f.rule == "timeout-bounded"]
    assert told.roles == ("job-0", "job-1", "job-2")
    fixed = fix(text, the_engine)
    removed, added = _changed_lines(text, fixed.text)
    assert len(removed) == len(added) == 3 and all('"1200"' in line for line in added)
    assert not failing(fixed.text, the_engine)


_NEVER_RESTARTED_JOB = textwrap.dedent(
    """\
    apiVersion: batch/v1
    kind: Job
    metadata: {name: pretrain, namespace: ml}
    spec:
      backoffLimit: 0
      template:
        spec:
          restartPolicy: Never
          containers:
          - name: trainer
            image: nvcr.io/nvidia/pytorch:24.05-py3
            command: [torchrun, --nnodes=2, --nproc-per-node=8, train.py]
            resources: {limits: {nvidia.com/gpu: 8}}
    """
)


def test_a_restart_budget_comes_with_the_rule_that_counts_no_disruption_against_it() -> None:
    """Raising a Job's backoffLimit from 0 brings disruption-budget into play: where that policy is checked
    too, the fix writes its podFailurePolicy rule along with the limit, and both findings are settled."""
    both = engine("restart-budget", "disruption-budget")
    assert {f.rule for f in failing(_NEVER_RESTARTED_JOB, both)} == {"auto-restart"}
    fixed = fix(_NEVER_RESTARTED_JOB, both)
    removed, added = _changed_lines(_NEVER_RESTARTED_JOB, fixed.text)
    assert removed == ["  backoffLimit: 0"]
    assert added == [
        "  backoffLimit: 3",
        "  podFailurePolicy:",
        "    rules:",
        "    - action: Ignore",
        "      onPodConditions:",
        "      - type: DisruptionTarget",
    ]
    assert failing(fixed.text, both) == []
    (outcome,) = fixed.outcomes
    assert outcome.fixed and "podFailurePolicy" in outcome.note


def test_the_disruption_rule_is_written_only_where_it_is_checked_and_can_hold() -> None:
    # Without disruption-budget the limit alone settles the finding: nothing else is written.
    alone = fix(_NEVER_RESTARTED_JOB, engine("restart-budget"))
    assert _changed_lines(_NEVER_RESTARTED_JOB, alone.text) == (["  backoffLimit: 0"], ["  backoffLimit: 3"])
    both = engine("restart-budget", "disruption-budget")
    # The rule needs restartPolicy Never; an author's own podFailurePolicy is not rewritten. Either way the
    # limit would bring the disruption finding, so the fix is refused and says why.
    for changed in (
        _NEVER_RESTARTED_JOB.replace("restartPolicy: Never", "restartPolicy: OnFailure"),
        _NEVER_RESTARTED_JOB.replace(
            "  backoffLimit: 0\n",
            "  backoffLimit: 0\n  podFailurePolicy:\n    rules:\n    - action: FailJob\n"
            "      onExitCodes: {operator: In, values: [42]}\n",
        ),
    ):
        refused = fix(changed, both)
        assert not refused.changed
        (outcome,) = refused.outcomes
        assert not outcome.fixed and "disruption-budget/disruptions-not-counted" in outcome.note
