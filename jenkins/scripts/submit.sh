#!/bin/bash
# Submit one Beaker job per scenario with 'jobcreator ... --kickrepo REPO --autosubmit' and print the
# job ids, one per line. Fails (exit 2) if any submission fails; the others are still submitted.
#
# Usage: submit.sh --repo URL [--repo URL]... --host GENERATOR --host DUT --distro DISTRO
#            --scenario NAME[,NAME...] [--tag TEXT] [--baseline LABEL] [--reserve HOURS]
#            [--ids-file FILE] [--job-xml-dir DIR]
# All options: submit.sh --help.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
: "${OVSPERF_VENV:=${ROOT}/.venv}"
if [[ -x "${OVSPERF_VENV}/bin/ovsperf-koji" ]]; then
    PATH="${OVSPERF_VENV}/bin:${PATH}"
fi
if ! command -v ovsperf-koji >/dev/null; then
    echo "submit.sh: 'ovsperf-koji' not found; install ovsperf (pip install .) or set OVSPERF_VENV." >&2
    exit 2
fi
exec ovsperf-koji submit "$@"
