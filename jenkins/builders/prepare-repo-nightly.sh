#!/bin/bash
# Jenkins builder (nightly job): one repo with the latest build of each of PACKAGES in KOJI_TAG.
set -o errexit -o nounset -o pipefail
OUT="${WORKSPACE}/out"
mkdir -p "${OUT}"
# shellcheck source=jenkins/builders/env.sh
. "${WORKSPACE}/jenkins/builders/env.sh"
ovsperf_require ovsperf-koji
"${OVSPERF_VENV}/bin/ovsperf-koji" prepare-repo --latest-tagged "${KOJI_TAG}" --package "${PACKAGES}" \
    ${KOJI_ARGS[@]+"${KOJI_ARGS[@]}"} --publish-dir "${REPO_PUBLISH_DIR}" --base-url "${REPO_BASE_URL}" \
    --output-json "${OUT}/repo.json" >"${OUT}/repo-url.txt"
echo "Repo: $(<"${OUT}/repo-url.txt")"
