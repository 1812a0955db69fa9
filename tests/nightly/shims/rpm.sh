#!/bin/bash
# Lab shim of rpm: what the machine was provisioned with ($NIGHTLY_PACKAGES: "NAME VERSION-RELEASE.ARCH"
# lines, the job's kick repositories plus a kernel). 'rpm -qa [--qf FMT] [GLOB...]' prints the
# matching lines in that one format (the tasks ask for '%{NAME} %{VERSION}-%{RELEASE}.%{ARCH}\n');
# 'rpm -q NAME...' prints NAME-VERSION-RELEASE.ARCH or "package NAME is not installed".
set -o nounset -o pipefail
packages="${NIGHTLY_PACKAGES:?}"
if [[ "${1:-}" == -qa ]]; then
    shift
    [[ "${1:-}" == --qf ]] && shift 2
    while read -r name evra; do
        [[ -n "${name}" ]] || continue
        if (($# == 0)); then
            printf '%s %s\n' "${name}" "${evra}"
            continue
        fi
        for pattern in "$@"; do
            # shellcheck disable=SC2053 # the pattern is a glob, as rpm's
            if [[ "${name}" == ${pattern} ]]; then
                printf '%s %s\n' "${name}" "${evra}"
                break
            fi
        done
    done <"${packages}"
    exit 0
fi
[[ "${1:-}" == -q ]] || exit 0
shift
rc=0
for wanted in "$@"; do
    line="$(awk -v n="${wanted}" '$1 == n { print $1 "-" $2; exit }' "${packages}")"
    if [[ -n "${line}" ]]; then
        printf '%s\n' "${line}"
    else
        printf 'package %s is not installed\n' "${wanted}"
        rc=1
    fi
done
exit "${rc}"
