#!/usr/bin/env python3
"""Turns perfgate's JSON result into GitHub workflow commands.

A failing metric becomes an ::error, a warning one and a saturated run a
::warning, so they show on the pull request's checks page. Standard library only:
the runner needs no jq and no pip install.
Usage: annotate.py RESULT.json
"""
import json
import sys


def escape_data(text):
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    # Other control characters could colour or rewrite the log: shown as U+FFFD.
    return "".join("\ufffd" if ord(c) < 0x20 or ord(c) == 0x7F else c for c in text)


def escape_property(text):
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(level, title, message):
    return f"::{level} title={escape_property(title)}::{escape_data(message)}"


def annotations(result):
    profile = (result.get("profile") or {}).get("name") or "perfgate"
    if result.get("verdict") == "error":
        yield command("error", f"perfgate {profile}: error", result.get("error") or "no verdict")
        return
    for key, metric in sorted((result.get("metrics") or {}).items()):
        level = {"fail": "error", "warn": "warning"}.get(metric.get("verdict"))
        if level and metric.get("gated"):
            yield command(level, f"perfgate {profile}: {key}", metric.get("message") or key)
    saturation = result.get("saturation") or {}
    if saturation.get("saturated"):
        reasons = "; ".join(saturation.get("reasons") or []) or "load machine saturated"
        yield command("warning", f"perfgate {profile}: saturated",
                      f"inconclusive, the load machine was the bottleneck: {reasons}")


def main(argv):
    if len(argv) != 2:
        print("usage: annotate.py RESULT.json", file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        for line in annotations(json.load(f)):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
