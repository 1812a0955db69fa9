#!/bin/bash
# Install the Debian packages a list names (one per line; '#' comments) that are not installed yet.
# Used by setup-debian.sh (packaging/debian-packages.txt) and by `make vlab` / `make vlab-test`
# (packaging/vlab-packages.txt). Idempotent; as root. Usage: install-debian-packages.sh LIST
set -o errexit -o nounset -o pipefail

die() { printf 'install-debian-packages: %s\n' "$*" >&2; exit 2; }
log() { printf 'install-debian-packages: %s\n' "$*" >&2; }

[[ $# -eq 1 && -f $1 ]] || die "usage: $0 LIST (a readable file of Debian package names)"
[[ ${EUID} -eq 0 ]] || die "run as root (apt): sudo $0 $1"

mapfile -t packages < <(grep -v -E '^\s*(#|$)' "$1")
missing=()
for pkg in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "${pkg}" 2>/dev/null | grep -q 'install ok installed' || missing+=("${pkg}")
done
if [[ ${#missing[@]} -gt 0 ]]; then
    log "installing ${#missing[@]} Debian packages from $(basename "$1"): ${missing[*]}"
    apt-get update -q >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
else
    log "all Debian packages of $(basename "$1") present"
fi
