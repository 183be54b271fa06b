#!/usr/bin/env bash
# The gate step of action.yml: run the gate, print one annotation per finding, put report.md
# in the job summary and the exit status in the step's outputs. Runs anywhere the GitHub
# variables point to files (GITHUB_OUTPUT, GITHUB_STEP_SUMMARY), so the tests run it too.
# Inputs (environment): GATE_FILE, ARTIFACTS, K8S_VERSION, CLUSTER, SHARD (K/N), FULL
# ("true": --full) (all but the first two optional).
set -uo pipefail
: "${GATE_FILE:?GATE_FILE: the gate file to run}"
: "${ARTIFACTS:=artifacts/gate}"
: "${GITHUB_OUTPUT:?GITHUB_OUTPUT: the step-outputs file (set by GitHub Actions)}"
: "${GITHUB_STEP_SUMMARY:?GITHUB_STEP_SUMMARY: the job-summary file (set by GitHub Actions)}"
args=(gate "$GATE_FILE" --artifacts "$ARTIFACTS" --annotations github)
[ -n "${K8S_VERSION:-}" ] && args+=(--k8s-version "$K8S_VERSION")
[ -n "${CLUSTER:-}" ] && args+=(--cluster "$CLUSTER")
[ -n "${SHARD:-}" ] && args+=(--shard "$SHARD")
[ "${FULL:-false}" = true ] && args+=(--full)
python -m crdharness "${args[@]}"
code=$?
# One report per Kubernetes version the gate file lists (k8s-*/), or one at the top.
found=0
while IFS= read -r report; do
  cat "$report" >> "$GITHUB_STEP_SUMMARY"
  printf '\n' >> "$GITHUB_STEP_SUMMARY"
  found=1
done < <(find "$ARTIFACTS" -name report.md | sort)
if [ "$found" = 0 ]; then
  printf '# Upgrade gate: no report\n\nThe gate could not run (exit status %s); see the log.\n' \
    "$code" >> "$GITHUB_STEP_SUMMARY"
fi
echo "exit-code=$code" >> "$GITHUB_OUTPUT"
verdict=$(case "$code" in 0) echo pass;; 1) echo fail;; 2) echo not-proven;; *) echo not-run;; esac)
echo "verdict=$verdict" >> "$GITHUB_OUTPUT"
# One upload per shard (an artifact's name may not hold "/"): crdharness-gate-report-1-of-4.
echo "artifact-name=crdharness-gate-report${SHARD:+-${SHARD//\//-of-}}" >> "$GITHUB_OUTPUT"
exit 0  # the action's last step fails the job, after the report is uploaded
