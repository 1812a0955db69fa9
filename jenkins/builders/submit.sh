#!/bin/bash
# Jenkins builder: one Beaker job per scenario in SCENARIOS against the repo the prepare step made,
# then the submitted jobs (with the builds they test and this build's URL) are handed to the
# collector: 'ovsperf-beaker track' records them in BEAKER_STATE, which the collector job's
# 'ovsperf-beaker collect' follows. A failed submission fails the build, but the jobs that were
# submitted are still tracked (their results must not be lost). Ids and rendered jobs are archived.
set -o errexit -o nounset -o pipefail
OUT="${WORKSPACE}/out"
if [[ -e "${OUT}/not-in-tag" ]]; then
    echo "submit: nothing submitted: $(<"${OUT}/not-in-tag")" >&2
    exit 0 # the build stays UNSTABLE (set by the prepare step's exit 3)
fi
[[ -s "${OUT}/repo.json" ]] || {
    echo "submit: ${OUT}/repo.json is missing or empty; the prepare step made no repo." >&2
    exit 2
}
# shellcheck source=jenkins/builders/env.sh
. "${WORKSPACE}/jenkins/builders/env.sh"
ovsperf_require ovsperf-koji
TRACK_STATE="${BEAKER_STATE:-}"
if [[ -n "${COLLECTOR:-}" && -n "${TRACK_STATE}" ]]; then
    # One delivery per run: pushed results must not be collected from Beaker a second time.
    echo "submit: COLLECTOR is set: the DUT pushes the results; the jobs are not tracked in '${TRACK_STATE}'." >&2
    TRACK_STATE=""
fi
if [[ -n "${TRACK_STATE}" ]]; then
    ovsperf_require ovsperf-beaker
fi
ARGS=(--repo-json "${OUT}/repo.json" --host "${GENERATOR_HOST}" --host "${DUT_HOST}"
    --distro "${DISTRO}" --scenario "${SCENARIOS}" --tag "${JOB_NAME} #${BUILD_NUMBER}"
    --ids-file "${OUT}/job-ids.json" --job-xml-dir "${OUT}/beaker-jobs")
# Optional job parameters, passed on only when set.
if [[ -n "${BASELINE:-}" ]]; then
    ARGS+=(--baseline "${BASELINE}")
fi
if [[ -n "${RESERVE_HOURS:-}" ]]; then
    ARGS+=(--reserve "${RESERVE_HOURS}")
fi
if [[ -n "${TASK_REPO:-}" ]]; then
    ARGS+=(--task-repo "${TASK_REPO}")
fi
if [[ -n "${INVENTORY:-}" ]]; then
    ARGS+=(--inventory "${INVENTORY}")
fi
if [[ -n "${SCENARIO_CATALOG:-}" ]]; then
    ARGS+=(--catalog "${SCENARIO_CATALOG}")
fi
if [[ -n "${COLLECTOR:-}" ]]; then
    ARGS+=(--collector "${COLLECTOR}")
fi
rm -f "${OUT}/job-ids.json"
submitted=0
"${OVSPERF_VENV}/bin/ovsperf-koji" submit "${ARGS[@]}" | tee "${OUT}/job-ids.txt" || submitted=$?
if [[ -z "${TRACK_STATE}" ]]; then
    echo "submit: the jobs are not tracked (no BEAKER_STATE, or results pushed with COLLECTOR)." >&2
    exit "${submitted}"
fi
if [[ ! -s "${OUT}/job-ids.json" ]]; then
    echo "submit: no job was submitted; nothing to track." >&2
    exit $((submitted == 0 ? 2 : submitted))
fi
tracked=0
"${OVSPERF_VENV}/bin/ovsperf-beaker" track --state "${TRACK_STATE}" --ids-file "${OUT}/job-ids.json" \
    --repo-json "${OUT}/repo.json" --koji-tag "${KOJI_TAG}" --build-url "${BUILD_URL}" || tracked=$?
if ((tracked != 0)); then
    echo "submit: the submitted jobs could not be tracked in '${TRACK_STATE}'; their ids are in" \
        "the archived out/job-ids.json (track them with 'ovsperf-beaker track --ids-file')." >&2
    exit 2
fi
exit "${submitted}"
