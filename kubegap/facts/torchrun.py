"""torchrun's own restarts and rendezvous (RULES.md v3 "torchrun restarts and rendezvous").

Sources (pytorch/pytorch): torch/distributed/run.py `--max-restarts` / `--max_restarts` (default 0),
`--rdzv-backend` (default "static"), `--rdzv-conf`, `--nnodes` (default "1:1"), `--standalone`; each also
read from `PET_<DEST>` (torch/distributed/argparse_util.py: the flag wins over the variable);
torch/distributed/elastic/rendezvous/dynamic_rendezvous.py RendezvousTimeout: join 600 s. The Kubeflow
training operator (pkg/controller.v1/pytorch/elastic.go) writes a PyTorchJob's elasticPolicy into
PET_MAX_RESTARTS, PET_RDZV_BACKEND (default c10d), PET_RDZV_CONF and PET_NNODES.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from kubegap import durations, raw
from kubegap.facts.argv import CommandLine, program
from kubegap.fieldpath import FieldPath, render

LAUNCHERS: Final = frozenset({"torchrun", "torch.distributed.run", "torch.distributed.launch"})
DYNAMIC: Final = frozenset({"c10d", "etcd", "etcd-v2"})  # re-rendezvous after a restart; "static" does not
JOIN_TIMEOUT: Final = 600.0  # dynamic_rendezvous.py RendezvousTimeout._DEFAULT_TIMEOUTS["join"]
_FLAGS: Final = {
    "maxRestarts": (frozenset({"--max-restarts", "--max_restarts"}), "PET_MAX_RESTARTS"),
    "backend": (frozenset({"--rdzv-backend", "--rdzv_backend"}), "PET_RDZV_BACKEND"),
    "conf": (frozenset({"--rdzv-conf", "--rdzv_conf"}), "PET_RDZV_CONF"),
    "nnodes": (frozenset({"--nnodes"}), "PET_NNODES"),
}


def launched(cmd: CommandLine) -> bool:
    return any(program(t.text) in LAUNCHERS for t in cmd.tokens)


def _setting(
    key: str, cmd: CommandLine, env: Mapping[str, str], seen: Sequence[str], base: FieldPath
) -> tuple[str | None, str, FieldPath] | None:
    """(value, where from, path) of a torchrun option: the flag, else PET_*; value None if unseen."""
    flags, variable = _FLAGS[key]
    found = cmd.flag_values(flags)
    if found:
        flag, value, token = found[-1]
        return value, f"{flag} {value}", (*base, *token.path)
    if variable in env:
        return env[variable], f"{variable}={env[variable]}", base
    if variable in seen:
        return None, f"{variable} (its value cannot be seen)", base
    return None


def _join_timeout(conf: str) -> float | None:
    """join_timeout of a `key=value,...` rendezvous configuration; JOIN_TIMEOUT when it is not there."""
    for item in conf.split(","):
        key, _, value = item.partition("=")
        if key.strip() == "join_timeout":
            return float(value) if value.strip().isdigit() else None
    return JOIN_TIMEOUT


def gather(
    cmd: CommandLine, env: Mapping[str, str], seen: Sequence[str], base: FieldPath
) -> dict[str, Any] | None:
    """One container's torchrun settings; None when torchrun does not start it."""
    if not launched(cmd):
        return None
    facts: dict[str, Any] = {"standalone": bool(cmd.flag_values(frozenset({"--standalone"})))}
    for key in _FLAGS:
        found = _setting(key, cmd, env, seen, base)
        if found is not None:
            value = {} if found[0] is None else {"value": found[0]}  # absent: it cannot be seen
            facts[key] = {
                **value,
                "source": found[1],
                "path": render(found[2]),
                "fromFlag": found[1].startswith("-"),
            }
    return facts


