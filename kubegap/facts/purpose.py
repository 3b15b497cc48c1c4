"""What a workload's accelerators are for: training, a benchmark, a diagnostic or an idle interactive pod.

Checkpoints and liveness matter for training only; an NCCL benchmark or a burn-in test is judged for its
network path but not for checkpoints (RULES.md v2). Recognised from the accelerator containers' command
lines; the label or annotation `kubegap.dev/workload` says it outright.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from kubegap import raw
from kubegap.facts import argv

LABEL: Final = "kubegap.dev/workload"
TRAINING: Final = "training"
BENCHMARK: Final = "benchmark"
DIAGNOSTIC: Final = "diagnostic"
INTERACTIVE: Final = "interactive"
INFERENCE: Final = "inference"
DECLARED: Final = frozenset({TRAINING, BENCHMARK, DIAGNOSTIC, INTERACTIVE, INFERENCE})

# NVIDIA/nccl-tests and ROCm/rccl-tests build one `<collective>_perf` binary per collective; perftest's
# ib_* tools; NVIDIA/nvbandwidth; OSU micro-benchmarks are all `osu_*`.
_BENCHMARKS: Final = frozenset(
    {
        *(
            f"{name}_perf"
            for name in (
                "all_reduce",
                "all_gather",
                "alltoall",
                "broadcast",
                "reduce",
                "reduce_scatter",
                "sendrecv",
                "scatter",
                "gather",
                "hypercube",
            )
        ),
        *(f"ib_{op}_{kind}" for op in ("write", "read", "send", "atomic") for kind in ("bw", "lat")),
        "nvbandwidth",
    }
)
_BENCHMARK_PREFIXES: Final = ("osu_",)
# GPU burn-in tools (wilicc/gpu-burn) and DCGM diagnostics (`dcgmi diag -r 3`)
_BURN_IN: Final = frozenset({"gpu_burn", "gpu-burn", "gpuburn"})
# an idle pod someone execs into: the whole command keeps the container alive and does nothing else
_KEEPALIVE: Final = frozenset({("sleep", "infinity"), ("sleep", "inf"), ("tail", "-f", "/dev/null")})
_WRAPPERS: Final = frozenset({"exec", "-c", "-lc", "-ec", "-xc", "-ex", "-e", "-x", "set"})


def _words(cmd: argv.CommandLine) -> list[str]:
    return [argv.program(t.text) for t in cmd.tokens]


_NEUTRAL: Final = frozenset({"sshd"})  # an MPI worker waits for its launcher: its own command says nothing


def of_container(cmd: argv.CommandLine, recognised: bool) -> str | None:
    """One container's purpose, None when its command says nothing (an MPI worker's sshd); `recognised`:
    a training launcher or framework was found in it. An unknown program counts as training."""
    if recognised:
        return TRAINING
    words = _words(cmd)
    if words and all(w in _NEUTRAL or w.startswith("-") for w in words):
        return None
    if any(w in _BENCHMARKS or w.startswith(_BENCHMARK_PREFIXES) for w in words):
        return BENCHMARK
    if any(w in _BURN_IN for w in words) or ("dcgmi" in words and "diag" in words):
        return DIAGNOSTIC
    core = [t.text for t in cmd.tokens if t.text not in _WRAPPERS and not argv.is_shell(t.text)]
    program = tuple(core[:1]) and (argv.program(core[0]),)
    return INTERACTIVE if (*program, *core[1:]) in _KEEPALIVE else TRAINING


def declared(metadata: Mapping[str, Any]) -> str | None:
    """The label's value, else the annotation's, when it is one kubegap knows."""
    for key in ("labels", "annotations"):
        value = raw.mapping(metadata.get(key)).get(LABEL)
        if isinstance(value, str) and value in DECLARED:
            return value
    return None


def of_workload(purposes: Iterable[str | None]) -> str:
    """Training when any container that runs the work trains (or none says anything); else the first
    other purpose found."""
    found = [p for p in purposes if p is not None]
    if not found or TRAINING in found:
        return TRAINING
    return next(p for p in (BENCHMARK, DIAGNOSTIC, INTERACTIVE) if p in found)
