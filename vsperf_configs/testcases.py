"""Write VSperf's settings of the overlay and conntrack tests: tunnel endpoints, tunnel frames, ct rules.

**Overlay** (``overlay_p2p_decap_tput``, ``overlay_p2p_tput``): VSperf's own integration tests
(``conf/integration/01_testcases.conf``, deployment ``op2p``, ``core/vswitch_controller_op2p.py``),
which run only under ``vsperf --integration`` (VSperf then reads ``INTEGRATION_TESTS`` and loads
``conf/integration/*.conf``, whose tunnel settings this module changes key by key). The addresses
are the local lab's (``ovsperf_lab/overlay.py``), in RFC 2544's benchmarking range 198.18.0.0/15:
the DUT's tunnel endpoint :data:`DUT_VTEP_IP`, the generator's :data:`TG_VTEP_IP`.

VSperf builds tunnel frames only through IxNetwork (``3rd_party/ixia/ixnetrfc2544v2.tcl`` reads
``<TYPE>_FRAME_L4``); its MoonGen and TRex drivers (``tools/pkt_gen/moongen/moongen.py``,
``tools/pkt_gen/trex/trex_client.py``) send plain UDP frames whatever ``VXLAN_FRAME_*`` says. So
VSperf measures encapsulation with them, but its decapsulation test then offers OVS frames it
does not decapsulate: the configuration says so in a comment, and :func:`overlay_settings` logs a
WARNING; the engine ``ovsperf`` sends real tunnel frames (docs/beaker_tasks.md).

**Conntrack** (``phy2phy_ct_tput``, ``phy2phy_ct_nat_tput``): VSperf has no such test. Ours are
VSperf performance tests defined in the configuration (``PERFORMANCE_TESTS`` entries, appended
to VSperf's list): deployment ``p2p`` builds the bridge and its two physical ports, ``TestSteps``
replace its port-to-port rules with the conntrack rules of the local lab
(``ovsperf_lab/conntrack.py``), then VSperf runs its RFC 2544 throughput search as for
``phy2phy_tput`` (``testcases/testcase.py``: a non-``clean`` deployment whose steps sent no
traffic sends it after them; docs/testing/user/userguide/teststeps.rst, "modification of
existing deployment").
"""

from __future__ import annotations

import logging
from typing import Any

from ovsperf_catalog.model import Scenario, TunnelType, VsperfTest, VsperfTrafficgen
from vsperf_configs.model import Layer, Setting

log = logging.getLogger(__name__)

DUT_VTEP_IP = "198.19.254.1"
"""The DUT's tunnel endpoint (VSperf ``TUNNEL_EXTERNAL_BRIDGE_IP``): the outer destination of
decapsulated frames, the outer source of encapsulated ones."""
TG_VTEP_IP = "198.19.254.2"
"""The generator's tunnel endpoint (VSperf ``VTEP_IP2``, and ``TRAFFICGEN_PORT1_IP``, the remote
of the decapsulating tunnel port): the outer source of the frames the generator sends, the outer
destination of the frames OVS encapsulates."""
VTEP_PREFIX = 24
"""Prefix length of the underlay network [bits]."""
INTEGRATION_BRIDGE_IP = "198.18.253.1/24"
"""VSperf ``VTEP_IP1``: the address VSperf puts on its integration bridge (its overlay side); a
subnet of its own, apart from every address the traffic or the tunnel uses."""
TG_VTEP_MAC = "02:00:00:00:fe:02"
"""The generator's MAC address behind :data:`TG_VTEP_IP` (VSperf ``TRAFFICGEN_PORT1_MAC`` and
``TRAFFICGEN_PORT2_MAC``): the outer destination MAC of encapsulated frames (OVS's neighbour entry)."""
INNER_SRC_IP = "198.18.0.1"
"""Inner IPv4 source of the overlay traffic (the lab generator's port 0 source, docs/trafficgen.md)."""
INNER_DST_IP = "198.19.128.1"
"""Inner IPv4 destination of the overlay traffic (the lab generator's port 0 destination)."""
VXLAN_VNI = "99"
"""The VXLAN key (VSperf ``VXLAN_VNI``, a string: VSperf writes ``'options:key=' + VXLAN_VNI``)."""

