"""``ovsperf-remote run``: turn the command line into a run (new or resumed) and report how it ended.

Validation happens here, before any connection: ``--env`` names and values, ``--collector``, the
remote directory, a new run's ``--log-dir`` (a directory that does not exist yet), the reboot
commands and deadlines; a resumed run must have the same plan as the
one recorded in its ``state.json``.
"""

from __future__ import annotations

import argparse
import logging
import shlex
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Any

from ovsperf_common.errors import FieldError
from ovsperf_common.exitcodes import ExitCode
from ovsperf_common.fields import rsync_destination
from ovsperf_common.runner import one_line
from remote.errors import RemoteError
from remote.executor import PARAM_NAME_RE, UPLOADED_INVENTORY
from remote.plan import HostPlan
from remote.run import (
    STATE_FILE,
    HostState,
    RebootSettings,
    Runner,
    RunOptions,
    RunState,
    new_run_id,
)
from remote.ssh import BOOT_ID_COMMAND, Settings, parse_target
from vsperf_configs.inventory import load_inventory

log = logging.getLogger(__name__)

DEFAULT_REMOTE_BASE = "/var/tmp/ovsperf-remote"
"""Where each host gets ``<run id>/<role>/``: kept after the run (logs, resume); survives reboots."""
RESERVED_ENV = {"RSTRNT_REBOOTCOUNT", "REBOOTCOUNT", "OVSPERF_RUN_ID", "VSPERF_RESULTS_FILE"}
"""Set by the runner; ``--env`` may not change them."""

RESUMED = (
    "tg",
    "dut",
    "catalog",
    "inventory",
    "collector",
    "env",
    "tg_env",
    "dut_env",
    "timeout",
    "reboot_command",
    "boot_id_command",
    "reboot_timeout",
)
"""Options ``state.json`` keeps, so that ``--resume LOG_DIR`` needs nothing else (given again: they win)."""
RUN_DEFAULTS: dict[str, Any] = {
    "timeout": 12.0,
    "reboot_command": "systemctl reboot",
    "boot_id_command": " ".join(BOOT_ID_COMMAND),
    "reboot_timeout": 1200.0,
}
"""Defaults of the options above that have one (filled in after a resume took the recorded ones)."""

PlanFactory = Callable[[argparse.Namespace, str, str, "str | None"], tuple[HostPlan, HostPlan]]


def _env(items: list[str], option: str, plan: HostPlan | None) -> dict[str, str]:
    """Parse ``NAME=VALUE`` items of ``option``.

    :raises FieldError: naming the option, for a bad name, a multi-line value, a reserved name or
        a name the plan already sets (a task parameter).
    """
    env: dict[str, str] = {}
    params = {name for step in plan.steps for name, _ in step.params} if plan is not None else set()
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not PARAM_NAME_RE.match(name):
            raise FieldError(
                f"'{one_line(item)[:80]}' is not NAME=VALUE with NAME in [A-Z0-9_].", field=option
            )
        if name in RESERVED_ENV or name in params:
            raise FieldError(f"{name} is set by the run (the plan or the runner); not changed.", field=option)
        if "\n" in value or "\0" in value or len(value) > 4096:
            raise FieldError(f"the value of {name} is not one line of at most 4096 characters.", field=option)
        env[name] = value
    return env


def _command(text: str, option: str) -> tuple[str, ...]:
    try:
        words = tuple(shlex.split(text))
    except ValueError as err:
        raise FieldError(f"cannot split '{one_line(text)[:80]}': {err}.", field=option) from err
    if not words:
        raise FieldError("is empty.", field=option)
    return words


