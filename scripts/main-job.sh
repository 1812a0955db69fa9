#!/bin/bash
# The README's main job: render the Beaker job for OVS_DPDK1q_GUEST_DPDK1q and compare the shipped
# sample candidate results with the shipped baseline. Prints the job file and the report path.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
: "${VENV:=${ROOT}/.venv}"
: "${OUT:=${ROOT}/out}"
PATH="${VENV}/bin:${PATH}"

mkdir -p "${OUT}"
jobcreator --host moongen.example.com --host dut.example.com --config OVS_DPDK1q_GUEST_DPDK1q \
    --distro RHEL-7.3 \
    --kickrepo http://example.com/repos/dpdk/17.11/7.el7 \
    --kickrepo http://example.com/repos/openvswitch/2.9.0/1.el7fdp \
    --tag "sample run" --reserve 4 --output "${OUT}/job-OVS_DPDK1q_GUEST_DPDK1q.xml"
echo "${OUT}/job-OVS_DPDK1q_GUEST_DPDK1q.xml"

status=0
generate-report --baseline "${ROOT}/examples/results/baseline_ovs-2.9.0_dpdk-17.11" \
    --output-dir "${OUT}/report" "${ROOT}/examples/results/candidate_ovs-2.9.1_dpdk-17.11.2" || status=$?
# Exit 1 means "report written, regression found": the sample candidate does regress at 64 B.
if [[ ${status} -ne 0 && ${status} -ne 1 ]]; then
    exit "${status}"
fi
echo "${OUT}/report/index.html"
