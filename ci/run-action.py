#!/usr/bin/env python3
"""Runs a composite action's steps as GitHub's runner does, in a chroot.

Test tooling, not part of the action: like GitHub's runner, which evaluates the
expressions outside a job's container and runs each `run:` step inside it, this
evaluates `${{ }}` and `if:` here and runs each step with
`bash --noprofile --norc -eo pipefail` inside ROOT (ci/package-test.sh's minimal
Debian root: no python3, no compiler). Every step gets fresh GITHUB_OUTPUT,
GITHUB_ENV and GITHUB_STEP_SUMMARY files and the GITHUB_* variables; its outputs,
exported variables, summary and workflow commands are gathered as the runner
gathers them. `uses:` steps are stubbed: actions/cache/restore and save keep
entries in STATE/cache (GitHub's rules: an exact key or the newest entry whose key
starts with a restore key; a key is never saved twice; a run reads only entries
saved from its own ref, its pull request's base branch or the default branch,
in that order), actions/upload-artifact
copies to STATE/artifacts (a name is uploaded once), anything else is skipped.

Usage: run-action.py ROOT ACTION_DIR STATE OUT [--event NAME] [--ref-name R]
         [--base-ref B] [--queue-base B] [--queue-base-sha SHA]
         [--head-repository OWNER/NAME]
         [--run-id N] [--input NAME=VALUE]...
         [--host --workspace DIR --temp DIR --path DIR --skip-step NAME]
ACTION_DIR, STATE and the workspace (ROOT/gh/workspace) are paths in the root.
With --host (ROOT is then ignored) the steps run on this machine, not in a chroot:
ACTION_DIR, STATE, --workspace and --temp are host paths, --path comes first on
PATH (a build directory's perfgate) and --skip-step leaves a step out (the .deb's
install): ci/github-events-test.sh runs every GitHub event so.
The event payload (GITHUB_EVENT_PATH, github.event) is GitHub's shape for the
event: a schedule's has no repository, a merge group's names its base_ref.
Writes OUT/outputs (NAME=VALUE), OUT/annotations, OUT/summary.md, OUT/log and
OUT/conclusion (success or failure); exits 0 when the action ran at all.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

import yaml

# ---- expressions -------------------------------------------------------------

TOKEN = re.compile(r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>-?\d+(?:\.\d+)?)|"
                   r"(?P<op>==|!=|&&|\|\||!|\(|\)|,)|(?P<name>[A-Za-z_][A-Za-z0-9_.\-]*))")


def tokens(text):
    pos, out = 0, []
    while pos < len(text.rstrip()):
        m = TOKEN.match(text, pos)
        if not m:
            raise ValueError(f"cannot read expression at: {text[pos:]!r}")
        out.append((m.lastgroup, m.group(m.lastgroup)))
        pos = m.end()
    return out


def truthy(value):
    return value not in ("", None, False, 0)


def text_of(value):
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value)


class Expression:
    """GitHub's expression language, as much of it as the action uses."""

    def __init__(self, text, context, status):
        self.toks, self.i, self.ctx, self.status = tokens(text), 0, context, status
        self.uses_status = False

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None)

    def take(self, value=None):
        tok = self.peek()
        if value is not None and tok[1] != value:
            raise ValueError(f"expected {value}, got {tok[1]}")
        self.i += 1
        return tok

    def parse(self):
        value = self.disjunction()
        if self.i != len(self.toks):
            raise ValueError(f"unexpected {self.peek()[1]}")
        return value

    def disjunction(self):
        value = self.conjunction()
        while self.peek()[1] == "||":
            self.take()
            other = self.conjunction()
            value = value if truthy(value) else other
        return value

    def conjunction(self):
        value = self.negation()
        while self.peek()[1] == "&&":
            self.take()
            other = self.negation()
            value = other if truthy(value) else value
        return value

    def negation(self):
        if self.peek()[1] == "!":
            self.take()
            return not truthy(self.negation())
        value = self.primary()
        if self.peek()[1] in ("==", "!="):
            op = self.take()[1]
            same = text_of(value).lower() == text_of(self.primary()).lower()
            return same if op == "==" else not same
        return value

    def primary(self):
        kind, value = self.take()
        if kind == "str":
            return value[1:-1].replace("''", "'")
        if kind == "num":
            return value
        if value == "(":
            inner = self.disjunction()
            self.take(")")
            return inner
        if kind == "name" and self.peek()[1] == "(":
            self.take("(")
            args = []
            while self.peek()[1] != ")":
                args.append(self.disjunction())
                if self.peek()[1] == ",":
                    self.take()
            self.take(")")
            return self.call(value, args)
        if kind == "name":
            return self.lookup(value)
        raise ValueError(f"unexpected {value}")

    def call(self, name, args):
        if name in ("always", "success", "failure", "cancelled"):
            self.uses_status = True
            return {"always": True, "success": self.status == "success",
                    "failure": self.status == "failure", "cancelled": False}[name]
        if name == "fromJSON":
            return json.loads(args[0])
        if name == "contains":
            hay, needle = args
            if isinstance(hay, list):
                return any(text_of(h).lower() == text_of(needle).lower() for h in hay)
            return text_of(needle).lower() in text_of(hay).lower()
        raise ValueError(f"no function {name}() in this harness")

    def lookup(self, path):
        node = self.ctx
        for part in path.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        return node


