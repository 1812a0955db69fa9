#!/bin/bash
# Test shim of dpdk-devbind.py: '-b DRIVER PCI...' re-points the fake sysfs driver links.
{ printf "%s" "${0##*/}"; for arg in "$@"; do printf " %q" "$arg"; done; printf "\\n"; } >>"${SHIM_LOG:?}"
if [[ "$1" == -b ]]; then
    driver="$2"
    shift 2
    [[ -n "${SHIM_DEVBIND_RC:-}" ]] && exit "${SHIM_DEVBIND_RC}"
    mkdir -p "${TASK_SYSFS:?}/bus/pci/drivers/${driver}"
    for pci in "$@"; do
        ln -sfn "${TASK_SYSFS}/bus/pci/drivers/${driver}" "${TASK_SYSFS}/bus/pci/devices/${pci}/driver"
        rm -rf "${TASK_SYSFS}/bus/pci/devices/${pci}/net"
    done
fi
exit 0
