#!/bin/bash
# Jenkins builder: one Beaker job per scenario in SCENARIOS against the repo the previous step made.
# Any failed submission fails the build (pipefail through tee); ids and rendered jobs are archived.
set -o errexit -o nounset -o pipefail
OUT="${WORKSPACE}/out"
ARGS=(--repo "$(<"${OUT}/repo-url.txt")" --host "${GENERATOR_HOST}" --host "${DUT_HOST}"
    --distro "${DISTRO}" --scenario "${SCENARIOS}" --tag "${JOB_NAME} #${BUILD_NUMBER}"
    --ids-file "${OUT}/job-ids.json" --job-xml-dir "${OUT}/beaker-jobs")
if [[ -n "${BASELINE:-}" ]]; then
    ARGS+=(--baseline "${BASELINE}")
fi
if [[ -n "${RESERVE_HOURS:-}" ]]; then
    ARGS+=(--reserve "${RESERVE_HOURS}")
fi
"${WORKSPACE}/jenkins/scripts/submit.sh" "${ARGS[@]}" | tee "${OUT}/job-ids.txt"
