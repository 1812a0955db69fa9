#!/bin/bash
# The README's main job, on this machine:
#   1. render the Beaker job for OVS_DPDK1q_GUEST_DPDK1q (what the lab would run), or, with a Beaker
#      hub configured (BEAKER_CLIENT_CONF, scripts/beaker-step.sh), submit it, follow it, fetch its results;
#   2. run OVS_DPDK1q P2P in the local lab (sandboxed OVS-DPDK, ovsperf-trafficgen; NDR and PDR
#      with MLRsearch and latency at shares of the PDR load, or SEARCH=binary for the
#      lua-compatible NDR search) at a few frame sizes;
#   3. compare it with this machine's baseline with generate-report, each cell also judged against
#      this machine's earlier runs (trend). The first run on a machine (per search method) records
#      itself as the baseline (and says so); later runs compare with it;
#   4. record the run in this machine's results store and write the trend pages over all runs.
# Prints the job file, the results directory, the report path and the trend index (one per line,
# on stdout).
# Needs root (DPDK, hugepages): `make run` calls it through sudo. Finishes in a few minutes.
set -o errexit -o nounset -o pipefail
# Any unexpected failure (also inside a function) is an error (2), never 1 ("regression" to every caller).
set -o errtrace
trap 'exit 2' ERR

die() { printf 'main-job: %s\n' "$*" >&2; exit 2; }
log() { printf 'main-job: %s\n' "$*" >&2; }

ROOT=$(cd "$(dirname "$0")/.." && pwd)
: "${VENV:=${ROOT}/.venv}"
: "${OUT:=${ROOT}/out}"
: "${LAB_STATE_DIR:=/var/lib/ovsperf-lab}"      # per-machine state: the baseline lives here
: "${FRAME_SIZES:=64,512,1518}"
: "${SEARCH:=mlr}"                   # mlr (NDR + PDR + latency) or binary (lua-compatible NDR)
: "${LATENCY_TIME_S:=5}"             # mlr: each latency trial (0/10/50/90 % of the PDR load)
: "${SEARCH_TIME_S:=2}"              # binary: search trials
: "${VALIDATION_TIME_S:=5}"          # binary: validation trial
: "${GRANULARITY_PERCENT:=0.5}"      # binary: of line rate; also the lowest rate tried
: "${MAX_TRIALS:=25}"                # binary: per frame size, bounds the run time on a noisy machine
: "${REPEATS:=1}"                    # runs of the test; > 1 lets the report estimate the noise
SCENARIO=OVS_DPDK1q
PATH="${VENV}/bin:${PATH}"

[[ ${EUID} -eq 0 ]] || die "run as root (DPDK needs hugepages): sudo $0"

mkdir -p "${OUT}"
# The Beaker step: renders the job (default), or with BEAKER_CLIENT_CONF and the lab's BEAKER_*
# settings submits it to that hub, follows it and delivers its results (scripts/beaker-step.sh).
VENV="${VENV}" OUT="${OUT}" LAB_STATE_DIR="${LAB_STATE_DIR}" "${ROOT}/scripts/beaker-step.sh"

# Leftovers of an interrupted earlier run (only the lab's own) would hold hugepages.
ovsperf-lab -q cleanup >&2

mkdir -p "${OUT}/lab"
case ${SEARCH} in
    mlr) search_args=(--search mlr --latency-time "${LATENCY_TIME_S}") ;;
    binary) search_args=(--search binary --search-time "${SEARCH_TIME_S}" --validation-time "${VALIDATION_TIME_S}"
        --drain-time 0.5 --granularity "${GRANULARITY_PERCENT}" --max-trials "${MAX_TRIALS}") ;;
    *) die "SEARCH must be mlr or binary, not '${SEARCH//[^[:alnum:]_.-]/?}'" ;;
esac
log "running ${SCENARIO} P2P in the local lab at ${FRAME_SIZES} B (${SEARCH} search)"
lab_status=0
results=$(ovsperf-lab run --config "${SCENARIO}" --frame-sizes "${FRAME_SIZES}" "${search_args[@]}" \
    --repeats "${REPEATS}" --output "${OUT}/lab") || lab_status=$?