def evaluate(text, context, status="success"):
    return Expression(text, context, status).parse()


def substitute(text, context):
    if not isinstance(text, str):
        return text_of(text)
    return re.sub(r"\$\{\{(.*?)\}\}", lambda m: text_of(evaluate(m.group(1), context)), text)


def should_run(condition, context, status):
    if condition is None:
        return status == "success"
    text = str(condition).strip()
    if text.startswith("${{") and text.endswith("}}"):
        text = text[3:-2]
    expr = Expression(text, context, status)
    value = truthy(expr.parse())
    return value if expr.uses_status else value and status == "success"


# ---- files the runner reads back ---------------------------------------------

def read_commands_file(path):
    """NAME=VALUE lines and NAME<<DELIMITER blocks (GITHUB_OUTPUT, GITHUB_ENV)."""
    values, lines = {}, open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            block = []
            i += 1
            while lines[i] != delimiter:
                block.append(lines[i])
                i += 1
            values[name] = "\n".join(block)
        elif "=" in line:
            name, value = line.split("=", 1)
            values[name] = value
        i += 1
    return values


class Runner:
    def __init__(self, args):
        self.root, self.state, self.out = ("" if args.host else args.root), args.state, args.out
        self.chroot, self.skip, self.path = not args.host, set(args.skip_step), args.path
        self.action_dir = args.action_dir
        self.action = yaml.safe_load(open(self.host(args.action_dir + "/action.yml")))
        self.workspace = args.workspace
        self.temp = args.temp
        event = event_payload(args)
        self.github = {
            "event_name": args.event, "ref_name": args.ref_name, "base_ref": args.base_ref,
            "head_ref": args.head_ref, "ref": args.ref, "run_id": args.run_id,
            "run_attempt": args.run_attempt, "job": "perfgate", "repository": args.repository,
            "server_url": args.server_url, "action_repository": "", "sha": args.sha,
            "workspace": self.workspace, "event": event, "action_path": self.action_dir}
        self.runner = {"os": "Linux", "temp": self.temp}
        # GitHub's cache scopes a run may read, nearest first.
        self.scopes = [args.ref]
        if args.event == "pull_request" and args.base_ref:
            self.scopes.append(f"refs/heads/{args.base_ref}")
        self.scopes.append(f"refs/heads/{args.default_branch}")
        self.steps, self.env, self.status = {}, {}, "success"
        self.log, self.annotations, self.summary = [], [], ""
        os.makedirs(self.host(self.temp) + "/home", exist_ok=True)
        json.dump(event, open(self.host(self.temp + "/event.json"), "w"))
        given = dict(item.split("=", 1) for item in args.input)
        context = self.context({})
        self.inputs = {}
        for name, spec in self.action.get("inputs", {}).items():
            default = substitute(str(spec.get("default", "")), context)
            self.inputs[name] = given.pop(name, default)
        if given:
            raise SystemExit(f"run-action: the action has no input {', '.join(given)}")

    def host(self, path):
        return self.root + path

    def context(self, env):
        return {"inputs": getattr(self, "inputs", {}), "github": self.github,
                "runner": self.runner, "steps": self.steps, "env": env}

    def base_env(self):
        g = self.github
        env = {"PATH": "".join(p + ":" for p in self.path) +
                       "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
               # On the host, a home of its own: git config --global stays the run's.
               "HOME": self.temp + "/home" if not self.chroot else "/root",
               "CI": "true", "GITHUB_ACTIONS": "true",
               "GITHUB_EVENT_NAME": g["event_name"], "GITHUB_REF_NAME": g["ref_name"],
               "GITHUB_BASE_REF": g["base_ref"], "GITHUB_HEAD_REF": g["head_ref"],
               "GITHUB_REF": g["ref"], "GITHUB_SHA": g["sha"], "GITHUB_RUN_ID": g["run_id"],
               "GITHUB_RUN_ATTEMPT": g["run_attempt"], "GITHUB_JOB": g["job"],
               "GITHUB_REPOSITORY": g["repository"], "GITHUB_SERVER_URL": g["server_url"],
               "GITHUB_WORKSPACE": self.workspace, "GITHUB_ACTION_PATH": self.action_dir,
               "GITHUB_EVENT_PATH": self.temp + "/event.json", "RUNNER_OS": "Linux",
               "RUNNER_TEMP": self.temp}
        env.update(self.env)
        return env

    def run(self):
        for index, step in enumerate(self.action["runs"]["steps"]):
            name = step.get("name") or step.get("uses") or f"step {index}"
            record = {"outputs": {}, "outcome": "skipped", "conclusion": "skipped"}
            context = self.context(self.env)
            if name in self.skip:
                self.log.append(f"{name}: left out (--skip-step)")
            elif should_run(step.get("if"), context, self.status):
                outcome = self.run_step(index, step, context, record["outputs"])
                record["outcome"] = record["conclusion"] = outcome
                if outcome == "failure":
                    self.status = "failure"
            self.log.append(f"== {name}: {record['outcome']}")
            if "id" in step:
                self.steps[step["id"]] = record
        context = self.context(self.env)
        outputs = {k: substitute(v["value"], context)
                   for k, v in self.action.get("outputs", {}).items()}
        self.write(outputs)

    def run_step(self, index, step, context, outputs):
        env = self.base_env()
        env.update({k: substitute(v, context) for k, v in step.get("env", {}).items()})
        if "uses" in step:
            with_ = {k: substitute(v, context) for k, v in step.get("with", {}).items()}
            return self.stub(step["uses"], with_, outputs)
        files = {}
        for var in ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_STEP_SUMMARY", "GITHUB_PATH"):
            files[var] = f"{self.temp}/{var.lower()}-{index}"
            open(self.host(files[var]), "w").close()
            env[var] = files[var]
        script = f"{self.temp}/step-{index}.sh"
        with open(self.host(script), "w") as f:
            f.write(substitute(step["run"], context))
        assignments = [f"{k}={v}" for k, v in env.items()]
        command = ["/usr/bin/env", "-i", *assignments, "/bin/sh", "-c",
                   'cd "$GITHUB_WORKSPACE" && exec bash --noprofile --norc -eo pipefail "$0"',
                   script]
        if self.chroot:
            command = ["chroot", self.root, *command]
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, errors="replace", timeout=600)
        for line in done.stdout.splitlines():
            self.log.append(line)
            if re.match(r"^::(error|warning|notice)( [^:]*)?::", line):
                self.annotations.append(line)
        outputs.update(read_commands_file(self.host(files["GITHUB_OUTPUT"])))
        self.env.update(read_commands_file(self.host(files["GITHUB_ENV"])))
        self.summary += open(self.host(files["GITHUB_STEP_SUMMARY"]), encoding="utf-8").read()
        return "success" if done.returncode == 0 else "failure"

    # ---- uses: stubs ---------------------------------------------------------

    def stub(self, uses, with_, outputs):
        action = uses.split("@")[0]
        path = os.path.join(self.host(self.workspace), with_.get("path", ""))
        cache = self.host(self.state + "/cache")
        os.makedirs(cache, exist_ok=True)
        if action == "actions/cache/restore":
            entries = sorted(os.listdir(cache), key=lambda e: os.stat(f"{cache}/{e}").st_mtime_ns,
                             reverse=True)
            scope = {e: open(f"{cache}/{e}/scope").read() for e in entries}
            prefixes = [k.strip() for k in with_.get("restore-keys", "").splitlines() if k.strip()]
            match = next((e for s in self.scopes for e in entries
                          if scope[e] == s and e == with_["key"]), None) or next(
                (e for p in prefixes for s in self.scopes for e in entries
                 if scope[e] == s and e.startswith(p)), None)
            outputs["cache-hit"] = text_of(match == with_["key"])
            outputs["cache-matched-key"] = match or ""
            if match:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                shutil.copy2(f"{cache}/{match}/file", path)
            self.log.append(f"cache restore: {match or 'no entry'} for {with_['key']}")
            return "success"
        if action == "actions/cache/save":
            entry = f"{cache}/{with_['key']}"
            if os.path.exists(entry):
                self.log.append(f"cache save: {with_['key']} exists already (keys are immutable)")
                self.annotations.append(f"::warning::Unable to reserve cache {with_['key']}")
                return "success"
            os.makedirs(entry)
            shutil.copy2(path, f"{entry}/file")
            with open(f"{entry}/scope", "w") as f:
                f.write(self.github["ref"])
            self.log.append(f"cache save: {with_['key']}")
            return "success"
        if action == "actions/upload-artifact":
            target = self.host(self.state + "/artifacts/" + with_["name"])
            if os.path.exists(target):
                self.log.append(f"upload-artifact: {with_['name']} exists already")
                return "failure"
            if os.path.isdir(path):
                shutil.copytree(path, target)
            elif os.path.exists(path):
                os.makedirs(target)
                shutil.copy2(path, target)
            self.log.append(f"upload-artifact: {with_['name']}")
            return "success"
        self.log.append(f"{uses}: skipped (not run by this harness)")
        return "success"

    def write(self, outputs):
        os.makedirs(self.out, exist_ok=True)
        with open(f"{self.out}/outputs", "w") as f:
            f.writelines(f"{k}={v}\n" for k, v in outputs.items())
        for name, text in (("annotations", "".join(a + "\n" for a in self.annotations)),
                           ("summary.md", self.summary), ("conclusion", self.status + "\n"),
                           ("log", "\n".join(self.log) + "\n")):
            with open(f"{self.out}/{name}", "w") as f:
                f.write(text)


