#!/bin/bash
# Test shim of ovs-vsctl ... list Interface: two dpdk ports whose counters grow by 1000 per call.
{ printf "%s" "${0##*/}"; for arg in "$@"; do printf " %q" "$arg"; done; printf "\\n"; } >>"${SHIM_LOG:?}"
count_file="${SHIM_LOG}.ovs-vsctl"
count=$(($(cat "${count_file}" 2>/dev/null || echo 0) + 1))
echo "${count}" >"${count_file}"
n=$((count * 1000))
printf '{"data":[["dpdk0",["map",[["rx_dropped",0],["rx_packets",%d],["tx_packets",%d]]]],' "${n}" "${n}"
printf '["dpdk1",["map",[["rx_dropped",0],["rx_packets",%d],["tx_packets",%d]]]]],"headings":["name","statistics"]}\n' "${n}" "${n}"
