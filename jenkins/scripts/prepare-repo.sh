#!/bin/bash
# Build a yum repo from the RPMs of a Koji build, task or the latest tagged builds, publish it into a
# directory a web server serves, and print its URL. Jenkins and people run exactly this.
#
# Usage: prepare-repo.sh (--build ID|NVR | --task ID | --latest-tagged TAG | --ci-message-file FILE)
#            [--package NAME]... [--owner USER] [--tag TAG [--tag-wait-s S]]
#            (--profile NAME | --hub URL --topurl URL) --publish-dir DIR --base-url URL [--output-json FILE]
# All options: prepare-repo.sh --help. Exit codes: 0 OK, 2 error, 3 the build is not in --tag.
set -o errexit -o nounset -o pipefail

# shellcheck source=jenkins/scripts/ovsperf-koji.sh
. "$(dirname "$0")/ovsperf-koji.sh"
ovsperf_koji_exec prepare-repo "$@"