def event_payload(args):
    """The parts of GitHub's webhook payload the action reads, per event."""
    if args.event == "schedule":
        return {"schedule": "17 3 * * *"}  # GitHub's schedule payload has no repository
    event = {"repository": {"default_branch": args.default_branch}}
    if args.event == "merge_group":
        target = args.queue_base or args.default_branch
        event["merge_group"] = {"base_ref": f"refs/heads/{target}", "base_sha": args.queue_base_sha,
                                "head_ref": f"refs/heads/{args.ref_name}"}
    if args.event in ("pull_request", "pull_request_target"):
        head_repo = args.head_repository or args.repository
        event["pull_request"] = {
            "base": {"ref": args.base_ref, "repo": {"full_name": args.repository}},
            "head": {"ref": args.head_ref, "repo": {"full_name": head_repo}}}
    if args.event == "workflow_dispatch":
        event["inputs"] = {}
    return event


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("root")
    p.add_argument("action_dir")
    p.add_argument("state")
    p.add_argument("out")
    p.add_argument("--event", default="push")
    p.add_argument("--ref-name", default="main")
    p.add_argument("--ref", default="refs/heads/main")
    p.add_argument("--base-ref", default="")
    p.add_argument("--head-ref", default="")
    p.add_argument("--run-id", default="1")
    p.add_argument("--run-attempt", default="1")
    p.add_argument("--sha", default="0" * 40)
    p.add_argument("--repository", default="owner/perfgate")
    p.add_argument("--server-url", default="file:///gh/releases")
    p.add_argument("--input", action="append", default=[])
    p.add_argument("--default-branch", default="main", help="the repository's, in the event")
    p.add_argument("--queue-base", default="", help="a merge group's target branch (default: the default branch)")
    p.add_argument("--queue-base-sha", default="", help="a merge group's base commit")
    p.add_argument("--head-repository", default="", help="a pull request's head repository (a fork's)")
    p.add_argument("--host", action="store_true", help="no chroot: run the steps here")
    p.add_argument("--workspace", default="/gh/workspace")
    p.add_argument("--temp", default="/gh/temp")
    p.add_argument("--path", action="append", default=[], help="put first on PATH")
    p.add_argument("--skip-step", action="append", default=[], help="a step's name to leave out")
    args = p.parse_args()
    args.root = os.path.abspath(args.root)
    Runner(args).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
