#!/bin/bash
# The Beaker step of the README's main job (scripts/main-job.sh calls it first).
#
# Without a Beaker hub (the default): render the Beaker job of BEAKER_SCENARIO for example hosts,
# validated against Beaker's beaker-job.rng, and print its path. Nothing is submitted.
#
# With a Beaker hub, by configuration alone: set BEAKER_CLIENT_CONF to a beaker-client configuration
# file (HUB_URL and the credentials: AUTH_METHOD password/krbv/oauth2 with its keytab, password or
# token; it is read by beaker-client only, never copied or logged) and the lab's values below. The
# step then submits the job (`ovsperf-koji submit`), records it (`ovsperf-beaker track`), follows it
# to the end (`ovsperf-beaker collect`, bounded by BEAKER_DEADLINE_S) and delivers its results into
# ${OUT}/beaker/ci_in, where `process-ci-results` (docs/ciflow.md) takes them. Printed (stdout), one
# per line: the job XML, the job id, the delivered results directory.
#
#   BEAKER_TG, BEAKER_DUT        the traffic generator and DUT FQDNs (Beaker systems)
#   BEAKER_DISTRO                Beaker distro, e.g. RHEL-9.4.0
#   BEAKER_KICKREPOS             space-separated yum repository URLs of the OVS/DPDK builds under test
#   BEAKER_SCENARIO              catalog scenario (default OVS_DPDK1q_GUEST_DPDK1q)
#   BEAKER_INVENTORY             host inventory path for the tasks (optional)
#   BEAKER_TASK_REPO             fetch the /ovsperf tasks from this git URL (optional)
#   BEAKER_NVRS                  space-separated NVRs under test, named in the report (optional)
#   BEAKER_DEADLINE_S            longest wait for the job [s] (default 43200)
#   BEAKER_POLL_S                how often the hub is asked [s] (default 60)
#   BEAKER_STATE                 the collector's state file (default ${LAB_STATE_DIR}/beaker-jobs.json)
set -o errexit -o nounset -o pipefail
# Any unexpected failure (also inside a function) is an error (2), never 1 ("regression" to every caller).
set -o errtrace
trap 'exit 2' ERR

die() { printf 'beaker-step: %s\n' "$*" >&2; exit 2; }
log() { printf 'beaker-step: %s\n' "$*" >&2; }

ROOT=$(cd "$(dirname "$0")/.." && pwd)
: "${VENV:=${ROOT}/.venv}"
: "${OUT:=${ROOT}/out}"
: "${LAB_STATE_DIR:=/var/lib/ovsperf-lab}"
: "${BEAKER_SCENARIO:=OVS_DPDK1q_GUEST_DPDK1q}"
: "${BEAKER_CLIENT_CONF:=}"
: "${BEAKER_DEADLINE_S:=43200}"
: "${BEAKER_POLL_S:=60}"
: "${BEAKER_STATE:=${LAB_STATE_DIR}/beaker-jobs.json}"
PATH="${VENV}/bin:${PATH}"

mkdir -p "${OUT}"
job_xml="${OUT}/job-${BEAKER_SCENARIO//[^A-Za-z0-9_.-]/_}.xml"

if [[ -z ${BEAKER_CLIENT_CONF} ]]; then
    jobcreator --host moongen.example.com --host dut.example.com --config "${BEAKER_SCENARIO}" \
        --distro RHEL-7.3 \
        --kickrepo http://example.com/repos/dpdk/17.11/7.el7 \
        --kickrepo http://example.com/repos/openvswitch/2.9.0/1.el7fdp \
        --tag "sample run" --reserve 4 --output "${job_xml}"
    echo "${job_xml}"
    exit 0
fi

[[ -r ${BEAKER_CLIENT_CONF} ]] || die "BEAKER_CLIENT_CONF '${BEAKER_CLIENT_CONF//[^[:print:]]/?}' is not a readable file"
export BEAKER_CLIENT_CONF
for name in BEAKER_TG BEAKER_DUT BEAKER_DISTRO BEAKER_KICKREPOS; do
    [[ -n ${!name:-} ]] || die "${name} is not set; a Beaker run needs BEAKER_TG, BEAKER_DUT, BEAKER_DISTRO and BEAKER_KICKREPOS"
done

beaker_out="${OUT}/beaker"
mkdir -p "${beaker_out}/jobs" "${beaker_out}/ci_in" "$(dirname "${BEAKER_STATE}")"
read -r -a repos <<<"${BEAKER_KICKREPOS}"
args=(--host "${BEAKER_TG}" --host "${BEAKER_DUT}" --distro "${BEAKER_DISTRO}" --scenario "${BEAKER_SCENARIO}"
    --tag "make run" --ids-file "${beaker_out}/job-ids.json" --job-xml-dir "${beaker_out}/jobs")
for repo in "${repos[@]}"; do
    args+=(--repo "${repo}")
done
[[ -z ${BEAKER_INVENTORY:-} ]] || args+=(--inventory "${BEAKER_INVENTORY}")
[[ -z ${BEAKER_TASK_REPO:-} ]] || args+=(--task-repo "${BEAKER_TASK_REPO}")
job_id=$(ovsperf-koji submit "${args[@]}") || die "the submission failed (see above)"
cp "${beaker_out}/jobs/${BEAKER_SCENARIO}.xml" "${job_xml}"
echo "${job_xml}"
echo "${job_id}"

track=(--state "${BEAKER_STATE}" --ids-file "${beaker_out}/job-ids.json")
if [[ -n ${BEAKER_NVRS:-} ]]; then
    read -r -a nvrs <<<"${BEAKER_NVRS}"
    for nvr in "${nvrs[@]}"; do
        track+=(--nvr "${nvr}")
    done
fi
ovsperf-beaker track "${track[@]}" >/dev/null || die "cannot record ${job_id} in ${BEAKER_STATE}"
log "following ${job_id} for at most ${BEAKER_DEADLINE_S} s (state ${BEAKER_STATE})"

# collect prints one line per delivery: job, scenario, delivered|infrastructure-failure, status, path.
lines=$(ovsperf-beaker collect --state "${BEAKER_STATE}" --ci-in "${beaker_out}/ci_in" \
    --deadline-s "${BEAKER_DEADLINE_S}" --poll-s "${BEAKER_POLL_S}") ||
    die "the Beaker job was not collected (it stays in ${BEAKER_STATE} for the next 'ovsperf-beaker collect')"
delivered=""
while IFS=$'\t' read -r id _scenario kind status path; do
    [[ ${id} == "${job_id}" ]] || continue
    [[ ${kind} == delivered ]] || die "${job_id} ended ${status}: an infrastructure failure, no results (${path})"
    delivered=${path}
done <<<"${lines}"
[[ -n ${delivered} && -d ${delivered} ]] || die "${job_id} was not delivered (ovsperf-beaker status --state ${BEAKER_STATE})"
echo "${delivered}"
