// Checks the GitLab templates as GitLab itself would build pipelines from them,
// which gitlab-ci-local does not fully model (it lists rule-less jobs in merge
// request pipelines; GitLab leaves them out). For each kind of pipeline (push
// to the default branch, to another branch with and without an open merge
// request, a merge request, a tag), every job's rules are evaluated as
// documented (https://docs.gitlab.com/ci/jobs/job_rules/): the first matching
// rule decides, `when: never` excludes, no match excludes, and a job without
// rules or only/except runs in branch and tag pipelines only. Then every
// `needs` must name a job in the same pipeline, and each pipeline the
// templates' jobs run in runs the including project's rule-less jobs as well. Also: no top-level `stages:`,
// only GitLab's default stages, the cache shared with unprotected branches,
// artifacts kept on failure, the Premium widgets marked, nothing compiled,
// no python3, and each file valid against GitLab's CI schema (ci.json, as
// gitlab-ci-local bundles it).
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
// workflowRules: the file defines workflow:rules (GitLab then drops the
// only/except defaults: a job without rules runs in every pipeline created).
function presence(job, vars, workflowRules) {
  if (!job.rules) {
    if (job.only || job.except) throw new Error("only/except are not modelled");
    // Without rules (and no workflow:rules) a job has only: [branches, tags]:
    // never in a merge request pipeline.
    if (workflowRules) return job.when ?? "on_success";
    return vars.CI_PIPELINE_SOURCE === "merge_request_event" ? null : (job.when ?? "on_success");
  }
  return firstRule(job.rules, job.when, vars);
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

  // The including project's own job, without rules (as most projects' tests are).
  const USER_JOB = "user-tests";
  const workflowRules = doc.workflow?.rules;
  for (const [pipeline, vars] of Object.entries(PIPELINES)) {
    const present = {};
    // workflow:rules decide whether GitLab creates this pipeline at all.
    const created = !workflowRules || firstRule(workflowRules, undefined, vars) !== null;
    for (const [name, job] of Object.entries(created ? resolved : {})) {
      const when = presence(job, vars, !!workflowRules);
      if (when !== null) present[name] = when;
    }
    // Including the template must not ungate the project's own tests: a pipeline
    // the template's jobs run in (a merge request's, which "Pipelines must
    // succeed" checks) must run the project's rule-less jobs too.
    const userRuns = created && presence({ script: ["true"] }, vars, !!workflowRules) !== null;
    check(Object.keys(present).length === 0 || userRuns,
          `${file}: a ${pipeline} pipeline runs [${Object.keys(present)}] but not the project's jobs without rules (${USER_JOB})`);
    for (const name of Object.keys(present))
      for (const need of needsOf(resolved[name]))
        check(need.optional || need.job in present,
              `${file}: in a ${pipeline} pipeline ${name} needs ${need.job}, which is not in it`);
    // The accept job (an intended regression's new baseline) changes the default
    // branch's store: on the default branch only, and only by hand.
    const gating = visible.filter((name) => !name.endsWith("-accept"));
    const expected = {
      "push to the default branch": visible,
      "push to a branch": gating,
      "push to a branch with an open merge request": [],  // the merge request pipeline runs them
      "merge request": gating,
      "tag": [],
    }[pipeline];
    check(JSON.stringify(Object.keys(present).sort()) === JSON.stringify([...expected].sort()),
          `${file}: a ${pipeline} pipeline has [${Object.keys(present)}], expected [${expected}]`);
    console.log(`${file}: ${pipeline}: ${Object.entries(present).map(([n, w]) => `${n} (${w})`).join(", ") || "no jobs"}`);
  }
}
if (failures) process.exit(1);
console.log("gitlab-rules-check: the templates' rules and needs hold in every kind of pipeline");
