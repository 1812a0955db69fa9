"""``ovsperf-remote run``: turn the command line into a run (new or resumed) and report how it ended.

Validation happens here, before any connection: ``--env`` names and values, ``--collector``, the
remote directory, a new run's ``--log-dir`` (a directory that does not exist yet), the reboot
commands and deadlines; a resumed run must have the same plan as the
one recorded in its ``state.json``.

The options are a frozen :class:`RunRequest` built in layers by :func:`dataclasses.replace`: the
defaults, then (``--resume``) the options ``state.json`` recorded, then those given on the command
line; the argparse namespace is read, never changed.
"""

from __future__ import annotations

import argparse
import logging
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

from ovsperf_common.errors import FieldError
from ovsperf_common.exitcodes import ExitCode
from ovsperf_common.fields import rsync_destination
from ovsperf_common.runner import one_line
from remote.check import trex_preflight
from remote.defaults import RUN_DEFAULTS
from remote.errors import RemoteError
from remote.executor import PARAM_NAME_RE, UPLOADED_INVENTORY
from remote.plan import TREX_TASK, HostPlan, trex_tarball_url
from remote.run import (
    STATE_FILE,
    HostState,
    RebootSettings,
    RemoteRunState,
    Runner,
    RunOptions,
    new_run_id,
)
from remote.ssh import Settings, parse_target
from vsperf_configs.inventory import Inventory, load_inventory

log = logging.getLogger(__name__)

RESERVED_ENV = {"RSTRNT_REBOOTCOUNT", "REBOOTCOUNT", "OVSPERF_RUN_ID", "VSPERF_RESULTS_FILE"}
"""Set by the runner; ``--env`` may not change them."""

