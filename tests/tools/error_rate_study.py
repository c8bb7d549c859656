#!/usr/bin/python3
"""Which bound judges an error-rate max when errors come in bursts.

The study behind docs/statistics.md, "The error rate's bound" (issue 39,
finding 7): runs of K windows of about N requests whose errors arrive as a
Poisson stream of bursts, each failing `b` requests at once; the share of runs
that fail a 0.1 % max under each candidate rule. NumPy and SciPy (Debian's
python3-scipy), seeded; under a minute. tests/error_rate_test.cc checks the
chosen rule through the real judge().

    /usr/bin/python3 tests/tools/error_rate_study.py [K N]
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


def main():
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
