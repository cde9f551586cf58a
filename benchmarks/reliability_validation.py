"""The reliability rates checked against fleets they were not taken from (docs/reliability.md,
Validation): each study of library/reliability.csv predicts another study's failures on that
study's fleet over its period, restricted to the causes both count.

Forward rows predict Meta's Llama 3 405B run (419 unexpected interruptions in 54 days on
16,384 H100s, Table 5 of the Llama 3 paper) from other fleets; reverse rows predict the other
fleets from Llama 3's rates. The issue's target is 25 % on the 16K-GPU figure; the summary
says whether an independent source reaches it.

    .venv/bin/python benchmarks/reliability_validation.py
"""

from __future__ import annotations

from topoc.compiler.analysis.reliability import rate_sets
from topoc.compiler.analysis.reliability_check import checks, independent

TARGET = 0.25


def main() -> None:
    print("Rates per device-day, by study (library/reliability.csv):")
    print("| study | fleet | days | failures | kind: rate per device-day |")
    print("|---|---|---:|---:|---|")
    for study, rates in rate_sets().items():
        first = rates.first
        kinds = ", ".join(f"{k} {rates.rate(k):.3e}" for k in rates.kinds)
        print(f"| {study} | {first.fleet.gpus:,} {first.gpu_model}, {first.fleet.hosts:,} hosts "
              f"| {first.days:g} | {rates.count():g} | {kinds} |")
    print()
    print("| check | causes | predicted | observed | observed, 95 % Poisson | error |")
    print("|---|---|---:|---:|---:|---:|")
    for c in checks():
        band = "{:,.1f} to {:,.1f}".format(*c.interval) if c.interval else "a rate"
        print(f"| {c.label} | {', '.join(c.kinds)} | {c.predicted:,.1f} | {c.observed:,.1f} "
              f"| {band} | {c.error:+.1%} |")
    print()
    whole = [c for c in independent("llama3") if len(c.kinds) > 1]
    best = min(whole, key=lambda c: abs(c.error))
    met = abs(best.error) <= TARGET
    print(f"Llama 3's 419 interruptions from an independent whole-job rate: best "
          f"{best.label} at {best.error:+.1%}; the {TARGET:.0%} target is "
          f"{'met' if met else 'NOT met'}.")
    for c in independent("llama3"):
        if len(c.kinds) == 1:
            print(f"Component level: {c.label} at {c.error:+.1%} ({c.note}).")


if __name__ == "__main__":
    main()
