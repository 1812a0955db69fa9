"""Name the files and CSV columns a results directory hands from its writers to its readers.

The contract between the lab (``ovsperf_lab.results``, which writes VSperf's layout), the Beaker
task (``ovsperf_common.vsperf_telemetry``) and the reports (``reporting.load*``): the JSON side
files' names and schema versions, and the result CSV's column names — VSperf's
(``core/results/results_constants.py``, reference vsperf.md §1.6) and the lab's goal columns after
them (docs/results-format.md). Writers and readers import these names from here, never spell
them (tests/test_architecture.py). The result CSV's own file name is
:func:`ovsperf_common.resultdir.result_csv_name`; ``ovsperf-metadata.json`` is
:mod:`ovsperf_common.metadata`'s.

Standard library only, Python ≥ 3.9 (imported on the lab hosts).
"""

from __future__ import annotations

# --- JSON side files -------------------------------------------------------------------------

TRIALS_FILE = "ovsperf-trials.json"
"""Every trial of every search (the lab; rewritten after each trial)."""

TRIALS_SCHEMA = 2
"""``schema`` of :data:`TRIALS_FILE`."""

LATENCY_FILE = "ovsperf-latency.json"
"""Latency at shares of the PDR load, with HdrHistograms (the lab with MLRsearch)."""

LATENCY_SCHEMA = 1
"""``schema`` of :data:`LATENCY_FILE`; readers take no other."""

HDRH_ENCODING = "HdrHistogram V2, compressed, base64 (HdrHistogram.encode()); values in ns"
"""How :data:`LATENCY_FILE` encodes its histograms (its ``histogram_encoding``)."""

TELEMETRY_FILE = "ovsperf-telemetry.json"
"""The DUT's own counters around each final trial (the lab) or VSperf test (the Beaker task);
its counters are :data:`ovsperf_common.telemetryfile.HIT_COUNTERS`."""

TELEMETRY_SCHEMA = 1
"""``schema`` of :data:`TELEMETRY_FILE`; readers take no other."""

# --- result CSV columns: VSperf's --------------------------------------------------------------

COL_RX_FPS = "throughput_rx_fps"
"""Throughput summed over directions [frames/s] (at :data:`COL_LOSS_GOAL`)."""
COL_RX_MBPS = "throughput_rx_mbps"
"""That throughput at L1 [Mbit/s]."""
COL_RX_PERCENT = "throughput_rx_percent"
"""That throughput [% of directions × line rate]."""
COL_TX_FPS = "tx_rate_fps"
"""Offered load summed over directions [frames/s]."""
COL_TX_MBPS = "tx_rate_mbps"
"""Offered load at L1 [Mbit/s]."""
COL_TX_PERCENT = "tx_rate_percent"
"""Offered load [% of directions × line rate]."""
COL_MIN_LAT = "min_latency_ns"
"""Minimum latency [ns]; ``''`` or 0: not measured."""
COL_MAX_LAT = "max_latency_ns"
"""Maximum latency [ns]; ``''`` or 0: not measured."""
COL_AVG_LAT = "avg_latency_ns"
"""Average latency [ns]; ``''`` or 0: not measured."""
COL_FRAME_LOSS = "frame_loss_percent"
"""Loss at the offered load [%] (VSperf's Dummy and Trex drivers)."""
COL_TYPE = "type"
"""Traffic kind, e.g. ``'rfc2544_throughput'``."""
COL_PACKET_SIZE = "packet_size"
"""Frame size including FCS [B], or a frame-size mix's name (``0``: VSperf's IMIX)."""
COL_ID = "id"
"""The test's name, e.g. ``'phy2phy_tput'``."""
COL_DEPLOYMENT = "deployment"
"""The deployment, e.g. ``'p2p'``."""
COL_VSWITCH = "vswitch"
"""VSperf's vswitch class, e.g. ``'OvsDpdkVhost'``."""
COL_TRAFFIC_TYPE = "traffic_type"
"""Traffic ``l3`` protocol, e.g. ``'udp'``."""
COL_EXEC_TIME = "test_execution_time"
"""Wall time of the test, ``H:MM:SS``."""
COL_START = "start_time"
"""Start, ``%Y-%m-%d %H:%M:%S`` local time."""
COL_STOP = "stop_time"
"""Stop, ``%Y-%m-%d %H:%M:%S`` local time."""
COL_STREAM_COUNT = "stream_count"
"""Flows per direction [1] (VSperf writes it with ``TRAFFIC['multistream']``)."""
COL_MATCH_TYPE = "match_type"
"""Flow match, e.g. ``'L4'``."""
COL_PREINSTALLED_FLOWS = "pre-installed_flows"
"""``'Yes'``/``'No'``."""
COL_IMIX_GENOME = "imix_genome"
"""The RFC 6985 genome of VSperf's IMIX (Spirent driver); the lab does not write it."""

