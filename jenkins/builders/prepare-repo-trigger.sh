#!/bin/bash
# Jenkins builder (Koji trigger job): make the repo for the build named by KOJI_BUILD_ID, KOJI_TASK_ID
# (manual runs) or the CI_MESSAGE the JMS Messaging plugin passed. Exit 3 (job UNSTABLE): the build
# is not in KOJI_TAG, so not ours to test.
set -o errexit -o nounset -o pipefail
OUT="${WORKSPACE}/out"
mkdir -p "${OUT}"
if [[ -n "${KOJI_BUILD_ID:-}" ]]; then
    WHICH=(--build "${KOJI_BUILD_ID}")
elif [[ -n "${KOJI_TASK_ID:-}" ]]; then
    WHICH=(--task "${KOJI_TASK_ID}")
elif [[ -n "${CI_MESSAGE:-}" ]]; then
    printf '%s\n' "${CI_MESSAGE}" >"${OUT}/ci-message.json"
    WHICH=(--ci-message-file "${OUT}/ci-message.json")
else
    echo "prepare-repo: none of KOJI_BUILD_ID, KOJI_TASK_ID, CI_MESSAGE names a build." >&2
    exit 2
fi
OWNER=()
if [[ -n "${KOJI_OWNER:-}" ]]; then
    OWNER=(--owner "${KOJI_OWNER}")
fi
# shellcheck source=jenkins/builders/env.sh
. "${WORKSPACE}/jenkins/builders/env.sh"
ovsperf_require ovsperf-koji
rm -f "${OUT}/not-in-tag" "${OUT}/repo.json" "${OUT}/repo-url.txt"
# ${A[@]+"${A[@]}"}: an empty array under nounset is an error in bash < 4.4 (RHEL 7 agents).
rc=0
"${OVSPERF_VENV}/bin/ovsperf-koji" prepare-repo "${WHICH[@]}" --package "${PACKAGE}" ${OWNER[@]+"${OWNER[@]}"} \
    --tag "${KOJI_TAG}" --tag-wait-s "${KOJI_TAG_WAIT_S}" ${KOJI_ARGS[@]+"${KOJI_ARGS[@]}"} \
    --publish-dir "${REPO_PUBLISH_DIR}" --base-url "${REPO_BASE_URL}" \
    --output-json "${OUT}/repo.json" >"${OUT}/repo-url.txt" || rc=$?
if ((rc == 3)); then
    # Jenkins marks the build UNSTABLE and still runs the next builder: tell submit.sh to skip.
    echo "The build is not in ${KOJI_TAG}: nothing to test." >"${OUT}/not-in-tag"
    cat "${OUT}/not-in-tag" >&2
fi
((rc == 0)) || exit "${rc}"
echo "Repo: $(<"${OUT}/repo-url.txt")"
