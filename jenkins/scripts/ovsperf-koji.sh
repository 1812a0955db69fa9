# Sourced by the wrappers in this directory: run 'ovsperf-koji SUBCOMMAND "$@"' from ${OVSPERF_VENV}
# (default: the checkout's .venv) when it has one, else from PATH.
# shellcheck shell=bash

die() {
    echo "$(basename "$0"): $*" >&2
    exit 2
}

ovsperf_koji_exec() {
    local root
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
    : "${OVSPERF_VENV:=${root}/.venv}"
    if [[ -x "${OVSPERF_VENV}/bin/ovsperf-koji" ]]; then
        PATH="${OVSPERF_VENV}/bin:${PATH}"
    fi
    command -v ovsperf-koji >/dev/null ||
        die "'ovsperf-koji' not found; install ovsperf (pip install .) or set OVSPERF_VENV."
    exec ovsperf-koji "$@"
}