RESUMED = (
    "engine",
    "generator",
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
_ENV_OPTIONS = ("env", "tg_env", "dut_env")
_HOURS_OR_SECONDS = ("timeout", "reboot_timeout")


class ScenarioChoice(Protocol):
    """The options that choose a plan: ``plan``'s namespace or a run's :class:`RunRequest`."""

    @property
    def config(self) -> str:
        """The scenario name."""

    @property
    def catalog(self) -> Path | None:
        """The catalog file; None: the packaged one."""

    @property
    def inventory(self) -> str | None:
        """``INVENTORY`` of the tasks: a path on the hosts."""

    @property
    def engine(self) -> str | None:
        """``--engine`` (``vsperf``, ``ovsperf``); None: the scenario's own."""

    @property
    def generator(self) -> str | None:
        """``--generator`` (``moongen``, ``trex``); None: the inventory's."""


PlanFactory = Callable[
    [ScenarioChoice, str, str, "str | None", "Inventory | None"], tuple[HostPlan, HostPlan]
]
"""(choice, TG host, DUT host, collector, the local inventory loaded) → the plans."""


@dataclass(frozen=True)
class RunRequest:
    """What ``ovsperf-remote run`` is asked: the options :data:`RESUMED` names, and the scenario.

    Empty text, None and () mean "not given" in the layers :meth:`given` merges.
    """

    config: str = ""
    """Scenario name (a resumed run's is the one ``state.json`` recorded)."""
    engine: str | None = None
    """``--engine``: what measures (checked when the plan is made); None: the scenario's own."""
    generator: str | None = None
    """``--generator``: what VSperf drives on the TG (checked when the plan is made); None: the
    inventory's."""
    tg: str = ""
    """``[USER@]HOST[:PORT]`` of the traffic generator."""
    dut: str = ""
    """``[USER@]HOST[:PORT]`` of the device under test."""
    catalog: Path | None = None
    """Scenario catalog file; None: the packaged one."""
    inventory: str | None = None
    """``--inventory``: a local file (copied into each run directory) or a path on the hosts."""
    collector: str | None = None
    """A local directory or ``USER@HOST:/PATH`` (:func:`remote_collector`)."""
    env: tuple[str, ...] = ()
    """``NAME=VALUE`` items for both hosts."""
    tg_env: tuple[str, ...] = ()
    """``NAME=VALUE`` items for the traffic generator."""
    dut_env: tuple[str, ...] = ()
    """``NAME=VALUE`` items for the DUT."""
    timeout: float = RUN_DEFAULTS["timeout"]
    """Deadline of the whole run [hours]."""
    reboot_command: str = RUN_DEFAULTS["reboot_command"]
    """Run as root to reboot a host (shell words)."""
    boot_id_command: str = RUN_DEFAULTS["boot_id_command"]
    """Prints an id that changes at every boot (shell words)."""
    reboot_timeout: float = RUN_DEFAULTS["reboot_timeout"]
    """Until a rebooted host is back [s]."""

    def given(self, options: Mapping[str, Any]) -> RunRequest:
        """Return a copy in which each option of ``options`` that has a value replaces ours.

        :param options: option name (a field) → value as argparse or ``state.json`` holds it (lists
            for the ``--env`` options, text for ``--catalog``); other names are ignored.
        :raises ValueError: for a value that is not of its option's kind (a hand-edited ``state.json``).
        :raises TypeError: likewise.
        """
        taken: dict[str, Any] = {}
        for key in ("config", *RESUMED):
            value = options.get(key)
            if value is None or value in ("", [], ()):
                continue
            if key == "catalog":
                taken[key] = Path(value)
            elif key in _ENV_OPTIONS:
                if not isinstance(value, (list, tuple)):
                    raise TypeError(f"'{key}' is not a list")
                taken[key] = tuple(str(item) for item in value)
            elif key in _HOURS_OR_SECONDS:
                taken[key] = float(value)
            else:
                taken[key] = str(value)
        return replace(self, **taken)

    def recorded(self) -> dict[str, Any]:
        """Return the options :data:`RESUMED` names as ``state.json`` keeps them (JSON values)."""
        document: dict[str, Any] = {}
        for key in RESUMED:
            value = getattr(self, key)
            document[key] = (
                str(value) if isinstance(value, Path) else list(value) if isinstance(value, tuple) else value
            )
        return document


def _env(items: tuple[str, ...], option: str, plan: HostPlan | None) -> dict[str, str]:
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


def _options(request: RunRequest, log_dir: Path, plans: tuple[HostPlan, HostPlan]) -> RunOptions:
    if not 0 < request.timeout <= 168:
        raise FieldError("must be in (0, 168] hours.", field="--timeout")
    if not 10 <= request.reboot_timeout <= 7200:
        raise FieldError("must be in [10, 7200] seconds.", field="--reboot-timeout")
    common = _env(request.env, "--env", None)
    tg, dut = plans
    env = {
        tg.role: {**common, **_env(request.tg_env, "--tg-env", tg)},
        dut.role: {**common, **_env(request.dut_env, "--dut-env", dut)},
    }
    for plan in plans:
        clash = set(env[plan.role]) & {name for step in plan.steps for name, _ in step.params}
        if clash:
            raise FieldError(
                f"{', '.join(sorted(clash))} is a task parameter of the plan; not changed.", field="--env"
            )
    collector = request.collector
    local = None if collector is None or remote_collector(collector) else Path(collector)
    return RunOptions(
        log_dir=log_dir,
        deadline_s=request.timeout * 3600.0,
        env=env,
        collector=local,
        reboot=RebootSettings(
            command=_command(request.reboot_command, "--reboot-command"),
            boot_id_command=_command(request.boot_id_command, "--boot-id-command"),
            timeout_s=request.reboot_timeout,
        ),
    )


def local_inventory(inventory: str | None) -> tuple[Path, Inventory] | None:
    """Return ``--inventory`` and its content when it names a local file; None for a path on the hosts.

    A local file is copied into each run directory; the plan then names that copy
    (:data:`~remote.executor.UPLOADED_INVENTORY`) and takes its ``generator`` from it.

    :raises InventoryError: naming the file, when it is not a valid inventory.
    """
    if not inventory or not Path(inventory).expanduser().is_file():
        return None
    local = Path(inventory).expanduser().resolve()
    return local, load_inventory(local)  # a broken file is refused here, before any host is touched


def _request(args: argparse.Namespace) -> tuple[RunRequest, RemoteRunState | None]:
    """Return the run's options and, for ``--resume``, the state of the run it continues.

    :raises FieldError: for a ``--config`` other than the resumed run's, or a missing
        ``--config``, ``--tg`` or ``--dut``.
    :raises RemoteError: naming ``state.json`` when it cannot be read or holds bad options.
    """
    if args.resume is None:
        request = RunRequest().given(vars(args))
        if not (request.config and request.tg and request.dut):
            raise FieldError("--config, --tg and --dut are needed (or --resume LOG_DIR).", field="run")
        return request, None
    path = args.resume / STATE_FILE
    state = RemoteRunState.load(path)
    if args.config and args.config != state.config:
        raise FieldError(f"the run to resume ran {state.config}, not {args.config}.", field="--config")
    try:
        recorded = RunRequest(config=state.config).given(state.options)
    except (ValueError, TypeError) as err:
        raise RemoteError(f"Cannot resume from '{path}': its options: {one_line(err)}.") from err
    request = recorded.given(vars(args))
    missing = [f"--{key}" for key in ("tg", "dut") if not getattr(request, key)]
    if missing:
        raise FieldError(f"'{path}' records no {' or '.join(missing)}; give it.", field="--resume")
    return request, state


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
        fetched; the message names the host, the step and the log. With a TRex plan, also when the
        TG fails its preflight (:func:`~remote.check.trex_preflight`), before either host runs a step.
    :raises FieldError: for a bad option, before any connection (with a TRex plan: a ``--tg`` that
        is not the DUT's TRex peer, :func:`~remote.plan.trex_tarball_url`).
    """
    if args.resume is None and args.log_dir is not None:
        new_log_dir(args.log_dir)  # before anything else
    request, resumed = _request(args)
    targets = {"TRAFFICGEN": parse_target(request.tg, "--tg"), "DUT": parse_target(request.dut, "--dut")}
    local = local_inventory(request.inventory)
    inventory = local[1] if local else None
    sent_to = remote_collector(request.collector)
    chosen = replace(request, inventory=UPLOADED_INVENTORY) if local else request
    plans = make_plans(chosen, targets["TRAFFICGEN"].host, targets["DUT"].host, sent_to, inventory)
    if resumed is not None:
        state, log_dir = resumed, args.resume
        if RemoteRunState.plan_of(plans) != state.plan:
            raise RemoteError(
                f"The plan of {state.config} differs from the one in '{args.resume / STATE_FILE}' "
                "(another catalog, inventory or collector?); resume with the same options."
            )
    else:
        run_id = new_run_id()
        base = remote_base(args.remote_dir)
        log_dir = new_log_dir(args.log_dir or Path(f"ovsperf-remote-{run_id}"))
        state = RemoteRunState(
            run_id=run_id,
            config=request.config,
            plan=RemoteRunState.plan_of(plans),
            hosts={
                p.role: HostState(p.role, targets[p.role].host, str(base / run_id / p.role.lower()))
                for p in plans
            },
            collector=request.collector,
        )
    options = replace(_options(request, log_dir, plans), inventory=local[0] if local else None)
    state.options = request.recorded()
    if local:
        state.options["inventory"] = str(local[0])
    tg, dut = targets["TRAFFICGEN"], targets["DUT"]
    if any(step.task == TREX_TASK for step in plans[0].steps):  # before either host runs a step
        trex_preflight(tg, settings, trex_tarball_url(inventory, tg.host, dut.host) if inventory else None)
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
