# Sourced by the Jenkins builders: OVSPERF_KOJI (the ovsperf-koji that install.sh put into
# OVSPERF_VENV) and KOJI_ARGS from the KOJI_PROFILE / KOJI_HUB / KOJI_TOPURL job parameters.
# shellcheck shell=bash
: "${OVSPERF_VENV:=${WORKSPACE}/.venv}"
OVSPERF_KOJI="${OVSPERF_VENV}/bin/ovsperf-koji"
if [[ ! -x "${OVSPERF_KOJI}" ]]; then
    echo "'${OVSPERF_KOJI}' is missing; the install step must run first (or set OVSPERF_VENV)." >&2
    exit 2
fi
KOJI_ARGS=()
if [[ -n "${KOJI_PROFILE:-}" ]]; then
    KOJI_ARGS+=(--profile "${KOJI_PROFILE}")
fi
if [[ -n "${KOJI_HUB:-}" ]]; then
    KOJI_ARGS+=(--hub "${KOJI_HUB}")
fi
if [[ -n "${KOJI_TOPURL:-}" ]]; then
    KOJI_ARGS+=(--topurl "${KOJI_TOPURL}")
fi
