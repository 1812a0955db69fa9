#!/bin/bash
# Jenkins builder (collector job): one pass of the loop's back end.
# 1. 'ovsperf-beaker collect --once' looks once at the Beaker jobs tracked in BEAKER_STATE and
#    delivers each finished recipe's results into CI_IN (the 'ci_in' of CIFLOW_CONFIG) within
#    COLLECT_DEADLINE_S; an aborted or cancelled job is delivered as an infrastructure failure; jobs
#    still running wait for the next pass. Skipped when BEAKER_STATE is empty (results pushed).
# 2. 'process-ci-results --junit' processes whatever is in ci_in, also when collect failed: reports,
#    results store, trend pages, the regression mail (its 'mail:'), and the JUnit file of the pass
#    (a regression is a failed test case, an INVALID or aborted run an error).
# Exit: 1 a regression (the job's unstable-return: UNSTABLE); 2 collect or process-ci-results failed
# (FAILURE; job ids stay in BEAKER_STATE for the next pass); 0 otherwise, including nothing new.
set -o errexit -o nounset -o pipefail
# Any other failure (out/ not writable, a report not copied) is FAILURE: never exit 1, which means
# a regression to Jenkins (the step's unstable-return).
trap 'exit 2' ERR
OUT="${WORKSPACE}/out"
mkdir -p "${OUT}"
# shellcheck source=jenkins/builders/env.sh
. "${WORKSPACE}/jenkins/builders/env.sh"
ovsperf_require process-ci-results

collected=0
if [[ -n "${BEAKER_STATE:-}" ]]; then
    ovsperf_require ovsperf-beaker
    "${OVSPERF_VENV}/bin/ovsperf-beaker" collect --once --state "${BEAKER_STATE}" --ci-in "${CI_IN}" \
        --deadline-s "${COLLECT_DEADLINE_S}" | tee "${OUT}/collected.txt" || collected=${PIPESTATUS[0]}
    case "${collected}" in
        0) ;;
        3)
            echo "process-results: no Beaker job is tracked in '${BEAKER_STATE}'." >&2
            collected=0
            ;;
        *) echo "process-results: collect failed (exit ${collected}); processing what was delivered." >&2 ;;
    esac
fi

processed=0
"${OVSPERF_VENV}/bin/process-ci-results" --config "${CIFLOW_CONFIG}" --junit "${OUT}/ovsperf-junit.xml" \
    | tee "${OUT}/processed.txt" || processed=${PIPESTATUS[0]}
if ((processed == 3)); then
    echo "process-results: nothing new in ci_in." >&2
    processed=0
fi

# Archive this pass's reports with the build (the served copies, with their trend links, stay in
# the configuration's 'reports' directory).
while IFS=$'\t' read -r kind name _ index; do
    if [[ "${kind}" == processed && -f "${index}" ]]; then
        mkdir -p "${OUT}/reports"
        cp -R "$(dirname "${index}")" "${OUT}/reports/${name}"
    fi
done <"${OUT}/processed.txt"

if ((collected != 0 || processed == 2)); then
    exit 2
fi
exit "${processed}"
