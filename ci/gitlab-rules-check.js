// Checks the GitLab templates as GitLab itself would build pipelines from them,
// which gitlab-ci-local does not fully model (it lists rule-less jobs in merge
// request pipelines; GitLab leaves them out). For each event (a push to the
// default branch, to another branch with and without an open merge request, a
// tag) and each of the project's two workflow choices (GitLab's default branch
// pipelines; merge request pipelines once one is open), the pipelines GitLab
// creates are built from every job's rules as documented
// (https://docs.gitlab.com/ci/jobs/job_rules/): the first matching rule decides,
// `when: never` excludes, no match excludes, a job without rules runs in branch
// and tag pipelines only (in every pipeline under workflow:rules), and a
// pipeline without jobs is not created. Then: the project's own jobs (rule-less,
// branch-only, push-only, `only: branches`) run exactly as they did before the
// include; each gating job runs once per event; a merge request pipeline with
// a template job holds the project's tests; every `needs` is met. Also: no
// workflow: and no top-level `stages:`, only GitLab's default stages, the cache
// shared with unprotected branches, artifacts kept on failure, the Premium
// widgets marked, nothing compiled, no python3, and each file valid against
// GitLab's CI schema (ci.json, as gitlab-ci-local bundles it).
// Usage: NODE_PATH=<gitlab-ci-local's node_modules> node ci/gitlab-rules-check.js FILE... SCHEMA
"use strict";
const fs = require("fs");
const yaml = require("js-yaml");
const Ajv = require("ajv");

const args = process.argv.slice(2);
const schemaPath = args.pop();
let failures = 0;
function check(ok, message) {
  if (!ok) {
    console.error(`gitlab-rules-check: ${message}`);
    failures++;
  }
}

const KEYWORDS = new Set([
  "stages", "variables", "include", "default", "workflow", "image", "services",
  "before_script", "after_script", "cache",
]);

// The variables GitLab predefines for each kind of pipeline (those the rules read).
const PIPELINES = {
  "push to the default branch": {
    CI_PIPELINE_SOURCE: "push", CI_COMMIT_BRANCH: "main", CI_DEFAULT_BRANCH: "main",
    CI_COMMIT_REF_NAME: "main",
  },
  "push to a branch": {
    CI_PIPELINE_SOURCE: "push", CI_COMMIT_BRANCH: "feature", CI_DEFAULT_BRANCH: "main",
    CI_COMMIT_REF_NAME: "feature",
  },
  "push to a branch with an open merge request": {
    CI_PIPELINE_SOURCE: "push", CI_COMMIT_BRANCH: "feature", CI_DEFAULT_BRANCH: "main",
    CI_COMMIT_REF_NAME: "feature", CI_OPEN_MERGE_REQUESTS: "group/project!1",
  },
  "merge request": {
    CI_PIPELINE_SOURCE: "merge_request_event", CI_DEFAULT_BRANCH: "main",
    CI_COMMIT_REF_NAME: "feature", CI_MERGE_REQUEST_TARGET_BRANCH_NAME: "main",
    CI_MERGE_REQUEST_SOURCE_BRANCH_NAME: "feature", CI_MERGE_REQUEST_IID: "1",
  },
  "tag": {
    CI_PIPELINE_SOURCE: "push", CI_COMMIT_TAG: "v1.0.0", CI_DEFAULT_BRANCH: "main",
    CI_COMMIT_REF_NAME: "v1.0.0",
  },
};

// One operand: $VAR, "text" or 'text', null.
function operand(text, vars) {
  text = text.trim();
  let m = text.match(/^\$\{?(\w+)\}?$/);
  if (m) return vars[m[1]] ?? null;
  m = text.match(/^"(.*)"$|^'(.*)'$/);
  if (m) return m[1] ?? m[2];
  if (text === "null") return null;
  throw new Error(`unsupported operand: ${text}`);
}

// GitLab's `if:` without parentheses: && binds tighter than ||; a lone
// variable is true when defined and not empty.
function evaluate(expression, vars) {
  return expression.split("||").some((alternative) =>
    alternative.split("&&").every((term) => {
      const m = term.match(/^(.*?)(==|!=)(.*)$/);
      if (!m) {
        const value = operand(term, vars);
        return value !== null && value !== "";
      }
      const equal = operand(m[1], vars) === operand(m[3], vars);
      return m[2] === "==" ? equal : !equal;
    }));
}

function resolve(jobs, name, seen = []) {
  const job = jobs[name];
  if (!job || !job.extends) return job;
  if (seen.includes(name)) throw new Error(`extends loop at ${name}`);
  let merged = {};
  for (const parent of [].concat(job.extends)) merged = { ...merged, ...resolve(jobs, parent, [...seen, name]) };
  const own = { ...job };
  delete own.extends;
  return { ...merged, ...own };
}

