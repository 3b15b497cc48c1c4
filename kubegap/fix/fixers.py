"""One fix per (policy, rule): each reads the finding and the policy's parameters and returns a `Patch`,
or raises `Unsafe` saying why there is no safe fix. Nothing here guesses a value it cannot derive.
"""

from __future__ import annotations

from collections.abc import Callable

from kubegap.enginerules import EXEMPTION_REASON, INVALID_DECLARATION
from kubegap.fix import pods, timeouts, variables
from kubegap.fix.nodes import Unsafe
from kubegap.fix.target import Patch, Target


def _never(reason: str) -> Callable[[Target], Patch]:
    def fixer(target: Target) -> Patch:
        raise Unsafe(reason)

    return fixer


FIXERS: dict[tuple[str, str], Callable[[Target], Patch]] = {
    ("nccl-timeout", "timeout-declared"): timeouts.timeout_declared,
    ("nccl-timeout", "timeout-bounded"): timeouts.timeout_bounded,
    ("nccl-timeout", "async-error-handling"): variables.async_error_handling,
    ("nccl-timeout", "watchdog-enabled"): variables.watchdog_enabled,
    ("nccl-timeout", "no-placebo-timeout"): variables.no_placebo_timeout,
    ("checkpoint-interval", "checkpointing-enabled"): timeouts.checkpointing_enabled,
    ("checkpoint-interval", "interval-declared"): timeouts.interval_declared,
    ("checkpoint-interval", "interval-bounded"): timeouts.interval_bounded,
    ("health-probes", "liveness-probe"): pods.liveness_probe,
    ("health-probes", "probe-window"): pods.probe_window,
    ("restart-budget", "auto-restart"): pods.auto_restart,
    ("gpu-nic-topology", "no-transport-fallback"): variables.no_transport_fallback,
    ("gpu-nic-topology", "nccl-nic-hints"): variables.nccl_nic_hints,
    ("gpu-nic-topology", "nic-attached"): _never("attaching a NIC depends on the cluster's fabric"),
    ("gpu-nic-rails", "nic-per-rail"): _never(
        "the NIC resources and networks a pod can request depend on the nodes' device plugins and networks"
    ),
}
_BY_RULE = {
    EXEMPTION_REASON: "only a person can give the exemption's reason",
    INVALID_DECLARATION: "the declaration's value is for you to correct",
}


def plan(target: Target) -> Patch:
    """The patch for one finding; raises Unsafe with the reason when there is no safe one."""
    finding = target.finding
    fixer = FIXERS.get((finding.policy, finding.rule))
    if fixer is None:
        raise Unsafe(_BY_RULE.get(finding.rule, "kubegap has no fix for this rule"))
    return fixer(target)
