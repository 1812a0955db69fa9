"""A stand-in ``jobcreator`` (the process edge of ``ovsperf-koji submit``): records argv, prints J:ids."""

from __future__ import annotations

import json
import os
from pathlib import Path

FAKE_JOBCREATOR = r'''#!/usr/bin/env python3
"""Stand-in jobcreator: records argv, prints J:<id>; fails for $FAKE_JOBCREATOR_FAIL."""
import json, os, sys
log = os.environ["FAKE_JOBCREATOR_LOG"]
args = sys.argv[1:]
with open(log, "a") as handle:
    handle.write(json.dumps(args) + "\n")
config = args[args.index("--config") + 1] if "--config" in args else None
if config and config in os.environ.get("FAKE_JOBCREATOR_FAIL", "").split(","):
    print("jobcreator: error: Beaker hub refused the job for " + config, file=sys.stderr)
    sys.exit(2)
with open(log) as handle:
    count = sum(1 for _ in handle)
if "--output" in args:
    with open(args[args.index("--output") + 1], "w") as handle:
        handle.write(f'<job retention_tag="scratch"><whiteboard>{config}</whiteboard></job>\n')
print("Submitted.", file=sys.stderr)
print(f"J:{4200 + count}")
'''


class FakeJobcreator:
    """A recording ``jobcreator`` on ``PATH`` (see :data:`FAKE_JOBCREATOR`)."""

    def __init__(self, bindir: Path) -> None:
        bindir.mkdir(parents=True, exist_ok=True)
        self.bindir = bindir
        self.log = bindir / "jobcreator-calls.jsonl"
        exe = bindir / "jobcreator"
        exe.write_text(FAKE_JOBCREATOR)
        exe.chmod(0o755)

    def env(self, base: dict[str, str] | None = None, fail: str = "") -> dict[str, str]:
        env = dict(os.environ if base is None else base)
        env["PATH"] = f"{self.bindir}{os.pathsep}{env.get('PATH', '')}"
        env["FAKE_JOBCREATOR_LOG"] = str(self.log)
        env["FAKE_JOBCREATOR_FAIL"] = fail
        return env

    def calls(self) -> list[list[str]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]