NAT_SOURCES = ("198.18.254.1-198.18.254.254", "198.19.254.1-198.19.254.254")
"""Source NAT ranges of traffic entering OVS port 1 and port 2 in ``phy2phy_ct_nat_tput``: the
local lab's (``ovsperf_lab.conntrack.NAT_SOURCES``; tests/vsperf_configs checks they agree)."""

P2P_OFPORTS = ("1", "2")
"""OpenFlow port numbers of the ``p2p`` deployment's two physical ports: the first two ports of
VSperf's fresh bridge (VSperf's own flow code assumes the same, ``testcases/testcase.py``)."""

_FRAME_PREFIX = {TunnelType.VXLAN: "VXLAN", TunnelType.GENEVE: "GENEVE"}


def needs_integration(scenario: Scenario) -> bool:
    """Return whether VSperf must run the scenario's tests with ``--integration`` (overlay tests)."""
    return any(t.tunnel_operation is not None for t in scenario.tests)


def overlay_settings(scenario: Scenario, generator: VsperfTrafficgen) -> list[Setting]:
    """Return the tunnel settings of a scenario with overlay tests (none without).

    Keys from VSperf's ``conf/integration/02_vswitch.conf`` (``TUNNEL_*``, ``VTEP_*``) and
    ``conf/integration/03_traffic.conf`` (``TRAFFICGEN_PORT*``, ``<TYPE>_FRAME_L2/L3/L4``); the
    frame dicts are changed key by key (VSperf's other keys survive). Bridge names are VSperf's
    defaults, written out so the file says what VSperf builds. ``generator`` (VSperf's MoonGen or
    TRex driver, neither of which builds tunnel frames) is named in the decapsulation test's note.
    """
    tunnel = scenario.tunnel_type
    if tunnel is None:
        return []
    s = Layer.SCENARIO
    frames = _FRAME_PREFIX[tunnel]
    type_note = "VSperf's tests give no 'Tunnel Type': this decides"
    if VsperfTest.OVERLAY_P2P_DECAP_TPUT in scenario.tests:
        log.warning(
            "Scenario '%s': VSperf's %s driver sends no %s frames (only IxNetwork builds %s_FRAME_*); "
            "its 'overlay_p2p_decap_tput' does not measure decapsulation. The engine 'ovsperf' does.",
            scenario.name,
            generator.vsperf_class,
            tunnel.value,
            frames,
        )
        type_note = (
            f"NOTE: VSperf's {generator.vsperf_class} driver ignores {frames}_FRAME_* and sends "
            "plain frames; overlay_p2p_decap_tput then measures no decapsulation (docs/beaker_tasks.md)"
        )
    settings = [
        Setting(("TUNNEL_TYPE",), tunnel.value, s, type_note),
        Setting(("TUNNEL_INTEGRATION_BRIDGE",), "vsperf-br0", s, "VSperf's default name"),
        Setting(("TUNNEL_EXTERNAL_BRIDGE",), "vsperf-br-ext", s, "VSperf's default name"),
        Setting(
            ("TUNNEL_EXTERNAL_BRIDGE_IP",),
            f"{DUT_VTEP_IP}/{VTEP_PREFIX}",
            s,
            "the DUT's tunnel endpoint (the local lab's, RFC 2544 benchmarking range)",
        ),
        Setting(("VTEP_IP1",), INTEGRATION_BRIDGE_IP, s, "VSperf's integration-bridge address"),
        Setting(("VTEP_IP2",), TG_VTEP_IP, s, "the generator's tunnel endpoint (encapsulation's remote_ip)"),
        Setting(("VTEP_IP2_SUBNET",), f"{TG_VTEP_IP.rsplit('.', 1)[0]}.0/{VTEP_PREFIX}", s),
        Setting(
            ("TRAFFICGEN_PORT1_IP",),
            TG_VTEP_IP,
            s,
            "decapsulation's remote_ip and outer source; encapsulation's inner source",
        ),
        Setting(("TRAFFICGEN_PORT2_IP",), INNER_DST_IP, s, "encapsulation's inner destination"),
        Setting(("TRAFFICGEN_PORT1_MAC",), TG_VTEP_MAC, s),
        Setting(
            ("TRAFFICGEN_PORT2_MAC",), TG_VTEP_MAC, s, "outer destination MAC of the encapsulated frames"
        ),
        Setting((f"{frames}_FRAME_L3", "srcip"), TG_VTEP_IP, s, "outer source: the generator's VTEP"),
        Setting((f"{frames}_FRAME_L3", "dstip"), DUT_VTEP_IP, s, "outer destination: the DUT's VTEP"),
        Setting((f"{frames}_FRAME_L4", "inner_srcip"), INNER_SRC_IP, s),
        Setting((f"{frames}_FRAME_L4", "inner_dstip"), INNER_DST_IP, s),
    ]
    if tunnel is TunnelType.VXLAN:
        settings.append(
            Setting(("VXLAN_VNI",), VXLAN_VNI, s, "the tunnel port's key and the frames' VNI, as the lab's")
        )
        settings.append(Setting(("VXLAN_FRAME_L4", "vni"), VXLAN_VNI, s))
    else:
        settings.append(
            Setting(
                ("GENEVE_FRAME_L4", "geneve_vni"),
                0,
                s,
                "VSperf's Geneve port has no key option: VNI 0 (the lab uses 99 on both sides)",
            )
        )
    return settings


