"""Load a conf file the way VSperf does, over a model of VSperf's own defaults.

VSperf (``conf/__init__.py``) loads ``conf/*.conf`` and then ``--conf-file`` into one module named
``custom_settings`` with ``imp.load_source`` and keeps every UPPER_CASE name whose value is not None.
The defaults below are the dict settings our generator mutates, as VSperf ships them
(reference/vsperf.md §4.4), so a partial-dict assignment would visibly lose keys.
"""

from __future__ import annotations

import copy
import types
from pathlib import Path
from typing import Any

VSPERF_DEFAULTS: dict[str, Any] = {
    "TRAFFICGEN": "Dummy",
    "TRAFFICGEN_PKT_SIZES": (64,),
    "TRAFFICGEN_MOONGEN_LINE_SPEED_GBPS": "10",
    "TRAFFICGEN_MOONGEN_BASE_DIR": "/root/MoonGen",
    "TRAFFIC": {
        "traffic_type": "rfc2544_throughput",
        "frame_rate": 100,
        "burst_size": 100,
        "bidir": "True",
        "multistream": 0,
        "stream_type": "L4",
        "pre_installed_flows": "No",
        "flow_type": "port",
        "flow_control": False,
        "learning_frames": True,
        "l2": {"framesize": 64, "srcmac": "00:00:00:00:00:00", "dstmac": "00:00:00:00:00:00"},
        "l3": {"enabled": True, "proto": "udp", "srcip": "1.1.1.1", "dstip": "90.90.90.90"},
        "l4": {"enabled": True, "srcport": 3000, "dstport": 3001},
        "vlan": {"enabled": False, "id": 0, "priority": 0, "cfi": 0},
    },
    "PATHS": {
        "vswitch": {
            "ovs_var_tmp": "/usr/local/var/run/openvswitch/",
            "ovs_etc_tmp": "/usr/local/etc/openvswitch/",
            "OvsDpdkVhost": {"type": "src", "src": {}, "bin": {"ovs-vswitchd": "ovs-vswitchd"}},
            "OvsVanilla": {"type": "src", "src": {}, "bin": {"ovs-vswitchd": "ovs-vswitchd"}},
        },
        # conf/02_vswitch.conf at 90ef48d4: DPDK 17.x's tool names, which distributions no longer ship.
        "dpdk": {
            "type": "src",
            "src": {},
            "bin": {
                "bind-tool": "/usr/share/dpdk/tools/dpdk*bind.py",
                "modules": ["uio", "igb_uio"],
                "testpmd": "testpmd",
            },
        },
        "qemu": {"type": "src", "src": {}, "bin": {"qemu-system": "qemu-system-x86_64"}},
        # conf/03_traffic.conf: the TRex client library VSperf imports (tools/pkt_gen/trex).
        "trafficgen": {"Trex": {"type": "src", "src": {"path": "/root/vswitchperf/src/trex/trex/scripts/"}}},
    },
    "VSWITCHD_DPDK_CONFIG": {"dpdk-init": "true", "dpdk-lcore-mask": "0x4"},
    "VSWITCH_PMD_CPU_MASK": "30",
    "WHITELIST_NICS": [],
    "GUEST_IMAGE": [""],
    # conf/12_k8s.conf: the Kubernetes pod VSperf makes for every p2p test; conf/02_vswitch.conf.
    "POD_DIR": "/root/vswitchperf/pods/",
    "POD": "Papi",
    "HUGEPAGE_DIR": "/dev/hugepages",
    # conf/01_testcases.conf: the first of VSperf's performance tests (ours are appended to them).
    "PERFORMANCE_TESTS": [
        {
            "Name": "phy2phy_tput",
            "Deployment": "p2p",
            "Parameters": {"TRAFFIC": {"traffic_type": "rfc2544_throughput"}},
        },
        {"Name": "phy2phy_forwarding", "Deployment": "p2p"},
    ],
    "VSWITCH_BRIDGE_NAME": "vsperf-br0",
}

