#!/bin/bash
# Test shim of rpm -qa / rpm -q: fixed package versions.
{ printf "%s" "${0##*/}"; for arg in "$@"; do printf " %q" "$arg"; done; printf "\\n"; } >>"${SHIM_LOG:?}"
if [[ "$1" == -qa ]]; then
    printf '%s\n' 'openvswitch3.1 3.1.0-60.el9fdp.x86_64' 'dpdk 22.11-4.el9.x86_64' 'kernel 5.14.0-362.el9.x86_64'
elif [[ "$1 $2 $4" == "-q --qf dpdk" ]]; then # the VERSION of package dpdk: SHIM_DPDK_RPM_VERSION ('' = not installed)
    [[ -n "${SHIM_DPDK_RPM_VERSION-22.11}" ]] || { echo "package dpdk is not installed"; exit 1; }
    printf '%s\n' "${SHIM_DPDK_RPM_VERSION-22.11}"
else
    for package in "$@"; do
        echo "${package}-1.0-1.x86_64"
    done
fi
