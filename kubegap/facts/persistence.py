"""Checkpoint recovery facts (RULES.md v3 `checkpoint-recovery`): where each training container writes its
checkpoints and whether that place survives a reschedule, whether a restart resumes from the latest one,
whether saves block the run, and whether a save on SIGTERM is switched on.

A directory is placed through the container's `volumeMounts` onto the pod's volume (`mounts.volume_at`,
the one mount resolver); a URL with a scheme is remote storage. Whatever cannot be placed (a variable, a
relative path, a TrainJob whose volumes live in its runtime) is `unresolved`, never a pass.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from typing import Any, Final

from kubegap.facts import argv, mounts, readings
from kubegap.facts.env import Environment
from kubegap.facts.knobs import Catalogue, Knob
from kubegap.facts.model import Scratch
from kubegap.fieldpath import FieldPath, render
from kubegap.workloads import Container, PodTemplate

_OFF: Final = frozenset({"false", "0", "no", "none", "off", "disabled"})
_URL: Final = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*)://")
# Volume sources whose data outlives the pod and the node (core/v1 Volume): claims, network and cloud disks.
# Inline CSI volumes count too: the drivers used for checkpoints mount remote storage (GCS FUSE, S3).
_KEPT: Final = frozenset((
    "persistentVolumeClaim", "csi", "nfs", "iscsi", "fc", "cephfs", "rbd", "glusterfs", "azureFile",
    "azureDisk", "awsElasticBlockStore", "gcePersistentDisk", "cinder", "portworxVolume", "vsphereVolume",
    "flexVolume", "flocker", "quobyte", "scaleIO", "storageos", "photonPersistentDisk",
))  # fmt: skip
_LOST: Final = {
    "emptyDir": "emptyDir volume {} (deleted with the pod)",
    "hostPath": "hostPath volume {} (left on the node when the pod moves)",
    # kubernetes.io/docs/concepts/storage/ephemeral-volumes: the PVC is owned by the pod, deleted with it
    "ephemeral": "generic ephemeral volume {} (its PVC is deleted with the pod)",
}
_RANK: Final = {"lost": 0, "unresolved": 1, "persistent": 2, "object-store": 2}  # least safe first


def _first(
    catalogue: Catalogue,
    setting: str,
    cmd: argv.CommandLine,
    env: Environment,
    base: FieldPath,
    fw: str | None,
) -> tuple[Knob, str, str | None, FieldPath] | None:
    """The first knob of `setting` (of framework `fw`, when given) present: (knob, label, value, path)."""
    for knob in catalogue.by_setting(setting):
        if (fw is not None and knob.framework != fw) or not readings.present(knob, cmd, env):
            continue
        for written, value, path in readings.raw_values(knob, cmd, env, base, False):
            return knob, f"{written} ({knob.framework})" if knob.framework else written, value, path
    return None


def _on(value: str | None, env: Environment) -> bool | None:
    """A switch: a bare flag is on; None when its value cannot be read."""
    if value is None:
        return True
    text = readings.expand(value, env)
    return None if text is None else text.strip().lower() not in _OFF


def _text(value: str | None, env: Environment) -> tuple[str | None, str]:
    """(the directory as far as it can be placed, why not further): a whole variable is expanded; a
    variable later in the path leaves the directory before it."""
    if value is None:
        return None, "no directory is given"
    whole = readings.expand(value, env)  # the value itself unless it is one whole variable reference
    if whole is not None and (whole != value or "$" not in value):
        return whole, ""
    head = value.split("$", 1)[0]
    folder = head.rsplit("/", 1)[0] if "/" in head else ""
    if folder.startswith("/") and folder != "/" and "$" in value:
        return folder, ""
    return None, f"{value!r} holds a variable whose value cannot be seen"


def _volume(found: Mapping[str, Any]) -> tuple[str, str]:
    """(kind, description) of the volume `mounts.volume_at` found. A hostPath counts as lost here: a
    restarted pod may land on another node (the flight recorder's dumps, read on the same node, keep it)."""
    name, source = found["volume"], found["kind"]
    if not source:
        return "unresolved", f"volume {name} is not defined in the pod"
    if source in _KEPT:
        return "persistent", f"{source} volume {name}"
    if source in _LOST:
        return "lost", _LOST[source].format(name)
    return "lost", f"{source} volume {name} (not storage that outlives the pod)"


def place(directory: str, template: PodTemplate, container: Container) -> tuple[str, str]:
    """(kind, description) of where `directory` lives: lost, unresolved, persistent or object-store."""
    scheme = _URL.match(directory)
    if scheme and scheme.group(1).lower() != "file":
        return "object-store", f"{scheme.group(1).lower()}:// storage"
    path = directory[len("file://") :] if scheme else directory
    if not path.startswith("/"):
        workdir = str(container.spec.get("workingDir") or "")
        if not workdir.startswith("/"):
            return "unresolved", f"{directory!r} is relative to the image's working directory"
        path = posixpath.join(workdir, path)
    if not template.pod_level:
        return "unresolved", "the volumes come from the training runtime, not this object"
    found = mounts.volume_at(template.spec, container.spec, container.path, path)
    if not found:
        return "lost", "the container's own filesystem (lost when the container restarts)"
    return _volume(found)


def _directory(
    knob: Knob, value: str | None, cmd: argv.CommandLine, env: Environment
) -> tuple[str | None, str]:
    found, why = _text(value, env)
    if found is None or knob.under is None or found.startswith("/") or _URL.match(found):
        return found, why
    flags, default = knob.under
    parents = cmd.flag_values(flags)
    parent, why = _text(parents[-1][1], env) if parents else (default, "")
    return (None, why) if parent is None else (posixpath.join(parent, found), "")


def _declared(scratch: Scratch, template: PodTemplate) -> tuple[Knob, str, str | None, FieldPath] | None:
    """The directory a `kubegap.dev/checkpoint-dir` declaration names, for code that sets it."""
    for knob in readings.declared(scratch.catalogue, "checkpointDir"):
        assert knob.annotation is not None
        found = readings.declaration(knob.annotation, template.metadata, template.path, scratch.metadata)
        if found is not None:
            return knob, f"{knob.annotation}: {found.text}", found.text, found.path
    return None


def container_facts(
    scratch: Scratch, template: PodTemplate, container: Container, cmd: argv.CommandLine, env: Environment
) -> dict[str, Any]:
    """One container's `recovery` facts; empty when it names no checkpoint directory or switch."""
    catalogue, base = scratch.catalogue, container.path
    out: dict[str, Any] = {}
    found = _first(catalogue, "checkpointDir", cmd, env, base, None) or _declared(scratch, template)
    fw = found[0].framework if found else None
    defaults: Mapping[str, bool] = found[0].framework_defaults if found else {}
    if found is not None:
        knob, label, value, path = found
        directory, why = _directory(knob, value, cmd, env)
        kind, text = place(directory, template, container) if directory is not None else ("unresolved", why)
        out["storage"] = {"kind": kind, "text": text, "source": label, "path": render(path)}
        resume = _resume(catalogue, cmd, env, base, fw, directory, defaults)
        if resume is not None:
            out["resume"] = {**resume, "path": resume.get("path") or render(path)}
    for setting, key in (("checkpointAsync", "async"), ("checkpointOnSignal", "onSignal")):
        switch = _switch(catalogue, setting, cmd, env, base, fw, defaults.get(key))
        if switch is not None:
            out[key] = switch
    return out


def _switch(
    catalogue: Catalogue,
    setting: str,
    cmd: argv.CommandLine,
    env: Environment,
    base: FieldPath,
    fw: str | None,
    default: bool | None,
) -> dict[str, Any] | None:
    found = _first(catalogue, setting, cmd, env, base, None)
    if found is not None:
        state = _on(found[2], env)
        return None if state is None else {"on": state, "source": found[1], "path": render(found[3])}
    if default is None or fw is None:
        return None
    return {"on": default, "source": f"default of {fw}", "path": render(base)}


def _resume(
    catalogue: Catalogue,
    cmd: argv.CommandLine,
    env: Environment,
    base: FieldPath,
    fw: str | None,
    directory: str | None,
    defaults: Mapping[str, bool],
) -> dict[str, Any] | None:
    """How a restart picks its checkpoint: `latest`, `elsewhere` (loads another directory) or `missing`;
    None where kubegap knows no resume setting of the framework."""
    if defaults.get("resume"):
        return {"state": "latest", "source": f"{fw} resumes from its directory by default"}
    load = _first(catalogue, "checkpointLoad", cmd, env, base, fw)
    if load is not None:
        loaded, _ = _text(load[2], env)
        same = loaded is not None and directory is not None and _same(loaded, directory)
        return {"state": "latest" if same else "elsewhere", "source": load[1], "path": render(load[3])}
    switch = _first(catalogue, "checkpointResume", cmd, env, base, fw)
    if switch is not None and _on(switch[2], env):
        return {"state": "latest", "source": switch[1], "path": render(switch[3])}
    knows = any(
        k.framework == fw for s in ("checkpointLoad", "checkpointResume") for k in catalogue.by_setting(s)
    )
    if not knows:
        return None
    source = switch[1] if switch is not None else f"no resume setting of {fw}"
    return {"state": "missing", "source": source, "path": render(switch[3]) if switch else None}


def _same(a: str, b: str) -> bool:
    return mounts.normal(a.rstrip("/")) == mounts.normal(b.rstrip("/"))


def gather(
    templates: tuple[PodTemplate, ...], trainers: list[dict[str, Any]], training: set[int]
) -> dict[str, Any]:
    """The workload's recovery facts from its training containers (a twin template's are left out: they
    equal its original's and come after them, and the least safe of each counts, the first of equals);
    `training` holds the `id` of each template, twins too, with a training container."""
    own = [c["recovery"] for c in trainers if c.get("recovery")]
    out: dict[str, Any] = {}
    stored = [r["storage"] for r in own if "storage" in r]
    if stored:
        out["storage"] = min(stored, key=lambda s: _RANK[s["kind"]])
    resumes = [r["resume"] for r in own if "resume" in r]
    if resumes:
        out["resume"] = min(resumes, key=lambda r: r["state"] == "latest")
    saves = [r["async"] for r in own if "async" in r]
    if saves:
        out["async"] = min(saves, key=lambda s: s["on"])
    signals = [r["onSignal"] for r in own if r.get("onSignal", {}).get("on")]
    if signals:
        out["onSignal"] = signals[0]
        grace = _grace(templates, training)
        out.update(grace)
    return out


def _grace(templates: tuple[PodTemplate, ...], training: set[int]) -> dict[str, Any]:
    """The shortest terminationGracePeriodSeconds of the pods that train (core/v1 default 30 s)."""
    found: list[tuple[float, str, str]] = []
    for template in templates:
        if not template.pod_level or id(template) not in training:
            continue
        path = render((*template.path, "spec", "terminationGracePeriodSeconds"))
        value = template.spec.get("terminationGracePeriodSeconds")
        if value is None:
            found.append((30.0, "the default of 30 s", render((*template.path, "spec"))))
        elif isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            found.append((float(value), f"terminationGracePeriodSeconds {value}", path))
        else:
            return {"graceUnresolved": f"terminationGracePeriodSeconds {value!r} cannot be read ({path})"}
    if not found:
        return {}
    seconds, source, path = min(found)
    return {"grace": {"seconds": seconds, "text": f"{seconds:g} s", "source": source, "path": path}}
