#!/bin/bash
# Jenkins builder: install ovsperf from this job's checkout into ${OVSPERF_VENV}.
# --system-site-packages lets the distribution's koji (with rpm's Python bindings) serve as koji.
set -o errexit -o nounset -o pipefail
: "${OVSPERF_VENV:=${WORKSPACE}/.venv}"
if [[ ! -x "${OVSPERF_VENV}/bin/python" ]]; then
    python3 -m venv --system-site-packages "${OVSPERF_VENV}"
fi
"${OVSPERF_VENV}/bin/pip" install --quiet "${WORKSPACE}[koji,jenkins]"
mkdir -p "${WORKSPACE}/out"
"${OVSPERF_VENV}/bin/ovsperf-koji" --help >/dev/null
