#!/bin/bash
# Jenkins builder: one Beaker job per scenario in SCENARIOS against the repo the previous step made.
# Any failed submission fails the build (pipefail through tee); ids and rendered jobs are archived.
set -o errexit -o nounset -o pipefail
OUT="${WORKSPACE}/out"
if [[ -e "${OUT}/not-in-tag" ]]; then
    echo "submit: nothing submitted: $(<"${OUT}/not-in-tag")" >&2
    exit 0 # the build stays UNSTABLE (set by the prepare step's exit 3)
fi
[[ -s "${OUT}/repo-url.txt" ]] || {
    echo "submit: ${OUT}/repo-url.txt is missing or empty; the prepare step made no repo." >&2
    exit 2
}
# shellcheck source=jenkins/builders/env.sh
. "${WORKSPACE}/jenkins/builders/env.sh"
ARGS=(--repo "$(<"${OUT}/repo-url.txt")" --host "${GENERATOR_HOST}" --host "${DUT_HOST}"
    --distro "${DISTRO}" --scenario "${SCENARIOS}" --tag "${JOB_NAME} #${BUILD_NUMBER}"
    --ids-file "${OUT}/job-ids.json" --job-xml-dir "${OUT}/beaker-jobs")
if [[ -n "${BASELINE:-}" ]]; then
    ARGS+=(--baseline "${BASELINE}")
fi
if [[ -n "${RESERVE_HOURS:-}" ]]; then
    ARGS+=(--reserve "${RESERVE_HOURS}")
fi
"${OVSPERF_KOJI}" submit "${ARGS[@]}" | tee "${OUT}/job-ids.txt"