INTEGRATION_DEFAULTS: dict[str, Any] = {
    # conf/integration/02_vswitch.conf and 03_traffic.conf, which `vsperf --integration` loads too.
    "VTEP_IP1": "192.168.0.1/24",
    "VTEP_IP2": "192.168.240.10",
    "VTEP_IP2_SUBNET": "192.168.240.0/24",
    "TUNNEL_INTEGRATION_BRIDGE": "vsperf-br0",
    "TUNNEL_EXTERNAL_BRIDGE": "vsperf-br-ext",
    "TUNNEL_EXTERNAL_BRIDGE_IP": "192.168.240.1/24",
    "TUNNEL_TYPE": "vxlan",
    "TRAFFICGEN_PORT1_MAC": "02:00:00:00:00:01",
    "TRAFFICGEN_PORT2_MAC": "02:00:00:00:00:02",
    "TRAFFICGEN_PORT1_IP": "1.1.1.1",
    "TRAFFICGEN_PORT2_IP": "90.90.90.90",
    "VXLAN_VNI": "99",
    "VXLAN_FRAME_L2": {"srcmac": "01:02:03:04:05:06", "dstmac": "06:05:04:03:02:01"},
    "VXLAN_FRAME_L3": {"proto": "udp", "packetsize": 64, "srcip": "1.1.1.1", "dstip": "192.168.240.1"},
    "VXLAN_FRAME_L4": {
        "srcport": 4789,
        "dstport": 4789,
        "vni": "99",
        "inner_srcmac": "01:02:03:04:05:06",
        "inner_dstmac": "06:05:04:03:02:01",
        "inner_srcip": "192.168.0.10",
        "inner_dstip": "192.168.240.9",
        "inner_proto": "udp",
        "inner_srcport": 3000,
        "inner_dstport": 3001,
    },
    "GENEVE_FRAME_L2": {"srcmac": "01:02:03:04:05:06", "dstmac": "06:05:04:03:02:01"},
    "GENEVE_FRAME_L3": {"proto": "udp", "packetsize": 64, "srcip": "1.1.1.1", "dstip": "192.168.240.1"},
    "GENEVE_FRAME_L4": {
        "srcport": 6081,
        "dstport": 6081,
        "geneve_vni": 0,
        "inner_srcmac": "01:02:03:04:05:06",
        "inner_dstmac": "06:05:04:03:02:01",
        "inner_srcip": "192.168.0.10",
        "inner_dstip": "192.168.240.9",
        "inner_proto": "udp",
        "inner_srcport": 3000,
        "inner_dstport": 3001,
    },
    "INTEGRATION_TESTS": [
        {"Name": "overlay_p2p_tput", "Deployment": "op2p", "Tunnel Operation": "encapsulation"},
        {"Name": "overlay_p2p_decap_tput", "Deployment": "op2p", "Tunnel Operation": "decapsulation"},
    ],
}
"""What ``--integration`` adds to :data:`VSPERF_DEFAULTS` (VSperf's values, as it ships them)."""


def load_like_vsperf(conf_file: Path, *, integration: bool = False) -> dict[str, Any]:
    """Return VSperf's effective settings after loading ``conf_file`` over :data:`VSPERF_DEFAULTS`
    (and :data:`INTEGRATION_DEFAULTS` with ``integration``, as ``vsperf --integration`` does)."""
    module = types.ModuleType("custom_settings")
    module.__dict__.update(copy.deepcopy(VSPERF_DEFAULTS))
    if integration:
        module.__dict__.update(copy.deepcopy(INTEGRATION_DEFAULTS))
    code = compile(conf_file.read_text(encoding="utf-8"), str(conf_file), "exec")
    exec(code, module.__dict__)
    return {
        name: getattr(module, name)
        for name in dir(module)
        if name.isupper() and getattr(module, name) is not None
    }
