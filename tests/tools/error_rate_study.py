#!/usr/bin/python3
"""Which bound judges an error-rate max when errors come in bursts.

The study behind docs/statistics.md, "The error rate's bound" (issue 39,
finding 7): runs of K windows of about N requests whose errors arrive as a
Poisson stream of bursts, each failing `b` requests at once; the share of runs
that fail a 0.1 % max under each candidate rule. NumPy and SciPy (Debian's
python3-scipy), seeded; under a minute. tests/error_rate_test.cc checks the
chosen rule through the real judge().

    /usr/bin/python3 tests/tools/error_rate_study.py [K N]

`warn [K N]` instead compares the levels a warn could take (issue 46): the
share of runs whose chosen bound is past the max at each one-sided level, for
bursts everywhere and for a healthy service whose errors come in a few bad
windows (a share of the windows, drawn at random, holds them all).
"""
import sys

import numpy as np
from scipy import stats

MAX = 0.001
RUNS = 20000
LEVEL = 0.975  # one-sided, the run's 95 %


def wilson(f, n, z):
    p = f / n
    centre = p + z * z / (2 * n)
    spread = z * np.sqrt(np.maximum(p * (1 - p) / n + z * z / (4 * n * n), 0))
    return np.maximum((centre - spread) / (1 + z * z / n), 0)


def wilson_cc(f, n, z):
    p = f / n
    root = np.sqrt(np.maximum(z * z - 2 - 1 / n + 4 * p * (n * (1 - p) + 1), 0))
    return np.where(f > 0, np.maximum((2 * n * p + z * z - 1 - z * root) / (2 * (n + z * z)), 0), 0)


def dispersion(a, f):
    k = a.shape[1]
    rate = f.sum(1) / a.sum(1)
    expected = a * rate[:, None]
    variance = expected * (1 - rate[:, None])
    with np.errstate(divide="ignore", invalid="ignore"):
        chi = np.where(variance > 0, (f - expected) ** 2 / variance, 0).sum(1)
    return np.maximum(1, chi / (k - 1))


def rules(a, f):
    k = a.shape[1]
    A, F = a.sum(1), f.sum(1)
    z, t = stats.norm.ppf(LEVEL), stats.t.ppf(LEVEL, k - 1)
    phi = dispersion(a, f)
    rates = f / a
    over = F / A > MAX
    median_over = np.median(rates, axis=1) > MAX
    return {
        "old (median, Wilson)": median_over & (wilson(F, A, z) > MAX),
        "Wilson": over & (wilson(F, A, z) > MAX),
        "quasi z": over & (wilson(F / phi, A / phi, z) > MAX),
        "quasi t": over & (wilson(F / phi, A / phi, t) > MAX),
        "quasi t cc": over & (wilson_cc(F / phi, A / phi, t) > MAX),
        "t on rates": over & (rates.mean(1) - t * rates.std(1, ddof=1) / np.sqrt(k) > MAX),
    }


def chosen(a, f, level):
    """The chosen bound (quasi, t, corrected) past the max at a one-sided level."""
    k = a.shape[1]
    A, F = a.sum(1), f.sum(1)
    phi = dispersion(a, f)
    return (F / A > MAX) & (wilson_cc(F / phi, A / phi, stats.t.ppf(level, k - 1)) > MAX)


def warn_levels(k, n):
    rng = np.random.default_rng(46)
    levels = [0.975, 0.95, 0.90, 0.80]
    print(f"K={k} N~{n}  rate  burst windows | over the max | "
          + " | ".join(f"past at {lv * 100:g}%" for lv in levels))
    models = [(0.0005, 1, 0.02), (0.0005, 8, 0.02), (0.0008, 1, 0.04), (0.0005, 8, 1),
              (0.0008, 8, 1), (0.0008, 16, 1), (0.001, 1, 1), (0.001, 8, 1), (0.001, 16, 1),
              (0.0015, 1, 1), (0.002, 8, 1), (0.003, 16, 1)]
    for rate, burst, share in models:
        a = rng.integers(int(n * 0.8), int(n * 1.2) + 1, size=(RUNS, k)).astype(float)
        bad = rng.random((RUNS, k)) < share
        f = np.where(bad, np.minimum(rng.poisson(a * rate / share / burst) * burst, a), 0)
        over = (f.sum(1) / a.sum(1) > MAX).mean()
        print(f"{'':13} {rate * 100:.2f}% {burst:5d} {share * 100:6.0f}% | {over * 100:12.1f} | "
              + " | ".join(f"{chosen(a, f, lv).mean() * 100:{len(f'past at {lv * 100:g}%')}.1f}"
                           for lv in levels))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "warn":
        args = sys.argv[2:]
        warn_levels(*((int(args[0]), int(args[1])) if len(args) > 1 else (12, 3000)))
        return
    k, n = (int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) > 2 else (12, 3000)
    rng = np.random.default_rng(39)
    header = None
    for rate in [0.0005, 0.0008, 0.001, 0.0015, 0.003]:
        for burst in [1, 8, 16]:
            a = rng.integers(int(n * 0.8), int(n * 1.2) + 1, size=(RUNS, k)).astype(float)
            f = np.minimum(rng.poisson(a * rate / burst) * burst, a)
            fails = {name: v.mean() for name, v in rules(a, f).items()}
            if header is None:
                header = f"K={k} N~{n}  rate  burst | " + " | ".join(fails)
                print(header)
            print(f"{'':13} {rate * 100:.2f}% {burst:5d} | "
                  + " | ".join(f"{v * 100:{len(name)}.1f}" for name, v in fails.items()))


if __name__ == "__main__":
    main()