def _elastic(obj: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """What the training operator writes into PET_* for a PyTorchJob's elasticPolicy (flags still win)."""
    policy = raw.mapping(raw.dig(obj, ("spec", "elasticPolicy")))
    if not policy:
        return {}
    path = render(("spec", "elasticPolicy"))
    out: dict[str, dict[str, Any]] = {
        "backend": {
            "value": str(policy.get("rdzvBackend") or "c10d"),
            "source": "elasticPolicy.rdzvBackend",
            "path": path,
        }
    }
    if isinstance(policy.get("maxRestarts"), int):
        out["maxRestarts"] = {
            "value": str(policy["maxRestarts"]),
            "source": f"elasticPolicy.maxRestarts {policy['maxRestarts']}",
            "path": path,
        }
    conf = [raw.mapping(c) for c in raw.items(policy.get("rdzvConf"))]
    if conf:
        text = ",".join(f"{c.get('key')}={c.get('value')}" for c in conf)
        out["conf"] = {"value": text, "source": f"elasticPolicy.rdzvConf {text}", "path": path}
    low, high = policy.get("minReplicas"), policy.get("maxReplicas")
    if isinstance(low, int) and isinstance(high, int):
        out["nnodes"] = {"value": f"{low}:{high}", "source": "elasticPolicy min/maxReplicas", "path": path}
    return out


def _number(found: Mapping[str, Any] | None, default: float) -> float | None:
    if found is None:
        return default
    value = found.get("value")
    return float(value) if isinstance(value, str) and value.strip().isdigit() else None


def _fixed_size(found: Mapping[str, Any] | None) -> bool:
    """`--nnodes N` or `N:N`: a rendezvous after a restart waits for every node; `M:N` goes on with M."""
    text = str(found.get("value", "1:1")) if found else "1:1"
    low, _, high = text.partition(":")
    return not high or low.strip() == high.strip()


def _one(settings: Mapping[str, Any], elastic: Mapping[str, Any], multi_node: bool) -> dict[str, Any]:
    """What one torchrun does after a worker fails: restart in place, and wait for lost nodes how long."""
    merged = {
        **elastic,
        **{k: v for k, v in settings.items() if raw.is_mapping(v) and (v["fromFlag"] or k not in elastic)},
    }
    restarts = _number(merged.get("maxRestarts"), 0.0)
    backend = str(merged["backend"].get("value", "static")) if merged.get("backend") else "static"
    conf = merged.get("conf")
    join = (
        _join_timeout(str(conf["value"]))
        if conf and "value" in conf
        else (JOIN_TIMEOUT if not conf else None)
    )
    waits = (restarts is None or restarts > 0) and backend in DYNAMIC and multi_node
    waits = waits and not settings.get("standalone") and _fixed_size(merged.get("nnodes"))
    where = conf or merged.get("backend") or {"source": "default of torchrun", "path": ""}
    return {
        "restarts": restarts,
        "restartsSource": merged["maxRestarts"]["source"]
        if merged.get("maxRestarts")
        else "default of torchrun, 0",
        "waits": waits,
        "join": join,
        "joinSource": conf["source"] if conf else f"default of the {backend} rendezvous, 10m",
        "joinPath": where["path"],
    }


def workload(
    obj: Mapping[str, Any], kind: str, containers: Sequence[Mapping[str, Any]], multi_node: bool
) -> dict[str, Any] | None:
    """`facts.torchrun`: over the training containers torchrun starts; None when it starts none."""
    elastic = _elastic(obj) if kind == "PyTorchJob" else {}
    each = [_one(c["torchrun"], elastic, multi_node) for c in containers if "torchrun" in c]
    if not each:
        return None
    in_place = [e for e in each if e["restarts"] is None or e["restarts"] > 0]
    facts: dict[str, Any] = {
        "inPlace": bool(in_place),
        "restartsReadable": all(e["restarts"] is not None for e in each),
    }
    facts["restartsSource"] = (in_place or each)[0]["restartsSource"]
    waiting = [e for e in each if e["waits"]]
    facts["waitsForLostNode"] = bool(waiting)
    if waiting:
        longest = max(waiting, key=lambda e: -1.0 if e["join"] is None else e["join"])
        facts["joinTimeoutReadable"] = longest["join"] is not None
        facts["joinTimeoutSeconds"] = longest["join"] or 0.0
        facts["joinTimeoutText"] = durations.format_seconds(longest["join"] or 0.0)
        facts["joinTimeoutSource"] = longest["joinSource"]
        facts["joinTimeoutPath"] = longest["joinPath"]
    return facts