[[ -n ${results} && -d ${results} ]] || die "the lab run failed before writing results (see above)"
"${VENV}/bin/python" -m ovsperf_common.resultdir csvs "${results}" >/dev/null ||
    die "the lab run wrote no result CSV (see above)"
# Exit 2 with a results directory: some frame size found no rate; the report shows what is there.
[[ ${lab_status} -eq 0 ]] || log "the lab run is incomplete (exit ${lab_status}); reporting the frame sizes it finished"
echo "${results}"

# One baseline per search method: an MLRsearch NDR is not a lua-compatible binary-search NDR.
baseline_root="${LAB_STATE_DIR}/baseline"
[[ ${SEARCH} == binary ]] || baseline_root="${LAB_STATE_DIR}/baseline-${SEARCH}"
# The baselines recorded so far: the results directories in baseline_root (sorted, oldest first).
recorded_baselines() {
    [[ -d ${baseline_root} ]] || return 0
    "${VENV}/bin/python" -m ovsperf_common.resultdir dirs "${baseline_root}" || (($? == 3))
}
if [[ ${lab_status} -eq 0 && -z "$(recorded_baselines)" ]]; then
    mkdir -p "${baseline_root}"
    tmp=$(mktemp -d "${baseline_root}/.new.XXXXXX")
    cp -a "${results}" "${tmp}/"
    mv "${tmp}/$(basename "${results}")" "${baseline_root}/"
    rmdir "${tmp}"
    log "first run on this machine: recorded ${results} as the baseline in ${baseline_root};"
    log "later runs compare with it (delete ${baseline_root} to record a new one)"
fi
mapfile -t baselines < <(recorded_baselines)
if [[ ${#baselines[@]} -eq 0 ]]; then
    # No complete run recorded yet: this incomplete one is compared with itself, not kept.
    baselines=("${results}")
    log "no baseline recorded yet (an incomplete run is not recorded as one)"
fi
baseline=${baselines[0]}
log "comparing with the baseline ${baseline}"

report="${OUT}/lab-report"
status=0
# generate-report prints the page's path whenever it wrote one, whatever its exit code: exit 2
# with a path is "report written with INVALID cells" (a frame size one side lacks: an incomplete
# run, or other FRAME_SIZES than the baseline's); exit 2 without one is an error, no report.
# The machine's results store: every run's numbers, the history the trend verdicts come from.
store="${LAB_STATE_DIR}/results-${SEARCH}.sqlite"
mkdir -p "${LAB_STATE_DIR}"
page=$(generate-report --baseline "${baseline}" --output-dir "${report}" \
    --db "${store}" --scenario "${SCENARIO}" "${results}") || status=$?
if [[ ${status} -eq 2 && -n ${page} ]]; then
    log "the report marks frame sizes missing on one side (or unusable) as INVALID"
    status=0
fi
# Exit 1 means "report written, regression found": still print where it is.
if [[ ${status} -ne 0 && ${status} -ne 1 ]]; then
    die "generate-report failed with exit code ${status}"
fi
[[ ${status} -eq 1 ]] && log "generate-report found a regression against the baseline"
echo "${page}"

# Record this run (its samples) and draw every run of this machine so far.
if ovsperf-results -q --db "${store}" import --scenario "${SCENARIO}" "${results}" >/dev/null; then
    trend_status=0
    trend=$(ovsperf-results -q --db "${store}" trend --output-dir "${OUT}/lab-trend" \
        --scenario "${SCENARIO}" --title "This machine's ${SCENARIO} runs") || trend_status=$?
    if [[ ${trend_status} -eq 0 ]]; then
        echo "${trend}"
    else
        log "no trend pages (ovsperf-results trend exit ${trend_status})"
    fi
else
    log "this run could not be recorded in ${store} (no valid number in it?); no trend pages"
fi
