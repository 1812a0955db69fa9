# Sourced by the Jenkins builders: KOJI_ARGS from the KOJI_PROFILE / KOJI_HUB / KOJI_TOPURL parameters.
# shellcheck shell=bash
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
