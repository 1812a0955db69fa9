#!/bin/bash
# Jenkins builder: install ovsperf from this job's checkout into ${OVSPERF_VENV} with exactly the
# install groups (pyproject.toml [project.optional-dependencies]) that the job's commands import.
# jenkins-jobs renders this file as a Jinja2 template: the builder macro's 'extras' parameter
# (jenkins/macros.yaml, per job) becomes OVSPERF_EXTRAS below; nothing else is templated.
# --system-site-packages lets the distribution's koji (with rpm's Python bindings) serve as koji.
set -o errexit -o nounset -o pipefail
OVSPERF_EXTRAS='{{ extras }}'
: "${OVSPERF_VENV:=${WORKSPACE}/.venv}"
if [[ ! -x "${OVSPERF_VENV}/bin/python" ]]; then
    python3 -m venv --system-site-packages "${OVSPERF_VENV}"
fi
"${OVSPERF_VENV}/bin/pip" install --quiet "${WORKSPACE}[${OVSPERF_EXTRAS}]"
# out/ holds this build's files only (the workspace, and so out/, outlives the build).
rm -rf "${WORKSPACE}/out"
mkdir -p "${WORKSPACE}/out"
echo "Installed ovsperf[${OVSPERF_EXTRAS}] into ${OVSPERF_VENV}."