CSV_COLUMNS = (
    COL_RX_FPS,
    COL_RX_MBPS,
    COL_RX_PERCENT,
    COL_TX_FPS,
    COL_TX_MBPS,
    COL_TX_PERCENT,
    COL_MIN_LAT,
    COL_MAX_LAT,
    COL_AVG_LAT,
    COL_FRAME_LOSS,
    COL_TYPE,
    COL_PACKET_SIZE,
    COL_ID,
    COL_DEPLOYMENT,
    COL_VSWITCH,
    COL_TRAFFIC_TYPE,
    COL_EXEC_TIME,
    COL_START,
    COL_STOP,
    COL_STREAM_COUNT,
    COL_MATCH_TYPE,
    COL_PREINSTALLED_FLOWS,
)
"""VSperf's MoonGen RFC 2544 throughput header (vsperf.md §1.6) with ``frame_loss_percent``, in
the order the lab writes it."""

# --- result CSV columns: the lab's, after VSperf's (docs/results-format.md) ---------------------

COL_LOSS_GOAL = "loss_goal_percent"
"""The goal of VSperf's throughput columns [%]; absent or empty: 0 (the NDR)."""
COL_SEARCH = "search_method"
"""``'mlr'`` or ``'binary'``; absent: not known."""
COL_PDR_GOAL = "pdr_loss_goal_percent"
"""The second goal [%] (the PDR); empty with one goal."""
COL_PDR_RX_FPS = "pdr_throughput_rx_fps"
"""Throughput at :data:`COL_PDR_GOAL` summed over directions [frames/s]."""
COL_PDR_RX_MBPS = "pdr_throughput_rx_mbps"
"""That throughput at L1 [Mbit/s]."""
COL_PDR_RX_PERCENT = "pdr_throughput_rx_percent"
"""That throughput [% of directions × line rate]."""
COL_PDR_TX_FPS = "pdr_tx_rate_fps"
"""The offered load at that goal's lower bound, summed over directions [frames/s]."""

GOAL_COLUMNS = (
    COL_LOSS_GOAL,
    COL_SEARCH,
    COL_PDR_GOAL,
    COL_PDR_RX_FPS,
    COL_PDR_RX_MBPS,
    COL_PDR_RX_PERCENT,
    COL_PDR_TX_FPS,
)
"""The lab's columns after VSperf's: the goal of VSperf's throughput columns and a second goal
(the PDR)."""

GUEST_COLUMN = "guest_loopback_app"
"""Appended last for deployments with a VNF (VSperf ``TestCase._append_results``)."""

TUNNEL_COLUMN = "tunnel_type"
"""Appended last for the overlay tests: ``vxlan`` or ``geneve`` (VSperf
``ResultsConstants.TUNNEL_TYPE``, written by its overlay test cases)."""

# --- QEMU guests of ovsperf-lab run --guest-image ----------------------------------------------
# ``ovsperf-vlab guest-image`` writes the image and its sidecars; ``ovsperf-lab run`` reads them and
# writes the console logs and boot times; ``ovsperf-vlab guest-test`` reads those.

GUEST_MARKER = "ovsperf-guest: forwarding"
"""The line an ``ovsperf-vlab guest-image`` guest prints on its serial console once its bridge
forwards (its manifest's ``marker``)."""

GUEST_ERROR_PREFIX = "ovsperf-guest: error"
"""How such a guest's console line starts when it cannot forward (``ovsperf-lab run`` fails at once,
quoting the line)."""

GUEST_MARKER_MAX_CHARS = 200
"""Longest console marker a manifest may name [characters]."""

GUEST_KERNEL_SUFFIX = ".kernel"
"""``IMAGE.kernel`` beside a guest image: what QEMU loads with ``-kernel`` (its GRUB core image)."""

GUEST_MANIFEST_SUFFIX = ".json"
"""``IMAGE.json`` beside a guest image: its manifest (builder, ``loopback``, ``marker``, ...)."""

GUEST_MANIFEST_MAX_BYTES = 64 * 1024
"""Largest guest image manifest read [B]."""

GUEST_BUILD_LOG_SUFFIX = ".build.log"
"""``IMAGE.build.log`` beside a guest image: the mmdebstrap log of its build."""

GUEST_BOOT_KEY = "guest_boot_s"
"""Key of ``ovsperf-metadata.json`` with QEMU guests: ``{"result_<index>_<test>": [s, ...]}``, each
guest's boot time in chain order, from its QEMU's start to up [s]."""


def guest_sidecar_name(image_name: str, suffix: str) -> str:
    """Return the name of the sidecar ``suffix`` of the guest image named ``image_name``.

    ``('g.qcow2', GUEST_KERNEL_SUFFIX)`` → ``'g.qcow2.kernel'``.
    """
    return image_name + suffix


def guest_serial_log_name(index: int) -> str:
    """Return the name of guest ``index``'s serial console log in a run's state directory.

    0 → ``'guest-serial.log'``, 1 → ``'guest-2-serial.log'``; the results directory holds it as
    ``<stem>_<timestamp>.log``.
    """
    return "guest-serial.log" if index == 0 else f"guest-{index + 1}-serial.log"
