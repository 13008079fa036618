"""The figures run.sh and http3.sh print: medians of the rows `measure` (Benchmarks/measure.sh)
recorded, one line "rate cpu rss" per round, as table rows against a reference program."""
import os
import statistics


def load(work, name):
    """Median rate, min, max, median CPU seconds and peak RSS (KB) of row file `name` in `work`."""
    rows = [list(map(float, line.split())) for line in open(os.path.join(work, name))]
    rates = [r[0] for r in rows]
    return statistics.median(rates), min(rates), max(rates), statistics.median(r[1] for r in rows), max(r[2] for r in rows)


def table(work, groups, prefix=""):
    """Prints one markdown row per program of each (title, key, names, reference) group, with its ratio
    to the reference; returns the figures by "PREFIX+KEY/NAME" for results JSON."""
    results = {}
    print("| work | program | median | min–max | CPU s | peak RSS MB | vs reference |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for title, key, names, reference in groups:
        ref = load(work, f"{key}.{reference}")[0]
        for name in names:
            med, lo, hi, cpu, peak = load(work, f"{key}.{name}")
            results[f"{prefix}{key}/{name}"] = {"median": med, "ratio": med / ref, "reference": reference, "cpu_s": cpu, "rss_mb": peak / 1024}
            print(f"| {title} | {name} | {med:,.0f} | {lo:,.0f}–{hi:,.0f} | {cpu:.2f} | {peak/1024:.1f} | {med/ref:.2f}× {reference} |")
    return results
