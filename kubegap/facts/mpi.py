"""MPI launches: `mpirun`/`mpiexec` starts the ranks on the workers, so what it passes (`-x` variables
and the flags of the command it runs) reaches every GPU container of the workload (RULES.md §1)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kubegap.facts import argv, env, readings
from kubegap.facts.knobs import Catalogue
from kubegap.facts.readings import Reading
from kubegap.workloads import Workload


@dataclass(slots=True, unsafe_hash=True, init=False)
class Launch:
    """What mpirun/mpiexec in any container hands to every rank (RULES.md §1)."""

    forwarded: list[env.Variable]  # `-x NAME=VALUE` and `-x NAME`
    readings: list[readings.Reading]  # the ranks' own flags, written on the launcher's command line

    def __init__(self, forwarded: list[env.Variable], flags: list[Reading]) -> None:
        self.forwarded, self.readings = forwarded, flags  # written out (kubegap.records)


def launch(
    workload: Workload,
    parsed: Mapping[int, argv.CommandLine],
    catalogue: Catalogue,
    ns: str,
    cms: env.ConfigMaps,
) -> Launch:
    """What every MPI launch of the workload hands its ranks; `parsed` holds each container's command line."""
    out = Launch([], [])
    for template in workload.templates:
        for container in template.containers:
            cmd = parsed[id(container)]
            if not cmd.launches_mpi:
                continue
            for item in cmd.forwarded:
                value = item.value
                if value is None:  # `-x NAME`: the launcher's value, as exported before mpirun ran
                    earlier = [a for a in cmd.env if a.position < item.position]
                    value = env.resolve(container.spec, container.path, ns, cms, earlier).value(item.name)
                source = f"mpirun -x in {container.name or 'container'}"
                out.forwarded.append(env.Variable(item.name, value, (*container.path, *item.path), source))
            own = env.resolve(container.spec, container.path, ns, cms, cmd.env)
            found, _ = readings.container_readings(catalogue, cmd, own, container.path, argv_only=True)
            out.readings.extend(found)
    return out
