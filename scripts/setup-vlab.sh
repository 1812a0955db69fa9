#!/bin/bash
# Install the Debian packages of the virtual lab (packaging/vlab-packages.txt) on top of `make setup`.
# Only `make vlab` and `make vlab-test` run it: `make test` needs none of them. Idempotent; as root.
set -o errexit -o nounset -o pipefail

die() { printf 'setup-vlab: %s\n' "$*" >&2; exit 2; }
log() { printf 'setup-vlab: %s\n' "$*" >&2; }

ROOT=$(cd "$(dirname "$0")/.." && pwd)

[[ ${EUID} -eq 0 ]] || die "run as root (apt): sudo $0"

mapfile -t packages < <(grep -v -E '^\s*(#|$)' "${ROOT}/packaging/vlab-packages.txt")
missing=()
for pkg in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "${pkg}" 2>/dev/null | grep -q 'install ok installed' || missing+=("${pkg}")
done
if [[ ${#missing[@]} -gt 0 ]]; then
    log "installing ${#missing[@]} Debian packages: ${missing[*]}"
    apt-get update -q >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
else
    log "all virtual lab packages present"
fi