def _options(
    args: argparse.Namespace, log_dir: Path, plans: tuple[HostPlan, HostPlan], collector: str | None
) -> RunOptions:
    if not 0 < args.timeout <= 168:
        raise FieldError("must be in (0, 168] hours.", field="--timeout")
    if not 10 <= args.reboot_timeout <= 7200:
        raise FieldError("must be in [10, 7200] seconds.", field="--reboot-timeout")
    common = _env(args.env, "--env", None)
    tg, dut = plans
    env = {
        tg.role: {**common, **_env(args.tg_env, "--tg-env", tg)},
        dut.role: {**common, **_env(args.dut_env, "--dut-env", dut)},
    }
    for plan in plans:
        clash = set(env[plan.role]) & {name for step in plan.steps for name, _ in step.params}
        if clash:
            raise FieldError(
                f"{', '.join(sorted(clash))} is a task parameter of the plan; not changed.", field="--env"
            )
    local = None if collector is None or remote_collector(collector) else Path(collector)
    return RunOptions(
        log_dir=log_dir,
        deadline_s=args.timeout * 3600.0,
        env=env,
        collector=local,
        reboot=RebootSettings(
            command=_command(args.reboot_command, "--reboot-command"),
            boot_id_command=_command(args.boot_id_command, "--boot-id-command"),
            timeout_s=args.reboot_timeout,
        ),
    )


def _local_inventory(args: argparse.Namespace) -> Path | None:
    """Return ``--inventory`` when it names a local file (checked now); None for a path on the hosts.

    A local file is copied into each run directory; the plan then names that copy.

    :raises InventoryError: naming the file, when it is not a valid inventory.
    """
    if not args.inventory or not Path(args.inventory).expanduser().is_file():
        return None
    local = Path(args.inventory).expanduser().resolve()
    load_inventory(local)  # a broken file is refused here, before any host is touched
    args.inventory = UPLOADED_INVENTORY
    return local


def remote_collector(collector: str | None) -> str | None:
    """Return ``--collector`` when it is a remote ``user@host:/path``, ``None`` for a local directory.

    A value with a ``:`` before its first ``/`` is remote (as rsync decides) and must be an rsync
    destination by the one rule (:func:`~ovsperf_common.fields.rsync_destination`): the DUT's
    vsperf_test sends the results there itself, and the path reaches the collector's shell.

    :raises FieldError: naming ``--collector`` for a remote value that breaks the rule.
    """
    if not collector:
        return None
    colon, slash = collector.find(":"), collector.find("/")
    if colon < 0 or 0 <= slash < colon:
        return None
    return rsync_destination(collector, "--collector")


def remote_base(text: str) -> PurePosixPath:
    """Return ``--remote-dir`` checked: an absolute path without spaces or ``..``.

    :raises FieldError: naming ``--remote-dir``.
    """
    base = PurePosixPath(text)
    if not base.is_absolute() or ".." in base.parts or one_line(text) != text or " " in text:
        raise FieldError(
            f"'{one_line(text)[:80]}' is not an absolute path without spaces.", field="--remote-dir"
        )
    return base


def new_log_dir(log_dir: Path) -> Path:
    """Return ``--log-dir`` when it does not exist yet: a new run writes only into a new directory.

    An existing directory is refused (a dangling symbolic link too): one holding ``state.json``
    is another run's, which ``--resume`` continues (a new run would overwrite its state and mix
    its logs); any other would receive our files among its own (``--log-dir /etc``).

    :raises FieldError: naming ``--log-dir``.
    """
    if (log_dir / STATE_FILE).exists():
        raise FieldError(
            f"'{one_line(log_dir)}' holds the {STATE_FILE} of another run; continue that run with "
            f"'--resume {one_line(log_dir)}', or give a new directory.",
            field="--log-dir",
        )
    if log_dir.exists() or log_dir.is_symlink():
        raise FieldError(
            f"'{one_line(log_dir)}' exists; give a directory that does not exist yet (it is created "
            "for this run, and only it is written).",
            field="--log-dir",
        )
    return log_dir


def _create_log_dir(log_dir: Path, *, resumed: bool) -> None:
    """Create a new run's log directory (and missing parents); a resumed run's exists already.

    :raises FieldError: naming ``--log-dir`` when it appeared meanwhile or cannot be created.
    """
    if resumed:
        return
    try:
        log_dir.mkdir(parents=True)
    except FileExistsError as err:
        new_log_dir(log_dir)  # created meanwhile: say by what
        raise FieldError(f"'{one_line(log_dir)}' was created meanwhile.", field="--log-dir") from err
    except OSError as err:
        raise FieldError(f"cannot create '{one_line(log_dir)}': {err.strerror}.", field="--log-dir") from err


