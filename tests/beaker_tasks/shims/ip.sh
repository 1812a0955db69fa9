#!/bin/bash
# Test shim of ip: record; answer the queries setup_dpdk makes about the host's own traffic.
# SHIM_IP_ADDR_DEV: the interface that has a global address; SHIM_IP_ROUTE_DEV: the default route's.
{ printf "%s" "${0##*/}"; for arg in "$@"; do printf " %q" "$arg"; done; printf "\\n"; } >>"${SHIM_LOG:?}"
case "$*" in
    "-o addr show dev ${SHIM_IP_ADDR_DEV:-none} scope global")
        printf '2: %s    inet 192.0.2.7/24 brd 192.0.2.255 scope global %s\\       valid_lft forever\n' \
            "${SHIM_IP_ADDR_DEV}" "${SHIM_IP_ADDR_DEV}"
        ;;
    "-4 route show default")
        [[ -z "${SHIM_IP_ROUTE_DEV:-}" ]] || printf 'default via 192.0.2.1 dev %s proto dhcp metric 100\n' "${SHIM_IP_ROUTE_DEV}"
        ;;
esac
exit 0
