#!/bin/bash
# Submit one Beaker job per scenario with 'jobcreator ... --kickrepo REPO --autosubmit' and print the
# job ids, one per line. Fails (exit 2) if any submission fails; the others are still submitted.
#
# Usage: submit.sh --repo URL [--repo URL]... --host GENERATOR --host DUT --distro DISTRO
#            --scenario NAME[,NAME...] [--tag TEXT] [--baseline LABEL] [--reserve HOURS]
#            [--ids-file FILE] [--job-xml-dir DIR]
# All options: submit.sh --help.
set -o errexit -o nounset -o pipefail

# shellcheck source=jenkins/scripts/ovsperf-koji.sh
. "$(dirname "$0")/ovsperf-koji.sh"
ovsperf_koji_exec submit "$@"