// The job's `when` in this pipeline, or null when GitLab leaves it out.
// workflowRules: the configuration has workflow:rules (GitLab then drops the
// only/except defaults: a job without rules runs in every pipeline created).
function presence(job, vars, workflowRules) {
  if (job.rules) return firstRule(job.rules, job.when, { ...vars, ...ownVariables(job) });
  if (job.except) throw new Error("except is not modelled");
  const mr = vars.CI_PIPELINE_SOURCE === "merge_request_event";
  if (job.only) {
    const refs = [].concat(job.only);
    const runs = (refs.includes("branches") && !!vars.CI_COMMIT_BRANCH && !mr) ||
      (refs.includes("tags") && !!vars.CI_COMMIT_TAG) || (refs.includes("merge_requests") && mr);
    return runs ? (job.when ?? "on_success") : null;
  }
  // Without rules (and no workflow:rules) a job has only: [branches, tags]:
  // never in a merge request pipeline.
  if (workflowRules) return job.when ?? "on_success";
  return mr ? null : (job.when ?? "on_success");
}

// A job's own variables, which its rules:if reads too.
function ownVariables(job) {
  return Object.fromEntries(Object.entries(job.variables ?? {}).filter(([, v]) => typeof v === "string"));
}

// The rules' `when`: the first matching rule decides; null when none matches or `never`.
function firstRule(rules, defaultWhen, vars) {
  for (const rule of rules) {
    if (rule.changes || rule.exists) throw new Error("rules:changes/exists are not modelled");
    if (rule.if === undefined || evaluate(rule.if, vars)) {
      const when = rule.when ?? defaultWhen ?? "on_success";
      return when === "never" ? null : when;
    }
  }
  return null;
}

function needsOf(job) {
  return (job.needs ?? []).map((n) => (typeof n === "string" ? { job: n } : n));
}

// The including project's own jobs, as GitLab users have them: rule-less
// tests, a branch-only lint (`if: $CI_COMMIT_BRANCH`, like GitLab's stable SAST
// and Secret Detection templates), a push-only job and an `only: branches` one.
const USER_JOBS = {
  "unit-tests": { script: ["true"] },
  "branch-lint": { script: ["true"], rules: [{ if: "$CI_COMMIT_BRANCH" }] },
  "push-only": { script: ["true"], rules: [{ if: '$CI_PIPELINE_SOURCE == "push"' }] },
  "only-branches": { script: ["true"], only: ["branches"] },
};

// The project's two workflow choices (docs/ci.md, "Which pipelines"): GitLab's
// default branch pipelines, and GitLab's switch to merge request pipelines once
// a merge request is open, with the template told so.
const WORKFLOWS = {
  "branch pipelines (no workflow:)": { workflow: undefined, variables: {} },
  "merge request pipelines": {
    workflow: [
      { if: '$CI_PIPELINE_SOURCE == "merge_request_event"' },
      { if: "$CI_COMMIT_BRANCH && $CI_OPEN_MERGE_REQUESTS", when: "never" },
      { if: "$CI_COMMIT_BRANCH" },
      { if: "$CI_COMMIT_TAG" },
    ],
    variables: { PERFGATE_MR_PIPELINES: "true" },
  },
};

// What GitLab may create for each event: a push to a branch with an open merge
// request makes a branch pipeline and, when any job matches, a merge request one.
const EVENTS = {
  "push to the default branch": ["push to the default branch"],
  "push to a branch": ["push to a branch"],
  "push to a branch with an open merge request": ["push to a branch with an open merge request", "merge request"],
  "tag": ["tag"],
};

// The pipelines created from these jobs: each the workflow allows and that has
// a job (GitLab creates no empty pipeline), with its jobs' `when`.
function pipelinesOf(kinds, jobs, workflow, globals) {
  const created = [];
  for (const kind of kinds) {
    const vars = { ...PIPELINES[kind], ...globals };
    if (workflow && firstRule(workflow, undefined, vars) === null) continue;
    const present = {};
    for (const [name, job] of Object.entries(jobs)) {
      const when = presence(job, vars, !!workflow);
      if (when !== null) present[name] = when;
    }
    if (Object.keys(present).length) created.push({ kind, jobs: present });
  }
  return created;
}

const schema = JSON.parse(fs.readFileSync(schemaPath, "utf8"));
const ajv = new Ajv({ allErrors: true, strict: false, allowUnionTypes: true, logger: false });
const validate = ajv.compile(schema);