def run_command_line(args: argparse.Namespace, settings: Settings, make_plans: PlanFactory) -> int:
    """Start or resume a run from the parsed command line; print where the results are.

    :returns: 0 when every step of both hosts passed and the results are where asked; 1 when a
        task reported a measured FAIL (the run went on, as under Beaker); raises otherwise.
    :raises RemoteError: when a host failed (the other was stopped) or the results could not be
        fetched; the message names the host, the step and the log.
    :raises FieldError: for a bad option, before any connection.
    """
    if args.resume is None and args.log_dir is not None:
        new_log_dir(args.log_dir)  # before anything else
    if args.resume is not None:
        state = RunState.load(args.resume / STATE_FILE)
        log_dir = args.resume
        config = args.config or state.config
        if config != state.config:
            raise FieldError(f"the run to resume ran {state.config}, not {args.config}.", field="--config")
        args.config = config
        for key in RESUMED:
            if getattr(args, key) in (None, []):
                value = state.options.get(key)
                setattr(args, key, Path(value) if key == "catalog" and value else value)
    for key, default in RUN_DEFAULTS.items():
        if getattr(args, key) is None:
            setattr(args, key, default)
    for key in ("env", "tg_env", "dut_env"):
        setattr(args, key, list(getattr(args, key) or []))
    if args.resume is not None:
        tg_text, dut_text, collector = args.tg, args.dut, args.collector
    else:
        if not (args.config and args.tg and args.dut):
            raise FieldError("--config, --tg and --dut are needed (or --resume LOG_DIR).", field="run")
        tg_text, dut_text, collector = args.tg, args.dut, args.collector
    targets = {"TRAFFICGEN": parse_target(tg_text, "--tg"), "DUT": parse_target(dut_text, "--dut")}
    given_inventory = args.inventory
    local_inventory = _local_inventory(args)
    sent_to = remote_collector(collector)
    plans = make_plans(args, targets["TRAFFICGEN"].host, targets["DUT"].host, sent_to)
    if args.resume is not None:
        if RunState.plan_of(plans) != state.plan:
            raise RemoteError(
                f"The plan of {state.config} differs from the one in '{args.resume / STATE_FILE}' "
                "(another catalog, inventory or collector?); resume with the same options."
            )
    else:
        run_id = new_run_id()
        base = remote_base(args.remote_dir)
        log_dir = new_log_dir(args.log_dir or Path(f"ovsperf-remote-{run_id}"))
        state = RunState(
            run_id=run_id,
            config=args.config,
            plan=RunState.plan_of(plans),
            hosts={
                p.role: HostState(p.role, targets[p.role].host, str(base / run_id / p.role.lower()))
                for p in plans
            },
            collector=collector,
        )
    options = replace(_options(args, log_dir, plans, collector), inventory=local_inventory)
    state.options = {
        key: str(getattr(args, key)) if isinstance(getattr(args, key), Path) else getattr(args, key)
        for key in RESUMED
    }
    state.options["inventory"] = str(local_inventory) if local_inventory else given_inventory
    _create_log_dir(log_dir, resumed=args.resume is not None)
    state.save(log_dir / STATE_FILE)
    log.info("Run %s of %s: logs and state in '%s'.", state.run_id, state.config, log_dir)
    outcome = Runner(state, plans, targets, settings, options).run()
    if outcome.failures:
        cause = next(iter(outcome.failures.items()))
        stopped = f" {', '.join(outcome.stopped)} stopped." if outcome.stopped else ""
        raise RemoteError(
            f"{cause[0]}: {cause[1]}{stopped} Resume with: ovsperf-remote run --resume {log_dir}"
        )
    if outcome.results:
        print(outcome.results)
    elif sent_to:
        print(f"results sent by the DUT to {sent_to}")
    failed = [f"{role} {step}" for role, steps in outcome.failed_steps.items() for step in steps]
    if failed:
        log.warning("Steps that reported FAIL: %s.", "; ".join(failed))
        return int(ExitCode.REGRESSION)
    return int(ExitCode.OK)
