"""Run the conntrack tests: OpenFlow rules through OVS's userspace conntrack, a fresh table per trial.

``phy2phy_ct_tput`` (``ct(commit)``) and ``phy2phy_ct_nat_tput`` (``ct(commit,nat)``) are P2P
(generator port 0 ↔ OVS port 1, generator port 1 ↔ OVS port 2) with the rules a user writes for a
stateful firewall (``ovs-fields(7)`` ``ct_state``, ``ovs-actions(7)`` ``ct``):

* table 0, per in_port: ``in_port=1,ip,ct_state=-trk,actions=ct(table=1,zone=Z)`` (``nat`` added
  for the NAT test, so that packets of a translated connection are translated again);
* table 1: ``in_port=1,ip,ct_state=+trk+new,actions=ct(commit,zone=Z),output:2`` and
  ``in_port=1,ip,ct_state=+trk+est,actions=output:2``; the NAT test commits with
  ``ct(commit,zone=Z,nat(src=198.18.254.1-198.18.254.254))``; port 2 likewise toward port 1
  (source NAT into ``198.19.254.1-198.19.254.254``).

**A connection** is one UDP 5-tuple the generator sends. The generator's reverse stream is not the
reply direction of the forward one (port 0 sends 198.18.0.1 → 198.19.128.1, port 1 sends
198.19.0.1 → 198.18.128.1, docs/trafficgen.md), so each direction opens its own connections: *F*
flows per direction are *2F* connections (*F* for a one-way test; *2F* − 1 above 64,000 flows,
where one flow of each direction is the other's reply: :func:`expected_connections`). Userspace
conntrack marks every later packet of a committed connection ``+est`` (``conntrack.c``:
``conn_update_state``), so the ``+est`` rule carries the traffic once the connection exists.

**Each trial starts alike and measures established connections.** Before every trial the zone is
flushed (``ovs-appctl dpctl/flush-conntrack zone=Z``), then a ramp-up (:func:`ramp_spec`: at
least one frame of every flow, at :data:`RAMP_RATE_PPS`, not counted, no telemetry) opens every
connection, then the trial runs. Kept entries would make a trial depend on the ones before it (a
search's first trial paying for every connection setup, later ones none, entries of an earlier
flow count or frame size lingering for 60 s, OVS's UDP timeout); a flushed table without ramp-up
would mix connection setup into the throughput, more of it the more flows. FD.io CSIT's stateful
(NAT44ED) throughput tests do the same: a ramp-up trial creates the sessions before the measured
trials, which then see established sessions only (connections per second are their own tests).

**After every trial** the zone's connection count (``ovs-appctl dpctl/ct-stats-show zone=Z``,
``Total:``) must equal the flows × directions; a different count is a cross-check mismatch
(WARNING, and in the trial's cross-check record), like a frame count that disagrees.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from dataclasses import dataclass

from ovsperf_catalog.model import VsperfTest
from ovsperf_lab.crosscheck import CrossCheckedGenerator
from ovsperf_lab.errors import LabError, OvsError
from ovsperf_lab.generators.api import TrafficGenerator
from ovsperf_lab.model import MAX_FLOWS_SRC_PORT, TrialResult, TrialSpec
from ovsperf_lab.ovs import OvsSandbox
from ovsperf_lab.topology import Layout

log = logging.getLogger(__name__)

NAT_SOURCES = ("198.18.254.1-198.18.254.254", "198.19.254.1-198.19.254.254")
"""Source NAT address ranges of traffic from OVS port 1 and from port 2 (RFC 2544 appendix C.2.2
benchmarking addresses, apart from the generator's own): a range, so that the (address, port) pairs
suffice even when more than 64,000 flows share one UDP source port (docs/trafficgen.md, ``tuple``)."""

RAMP_RATE_PPS = 50_000.0
"""Offered load of the ramp-up that opens the connections before each trial, per direction [pps]:
low enough for OVS to set up every connection without loss on a small VM."""

RAMP_MIN_S = 0.1
"""Shortest ramp-up [s]."""

RAMP_FRAMES_PER_FLOW = 1.5
"""Frames per flow the ramp-up sends at least [1]: every flow gets one (frame *i* is flow *i* mod *F*)."""

_TOTAL_RE = re.compile(r"^\s*Total:\s*(\d+)\s*$", re.MULTILINE)

_APPCTL_TIMEOUT_S = 30


@dataclass(frozen=True)
class ConntrackRules:
    """Which conntrack rules a test gets: its ``ct()`` arguments, the zone, NAT or not."""

    scenario: str
    """The catalog scenario (named in errors)."""
    test: VsperfTest
    """The conntrack test."""
    zone: int = 0
    """Conntrack zone of every ``ct()`` action (``--ct-zone``) [1]; OVS judges its range."""

    @property
    def nat(self) -> bool:
        """Return whether the test translates source addresses (``ct(commit,nat)``)."""
        return "nat" in (self.test.conntrack or "")

    def flows(self, lay: Layout) -> tuple[str, ...]:
        """Return the OpenFlow rules (``ovs-ofctl add-flow`` syntax) of ``lay``'s two generator ports.

        :raises LabError: when the test is no conntrack test or ``lay`` is not P2P-shaped.
        """
        if self.test.conntrack is None:
            raise LabError(f"Test '{self.test.value}' is no conntrack test.")
        if len(lay.rules) != 2:
            raise LabError(
                f"Conntrack rules need a P2P layout; '{lay.topology.value}' has {len(lay.rules)} rules."
            )
        zone = f"zone={self.zone}"
        rules: list[str] = []
        for index, (in_port, out_port) in enumerate(lay.rules):
            track = f"ct(table=1,{zone},nat)" if self.nat else f"ct(table=1,{zone})"
            commit = f"ct(commit,{zone},nat(src={NAT_SOURCES[index]}))" if self.nat else f"ct(commit,{zone})"
            rules += [
                f"table=0,priority=100,in_port={in_port},ip,ct_state=-trk,actions={track}",
                f"table=1,priority=100,in_port={in_port},ip,ct_state=+trk+new,actions={commit},output:{out_port}",
                f"table=1,priority=100,in_port={in_port},ip,ct_state=+trk+est,actions=output:{out_port}",
            ]
        return tuple(rules)


def install(ovs: OvsSandbox, lay: Layout, rules: ConntrackRules) -> None:
    """Replace the bridge's port-to-port rules with ``rules``' conntrack rules and flush the zone.

    :raises LabError: naming the scenario, the rule and OVS's message when OVS refuses a rule (a
        zone out of range, a NAT this OVS cannot do).
    """
    target = ovs.bridge_target(ovs.bridge)
    ovs.ofctl("del-flows", target)
    for flow in rules.flows(lay):
        try:
            ovs.ofctl("add-flow", target, flow)
        except OvsError as err:
            raise LabError(
                f"Scenario '{rules.scenario}', test '{rules.test.value}': OVS refused the conntrack rule "
                f"'{flow}': {err}"
            ) from err
    flush(ovs, rules.zone)
    log.info(
        "Conntrack rules of %s in zone %d (%s): %s.",
        rules.test.value,
        rules.zone,
        "ct(commit,nat)" if rules.nat else "ct(commit)",
        "; ".join(rules.flows(lay)),
    )


def flush(ovs: OvsSandbox, zone: int) -> None:
    """Delete every connection of ``zone`` (``ovs-appctl dpctl/flush-conntrack zone=Z``).

    :raises OvsError: when OVS refuses.
    """
    ovs.appctl("dpctl/flush-conntrack", f"zone={zone}", timeout_s=_APPCTL_TIMEOUT_S)


def connection_count(ovs: OvsSandbox, zone: int) -> int:
    """Return the connections conntrack holds in ``zone`` [1] (``dpctl/ct-stats-show``'s ``Total:``).

    :raises OvsError: when OVS refuses or its reply has no ``Total:`` line.
    """
    out = ovs.appctl("dpctl/ct-stats-show", f"zone={zone}", timeout_s=_APPCTL_TIMEOUT_S)
    match = _TOTAL_RE.search(out)
    if match is None:
        raise OvsError(f"'ovs-appctl dpctl/ct-stats-show' printed no 'Total:' line: {out[:200]!r}.")
    return int(match.group(1))


MIRRORED_FLOW = 32_769
"""The one flow whose two directions are each other's reply above :data:`MAX_FLOWS_SRC_PORT` flows:
the ``tuple`` layout gives both directions' flow 32,769 (0x8001) the source address x.x.128.1 and
UDP ports 1024 → 1024, so port 0's 198.18.128.1:1024 → 198.19.128.1:1024 and port 1's
198.19.128.1:1024 → 198.18.128.1:1024 are one connection (docs/trafficgen.md, ``flow_field``)."""


def expected_connections(spec: TrialSpec) -> int:
    """Return the connections a trial of ``spec`` opens [1]: flows per direction × directions.

    The generator's addresses (docs/trafficgen.md) keep the two directions apart, except that
    above :data:`MAX_FLOWS_SRC_PORT` flows (the ``tuple`` layout) flow :data:`MIRRORED_FLOW` of
    one direction is the reply of the other's: one connection fewer (found by the 100,000-flow
    benchmark: 199,999 connections, every trial).
    """
    if not spec.bidirectional:
        return spec.flows
    mirrored = spec.flows > MAX_FLOWS_SRC_PORT and spec.flows > MIRRORED_FLOW
    return 2 * spec.flows - (1 if mirrored else 0)


def ramp_spec(spec: TrialSpec) -> TrialSpec:
    """Return the ramp-up before ``spec``: its frames, flows and directions, slow and short.

    Every flow gets at least one frame: :data:`RAMP_FRAMES_PER_FLOW` × flows frames per direction
    at :data:`RAMP_RATE_PPS`, at least :data:`RAMP_MIN_S`; no warm-up, a short drain.
    """
    duration_s = max(RAMP_MIN_S, RAMP_FRAMES_PER_FLOW * spec.flows / RAMP_RATE_PPS)
    return dataclasses.replace(
        spec,
        rate_pps=RAMP_RATE_PPS,
        duration_s=duration_s,
        warmup_s=0.0,
        drain_s=min(spec.drain_s, 0.2),
        latency_histogram=False,
    )


class ConntrackGenerator(CrossCheckedGenerator):
    """A cross-checked generator for a conntrack test: flush and ramp-up before, count after each trial.

    The ramp-up runs on ``ramp`` (the bare generator: neither telemetry nor the frame cross-check
    sees it). After the trial the connection count joins :attr:`last` (``connections``,
    ``expected_connections``); a count other than expected is one more mismatch.
    """

    def __init__(
        self,
        inner: TrafficGenerator,
        ovs: OvsSandbox,
        ofports: tuple[int, ...],
        loss_ratio_limit: float,
        *,
        rules: ConntrackRules,
        ramp: TrafficGenerator,
    ) -> None:
        super().__init__(inner, ovs, ovs.bridge, ofports, loss_ratio_limit)
        self.rules = rules
        self.ramp = ramp

    def run_trial(self, spec: TrialSpec) -> TrialResult:
        """Flush the zone, open every connection, run the cross-checked trial, check the count.

        :raises OvsError: when OVS refuses the flush or the count.
        """
        zone = self.rules.zone
        flush(self.ovs, zone)
        ramp = self.ramp.run_trial(ramp_spec(spec))
        expected = expected_connections(spec)
        opened = connection_count(self.ovs, zone)
        log.debug(
            "Ramp-up of %d flows: %d of %d frames arrived, %d of %d connections open.",
            spec.flows,
            sum(d.rx_packets for d in ramp.directions),
            sum(d.tx_packets for d in ramp.directions),
            opened,
            expected,
        )
        result = super().run_trial(spec)
        count = connection_count(self.ovs, zone)
        check = self.last
        if check is not None:
            mismatches = check.mismatches
            if count != expected:
                line = (
                    f"Conntrack zone {zone} holds {count} connections after the trial, expected {expected} "
                    f"({spec.flows} flows, {2 if spec.bidirectional else 1} directions; {opened} were open "
                    "after the ramp-up)."
                )
                log.warning("Cross-check, %s: %s", self.rules.test.value, line)
                mismatches = (*mismatches, line)
            self.last = dataclasses.replace(
                check,
                ok=not mismatches,
                mismatches=mismatches,
                connections=count,
                expected_connections=expected,
            )
        return result