def conntrack_settings(scenario: Scenario) -> list[Setting]:
    """Return our conntrack tests as VSperf ``PERFORMANCE_TESTS`` entries, appended (none without).

    Each entry: ``Deployment`` ``p2p``, ``Parameters`` ``TRAFFIC`` (throughput search, both
    directions, ``multistream`` = the scenario's first flow count, ``stream_type`` ``L4``), and
    ``TestSteps``: delete the deployment's rules, add the conntrack rules (:func:`conntrack_flows`).
    """
    tests = [t for t in scenario.tests if t.conntrack is not None]
    if not tests:
        return []
    entries: list[dict[str, Any]] = []
    for test in tests:
        bridge = "$VSWITCH_BRIDGE_NAME"
        steps: list[list[Any]] = [["vswitch", "del_flow", bridge]]
        steps += [["vswitch", "add_flow", bridge, flow] for flow in conntrack_flows(test)]
        entries.append(
            {
                "Name": test.value,
                "Deployment": "p2p",
                "Description": f"ovsperf: P2P through OVS userspace conntrack, ct({test.conntrack}); "
                "no VSperf test (docs/beaker_tasks.md)",
                "Parameters": {
                    "TRAFFIC": {
                        "traffic_type": "rfc2544_throughput",
                        "bidir": "True",
                        "multistream": scenario.flows[0],
                        "stream_type": "L4",
                    },
                },
                "TestSteps": steps,
            }
        )
    return [
        Setting(
            ("PERFORMANCE_TESTS",),
            entries,
            Layer.SCENARIO,
            "ours, appended to VSperf's list (VSperf has no conntrack test)",
            append=True,
        )
    ]


def conntrack_flows(test: VsperfTest) -> list[dict[str, Any]]:
    """Return the OpenFlow rules of a conntrack test as VSperf ``add_flow`` dicts, per port.

    The local lab's rules (``ovsperf_lab/conntrack.py``) in VSperf's spelling (``src/ovs/ofctl.py``
    ``flow_key``: ``key=value`` joined by commas, then ``action=`` and the actions), zone 0:
    table 0 ``ip,ct_state=-trk`` → ``ct(table=1)`` (``ct(table=1,nat)`` for NAT); table 1
    ``+trk+new`` → ``ct(commit)`` (``ct(commit,nat(src=…))``) and out, ``+trk+est`` → out.

    :raises ValueError: when ``test`` is no conntrack test.
    """
    if test.conntrack is None:
        raise ValueError(f"Test '{test.value}' is no conntrack test.")
    nat = "nat" in test.conntrack
    flows: list[dict[str, Any]] = []
    for index, (in_port, out_port) in enumerate((P2P_OFPORTS, P2P_OFPORTS[::-1])):
        commit = f"ct(commit,nat(src={NAT_SOURCES[index]}))" if nat else "ct(commit)"
        match = {"priority": "100", "in_port": in_port, "dl_type": "0x0800"}
        flows += [
            {
                "table": "0",
                **match,
                "ct_state": "-trk",
                "actions": ["ct(table=1,nat)" if nat else "ct(table=1)"],
                "idle_timeout": "0",
            },
            {
                "table": "1",
                **match,
                "ct_state": "+trk+new",
                "actions": [commit, f"output:{out_port}"],
                "idle_timeout": "0",
            },
            {
                "table": "1",
                **match,
                "ct_state": "+trk+est",
                "actions": [f"output:{out_port}"],
                "idle_timeout": "0",
            },
        ]
    return flows
