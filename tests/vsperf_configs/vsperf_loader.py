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
        "dpdk": {"type": "src", "src": {}, "bin": {"modules": ["vfio-pci"]}},
        "qemu": {"type": "src", "src": {}, "bin": {"qemu-system": "qemu-system-x86_64"}},
    },
    "VSWITCHD_DPDK_CONFIG": {"dpdk-init": "true", "dpdk-lcore-mask": "0x4"},
    "VSWITCH_PMD_CPU_MASK": "30",
    "WHITELIST_NICS": [],
    "GUEST_IMAGE": [""],
    # conf/12_k8s.conf: the Kubernetes pod VSperf makes for every p2p test; conf/02_vswitch.conf.
    "POD_DIR": "/root/vswitchperf/pods/",
    "POD": "Papi",
    "HUGEPAGE_DIR": "/dev/hugepages",
}


def load_like_vsperf(conf_file: Path) -> dict[str, Any]:
    """Return VSperf's effective settings after loading ``conf_file`` over :data:`VSPERF_DEFAULTS`."""
    module = types.ModuleType("custom_settings")
    module.__dict__.update(copy.deepcopy(VSPERF_DEFAULTS))
    code = compile(conf_file.read_text(encoding="utf-8"), str(conf_file), "exec")
    exec(code, module.__dict__)
    return {
        name: getattr(module, name)
        for name in dir(module)
        if name.isupper() and getattr(module, name) is not None
    }
