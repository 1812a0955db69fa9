#!/bin/bash
# Jenkins builder: one process-ci-results pass over the collector's ci_in (CIFLOW_CONFIG). Each
# processed result's JUnit cases (one per test, frame size and metric; failures for regressions,
# judged against the baseline and the result's history) go to out/ovsperf-junit.xml for the junit
# publisher. Exit 1 (a regression) makes the build UNSTABLE (unstable-return), 3 (nothing new) is
# a success, 2 (an error: a failed result, the database down) fails the build.
set -o errexit -o nounset -o pipefail
OUT="${WORKSPACE}/out"
mkdir -p "${OUT}"
: "${OVSPERF_VENV:=${WORKSPACE}/.venv}"
PROCESS="${OVSPERF_VENV}/bin/process-ci-results"
if [[ ! -x "${PROCESS}" ]]; then
    echo "'${PROCESS}' is missing; the install step must run first (or set OVSPERF_VENV)." >&2
    exit 2
fi
status=0
"${PROCESS}" --config "${CIFLOW_CONFIG}" --junit "${OUT}/ovsperf-junit.xml" | tee "${OUT}/processed.txt" || status=$?
if [[ "${status}" -eq 3 ]]; then
    echo "process-results: nothing new in ci_in." >&2
    exit 0
fi
exit "${status}"
