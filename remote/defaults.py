"""The defaults ``ovsperf-remote``'s options show in ``--help``, importable without paramiko.

The parser (``remote/cli.py``) is built before the runner imports the SSH modules, so that
``--help`` and a missing ``ovsperf[remote]`` install group are one clean answer; the modules that
use these values (:mod:`remote.ssh`, :mod:`remote.runargs`) import them from here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

DEFAULT_REMOTE_BASE = "/var/tmp/ovsperf-remote"
"""Where each host gets ``<run id>/<role>/``: kept after the run (logs, resume); survives reboots."""
DEFAULT_KNOWN_HOSTS = Path("~/.ssh/known_hosts")
"""The known_hosts file ``--known-hosts`` defaults to (``~`` expanded when read)."""
DEFAULT_SSH_CONFIG = Path("~/.ssh/config")
"""The OpenSSH client configuration ``--ssh-config`` defaults to."""
BOOT_ID_COMMAND = ("cat", "/proc/sys/kernel/random/boot_id")
"""Prints the kernel's boot id: a new random UUID at every boot (random(4))."""
RUN_DEFAULTS: dict[str, Any] = {
    "timeout": 12.0,
    "reboot_command": "systemctl reboot",
    "boot_id_command": " ".join(BOOT_ID_COMMAND),
    "reboot_timeout": 1200.0,
}
"""Defaults of the ``run`` options ``state.json`` keeps, filled in after a resume took the recorded ones.

Units: ``timeout`` [hours], ``reboot_timeout`` [s].
"""
