# Sourced by the Jenkins builders: OVSPERF_VENV (where install.sh put ovsperf), ovsperf_require
# (stop with a clear message when a command the builder runs is not installed there) and KOJI_ARGS
# from the KOJI_PROFILE / KOJI_HUB / KOJI_TOPURL job parameters.
# shellcheck shell=bash
: "${OVSPERF_VENV:=${WORKSPACE}/.venv}"

# ovsperf_require NAME...: exit 2 unless every ${OVSPERF_VENV}/bin/NAME is installed.
ovsperf_require() {
    local name
    for name in "$@"; do
        if [[ ! -x "${OVSPERF_VENV}/bin/${name}" ]]; then
            echo "'${OVSPERF_VENV}/bin/${name}' is missing; the install step must run first" \
                "(with the install group that provides it) or set OVSPERF_VENV." >&2
            exit 2
        fi
    done
}

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