for (const file of args) {
  const text = fs.readFileSync(file, "utf8");
  const doc = yaml.load(text);
  check(validate(doc), `${file}: not valid against GitLab's ci.json: ${ajv.errorsText(validate.errors)}`);
  check(!("stages" in doc), `${file}: a top-level stages: replaces the including project's`);
  for (const forbidden of ["python", "install-deps.sh", "build.sh", "build/perfgate"])
    check(!text.includes(forbidden), `${file}: mentions ${forbidden}`);
  for (const widget of ["load_performance", "metrics"])
    check(new RegExp(`GitLab Premium[^\\n]*\\n\\s*${widget}:`).test(text),
          `${file}: the ${widget} widget is not marked "GitLab Premium"`);

  const jobs = {};
  for (const [name, value] of Object.entries(doc))
    if (!KEYWORDS.has(name) && value && typeof value === "object") jobs[name] = value;
  const visible = Object.keys(jobs).filter((name) => !name.startsWith("."));
  const resolved = Object.fromEntries(visible.map((name) => [name, resolve(jobs, name)]));

  for (const [name, job] of Object.entries(resolved)) {
    check([".pre", "build", "test", "deploy", ".post"].includes(job.stage ?? "test"),
          `${file}: ${name} is in stage ${job.stage}, not one of GitLab's default stages`);
    check(job.artifacts === undefined || job.artifacts.when === "always" || !job.artifacts.paths,
          `${file}: ${name} keeps its artifacts only on success`);
    if (job.cache) {
      check(job.cache.unprotect === true,
            `${file}: ${name}'s cache is not shared with unprotected branches (cache:unprotect)`);
      check(typeof job.resource_group === "string" && job.resource_group.length > 0,
            `${file}: ${name} pushes a cache without a resource_group`);
    }
    for (const need of needsOf(job))
      if (resolved[need.job]?.artifacts?.paths && need.artifacts === false)
        check(false, `${file}: ${name} needs ${need.job} without its artifacts`);
  }

  // An accept job works on its gating job's cached store: the same cache key (the
  // gating job's name slug, as GitLab makes it for a plain job name).
  for (const [name, job] of Object.entries(resolved).filter(([n]) => n.endsWith("-accept"))) {
    const gate = job.variables?.PERFGATE_GATE_JOB;
    check(gate in resolved, `${file}: ${name}'s PERFGATE_GATE_JOB names no job (${gate})`);
    const gateKey = String(resolved[gate]?.cache?.key ?? "").replace("$CI_JOB_NAME_SLUG", gate);
    const ownKey = String(job.cache?.key ?? "").replace("$PERFGATE_GATE_JOB", gate);
    check(gateKey !== "" && gateKey === ownKey,
          `${file}: ${name}'s cache key ${ownKey} is not ${gate}'s ${gateKey}`);
    check(job.cache?.policy === "pull-push", `${file}: ${name} does not push the accepted store`);
    const when = presence(job, PIPELINES["push to the default branch"], !!doc.workflow?.rules);
    check(when === "manual", `${file}: ${name} is ${when} on the default branch, not manual`);
  }

  check(!("workflow" in doc), `${file}: a workflow: decides for the including project's jobs too`);
  const gating = visible.filter((name) => !name.endsWith("-accept"));
  for (const [choice, config] of Object.entries(WORKFLOWS)) {
    // The project's own workflow, else (GitLab merges included files) the template's.
    const workflow = config.workflow ?? doc.workflow?.rules;
    for (const [event, candidates] of Object.entries(EVENTS)) {
      const what = `${file}: ${choice}, ${event}`;
      const before = pipelinesOf(candidates, USER_JOBS, config.workflow, config.variables);
      const after = pipelinesOf(candidates, { ...USER_JOBS, ...resolved }, workflow, config.variables);
      // Including the template must not change which of the project's jobs run.
      const users = (pipelines) => [...new Set(pipelines.flatMap((p) => Object.keys(p.jobs)))]
        .filter((name) => name in USER_JOBS).sort();
      check(JSON.stringify(users(before)) === JSON.stringify(users(after)),
            `${what}: the project's jobs [${users(before)}] became [${users(after)}]`);
      // Each gating job once per event (a tag: never), so that a change is judged
      // once; a merge request pipeline holding it (the one "Pipelines must
      // succeed" checks) holds the project's rule-less tests too.
      for (const name of gating) {
        const runs = after.filter((p) => name in p.jobs).length;
        check(runs === (event === "tag" ? 0 : 1), `${what}: ${name} runs in ${runs} pipelines`);
      }
      for (const p of after) {
        if (p.kind === "merge request" && gating.some((name) => name in p.jobs))
          check("unit-tests" in p.jobs, `${what}: the merge request pipeline holds [${Object.keys(p.jobs)}], not the project's rule-less tests`);
        for (const name of Object.keys(p.jobs).filter((n) => n in resolved))
          for (const need of needsOf(resolved[name]))
            check(need.optional || need.job in p.jobs,
                  `${what}: in the ${p.kind} pipeline ${name} needs ${need.job}, which is not in it`);
        // The accept job changes the default branch's store: there only, by hand.
        for (const name of Object.keys(p.jobs).filter((n) => n.endsWith("-accept")))
          check(p.kind === "push to the default branch" && p.jobs[name] === "manual",
                `${what}: ${name} is ${p.jobs[name]} in the ${p.kind} pipeline`);
      }
      console.log(`${what}: ${after.map((p) => `${p.kind} [${Object.entries(p.jobs).map(([n, w]) => `${n} (${w})`).join(", ")}]`).join("; ") || "no pipeline"}`);
    }
  }
}
if (failures) process.exit(1);
console.log("gitlab-rules-check: the templates' rules and needs hold in every kind of pipeline");
