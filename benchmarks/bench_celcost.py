"""CEL cost units per second for each runtime: what the runtime budgets in kubegap.celcost buy in time.

Run on demand: `python benchmarks/bench_celcost.py [--items N] [--repeat R]`. One comprehension over N
maps and two nested ones over sqrt(N)-ish maps are evaluated by both runtimes; the estimate of
kubegap.celcost divided by the best wall time of R runs gives units per second, and each runtime's budget
is shown as the seconds it allows at that rate, with the ratio of the two runtimes.
"""

from __future__ import annotations

import argparse
import time

from kubegap import cel, celcost

EXPRESSIONS = (
    ("one comprehension", "facts.all(x, x.name != '' && x.image != '')", 1.0),
    ("two nested", "facts.all(a, facts.all(b, a.name == b.name || a.image != b.image))", 0.5),
)


def rate(backend: cel.Backend, source: str, items: int, repeat: int) -> float:
    program = backend.compile(source)
    listed = [{"name": f"c{i}", "image": f"i{i}"} for i in range(items)]
    activation = backend.activation({"facts": backend.convert(listed)})
    best = min(_timed(program, activation) for _ in range(repeat))
    return celcost.estimate(source).at(items) / best


def _timed(program: cel.Program, activation: object) -> float:
    started = time.perf_counter()
    program(activation)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=2_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    for label, source, power in EXPRESSIONS:
        items = max(int(args.items**power), 1)
        rates = {name: rate(cel.backend(name), source, items, args.repeat) for name in cel.BACKENDS}
        for name, units in rates.items():
            budget = cel.backend(name).cost_budget
            print(
                f"{label:<18} {name:<10} N={items:<6} {units:>14,.0f} units/s  "
                f"budget {budget:>9,} = {budget / units:6.3f} s"
            )
        print(f"{label:<18} cel-expr / cel-python: {rates['cel-expr'] / rates['cel-python']:,.0f}x")


if __name__ == "__main__":
    main()
