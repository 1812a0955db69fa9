"""Command line ``ovsperf-vlab up|down|reset|status|ssh|selftest|plan|guest-image|guest-test``."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ovsperf_common.exitcodes import ExitCode
from ovsperf_common.runner import one_line, run_command, sigterm_interrupts
from vlab.config import (
    DEFAULT_CPUS,
    DEFAULT_DATA_PORT,
    DEFAULT_MEMORY_MIB,
    DEFAULT_MIRROR,
    DEFAULT_SSH_PORT,
    DEFAULT_STATE_DIR,
    DEFAULT_TB_SIZE_MIB,
    VM_NAMES,
    LabConfig,
    LabPaths,
    VlabError,
)

if TYPE_CHECKING:
    from vlab.lab import UpOptions

EPILOG = (
    "exit codes: 0 OK; 2 error (bad input, the lab busy or already up, a port taken, the image build "
    "failed, a VM did not answer SSH within its deadline); 3 (status) no VM running. 'ssh' exits with "
    "ssh's own status. Needs qemu-system-x86, qemu-utils and mmdebstrap ('make vlab' installs them). "
    "docs/vlab.md"
)


def _tsv(*fields: object) -> str:
    """Return ``fields`` as one tab-separated stdout line, each escaped (``runner.one_line``)."""
    return "\t".join(one_line(f) for f in fields)


def _add_lab_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=DEFAULT_STATE_DIR,
        help=f"image, key, overlays, logs and state file (default: {DEFAULT_STATE_DIR})",
    )
    parser.add_argument(
        "--ssh-port",
        type=int,
        default=DEFAULT_SSH_PORT,
        help=f"TG's SSH port on 127.0.0.1; the DUT's is the next (default: {DEFAULT_SSH_PORT})",
    )
    parser.add_argument(
        "--data-port",
        type=int,
        default=DEFAULT_DATA_PORT,
        help=f"first of the 6 loopback UDP ports of the data links and the interconnect "
        f"(default: {DEFAULT_DATA_PORT})",
    )
    parser.add_argument(
        "--memory-mib",
        type=int,
        default=DEFAULT_MEMORY_MIB,
        help=f"guest memory of each VM [MiB] (default: {DEFAULT_MEMORY_MIB})",
    )
    parser.add_argument(
        "--tb-size-mib",
        type=int,
        default=DEFAULT_TB_SIZE_MIB,
        help=f"TCG translation cache of each VM [MiB] (default: {DEFAULT_TB_SIZE_MIB})",
    )
    parser.add_argument(
        "--cpus", type=int, default=DEFAULT_CPUS, help=f"virtual CPUs of each VM (default: {DEFAULT_CPUS})"
    )
    parser.add_argument(
        "--mirror",
        default=DEFAULT_MIRROR,
        help=f"Debian mirror to build the image from (default: {DEFAULT_MIRROR})",
    )


def build_parser() -> argparse.ArgumentParser:
    """Return the parser of ``ovsperf-vlab``."""
    parser = argparse.ArgumentParser(
        prog="ovsperf-vlab",
        description="A virtual lab of two Debian 12 VMs (tg, dut) under QEMU (docs/vlab.md).",
        epilog=EPILOG,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    upp = sub.add_parser("up", help="build the image if needed, start both VMs, wait for SSH", epilog=EPILOG)
    test = sub.add_parser("selftest", help="up, SSH, links, vfio-pci, reboot, reset, down (make vlab-test)",
                          epilog=EPILOG)  # fmt: skip
    test.add_argument("--keep", action="store_true", help="leave the lab up at the end")
    plan = sub.add_parser(
        "plan",
        help="run a scenario's Beaker plan on the VMs with ovsperf-remote run, then report (make vlab-test)",
        epilog=EPILOG,
    )
    plan.add_argument("--config", default="OVS_DPDK1q", help="catalog scenario (default: OVS_DPDK1q)")
    plan.add_argument("--engine", default="ovsperf", help="ovsperf or vsperf (default: ovsperf)")
    plan.add_argument("--timeout-h", type=float, default=4.0, help="deadline of ovsperf-remote run [h] (4)")
    plan.add_argument(
        "--lab-args",
        default="",
        help="more ovsperf-lab run options for the DUT, one shell-quoted string (e.g. a short search)",
    )
    plan.add_argument("--keep", action="store_true", help="leave the lab up at the end")
    for up_like in (upp, test, plan):
        _add_up_options(up_like)
    for name, text in (
        ("down", "stop the VMs this tool started"),
        ("reset", "load the saved state into both running VMs"),
        ("status", "list the VMs and their SSH ports"),
    ):
        _add_lab_options(sub.add_parser(name, help=text, epilog=EPILOG))
    image = sub.add_parser(
        "guest-image",
        help="build the PVP/PVVP guest image of 'ovsperf-lab run --guest-image' (a Linux bridge at boot)",
        epilog=EPILOG,
    )
    image.add_argument(
        "output", type=Path, help="the qcow2 file to write (OUT.kernel and OUT.json beside it)"
    )
    image.add_argument("--rebuild", action="store_true", help="build even when an earlier build is there")
    image.add_argument("--mirror", default=DEFAULT_MIRROR, help=f"Debian mirror (default: {DEFAULT_MIRROR})")
    image.add_argument("--nice", type=int, default=0, choices=range(0, 20), metavar="0..19",
                       help="niceness of the build (default: 0)")  # fmt: skip
    guest_test = sub.add_parser(
        "guest-test",
        help="build the guest image (cached), run PVP and PVVP through QEMU guests with ovsperf-lab run, "
        "check the results (make vlab-test)",
        epilog=EPILOG,
    )
    guest_test.add_argument("output", type=Path, help="the guest image (built when missing)")
    guest_test.add_argument(
        "--mirror", default=DEFAULT_MIRROR, help=f"Debian mirror (default: {DEFAULT_MIRROR})"
    )
    guest_test.add_argument(
        "--accel", choices=["kvm", "tcg"], default="tcg", help="--guest-accel (default: tcg)"
    )
    guest_test.add_argument(
        "--lab-args", default="", help="more ovsperf-lab run options, one shell-quoted string"
    )
    guest_test.add_argument(
        "--results-dir", type=Path, help="where the runs write (default: a temporary directory)"
    )
    ssh = sub.add_parser("ssh", help="open SSH to a VM (or run a command there)", epilog=EPILOG)
    _add_lab_options(ssh)
    ssh.add_argument("vm", choices=VM_NAMES, help="which VM")
    ssh.add_argument("remote", nargs=argparse.REMAINDER, help="command to run (after --)")
    return parser


def _add_up_options(upp: argparse.ArgumentParser) -> None:
    _add_lab_options(upp)
    upp.add_argument("--rebuild", action="store_true", help="build the image even when one is there")
    upp.add_argument("--accel", choices=["kvm", "tcg"], help="skip the KVM probe and use this accelerator")
    upp.add_argument("--nice", type=int, default=0, choices=range(0, 20), metavar="0..19",
                     help="niceness of QEMU and the image build (default: 0)")  # fmt: skip
    upp.add_argument(
        "--boot-timeout-s", type=float, help="longest one VM's boot may take [s] (default: by accelerator)"
    )


def _config(args: argparse.Namespace) -> LabConfig:
    return LabConfig(
        state_dir=args.state_dir,
        ssh_port=args.ssh_port,
        data_port=args.data_port,
        memory_mib=args.memory_mib,
        tb_size_mib=args.tb_size_mib,
        cpus=args.cpus,
        mirror=args.mirror,
    )


def _up_options(args: argparse.Namespace) -> UpOptions:
    from vlab.lab import UpOptions  # psutil: ovsperf[vlab]
    from vlab.qemu import Accel

    return UpOptions(
        rebuild=args.rebuild,
        accel=Accel.from_spec(args.accel, field="--accel") if args.accel else None,
        nice=args.nice,
        boot_timeout_s=args.boot_timeout_s,
    )


def _up(args: argparse.Namespace) -> int:
    from vlab.lab import up  # psutil: ovsperf[vlab]

    with sigterm_interrupts():
        vms, _timings = up(_config(args), _up_options(args))
    for vm in vms:
        print(_tsv(vm.vm, f"127.0.0.1:{vm.ssh_port}", vm.pid, vm.accel))
    return ExitCode.OK


def _selftest(args: argparse.Namespace) -> int:
    from vlab.selftest import selftest  # psutil: ovsperf[vlab]

    with sigterm_interrupts():
        report = selftest(_config(args), _up_options(args), keep=args.keep)
    for timing in report.timings:
        print(_tsv("time", timing.step, f"{timing.seconds:.1f}"))
    for what, rss in report.rss_bytes.items():
        print(_tsv("rss", what, f"{rss / (1 << 20):.0f}"))
    for note in report.notes:
        print(_tsv("ok", note))
    return ExitCode.OK


def _plan(args: argparse.Namespace) -> int:
    from vlab.beakerplan import PlanOptions, run_plan  # psutil, PyYAML: ovsperf[vlab]
    from vlab.lab import down

    if not 0 < args.timeout_h <= 48:
        raise VlabError(f"'--timeout-h' must be within 0 and 48 hours, got {args.timeout_h:g}.")
    try:
        lab_args = tuple(shlex.split(args.lab_args))
    except ValueError as err:
        raise VlabError(f"'--lab-args' is not a shell-quoted option list: {err}.") from err
    options = PlanOptions(config=args.config, engine=args.engine, timeout_s=args.timeout_h * 3600.0,
                          lab_args=lab_args, up=_up_options(args))  # fmt: skip
    config = _config(args)
    try:
        with sigterm_interrupts():
            report = run_plan(config, options)
    finally:
        if not args.keep:
            down(config)
    for timing in report.timings:
        print(_tsv("time", timing.step, f"{timing.seconds:.1f}"))
    for vm, rss in report.peak_rss_bytes.items():
        print(_tsv("rss", f"{vm} peak", f"{rss / (1 << 20):.0f}"))
    for line in report.results:
        print(_tsv("result", line))
    print(_tsv("run", report.run_dir))
    if not report.passed:
        print(
            f"ovsperf-vlab: the plan ran, but ovsperf-remote run exited {report.remote_status} and "
            f"process-ci-results {report.report_status}; see {report.run_dir}.",
            file=sys.stderr,
        )
        return ExitCode.REGRESSION
    return ExitCode.OK


def _down(args: argparse.Namespace) -> int:
    from vlab.lab import down  # psutil: ovsperf[vlab]

    for vm in down(_config(args)):
        print(_tsv(vm.vm, vm.pid))
    return ExitCode.OK


def _reset(args: argparse.Namespace) -> int:
    from vlab.lab import reset  # psutil: ovsperf[vlab]

    for timing in reset(_config(args)):
        print(_tsv(timing.step, f"{timing.seconds:.1f}"))
    return ExitCode.OK


def _status(args: argparse.Namespace) -> int:
    from vlab.lab import status  # psutil: ovsperf[vlab]

    rows = status(_config(args))
    for name, vm in rows:
        fields = [name, "running", f"127.0.0.1:{vm.ssh_port}", vm.pid, vm.accel] if vm else [name, "stopped"]
        print(_tsv(*fields))
    return ExitCode.OK if any(vm for _, vm in rows) else ExitCode.NO_RESULTS


def _ssh(args: argparse.Namespace) -> int:
    from vlab.guest import ssh_argv

    config = _config(args)
    remote = args.remote[1:] if args.remote[:1] == ["--"] else args.remote
    argv = ssh_argv(LabPaths(config.state_dir), config.ssh_port_of(args.vm), *remote, batch=bool(remote))
    sys.stdout.flush()
    os.execvp(argv[0], argv)  # replaces this process: ssh's exit status is the command's


def _guest_image(args: argparse.Namespace) -> int:
    from vlab.guestimage import build_guest_image

    with sigterm_interrupts():
        image = build_guest_image(args.output, args.mirror, nice=args.nice, rebuild=args.rebuild)
    print(_tsv(image.disk, image.kernel, "reused" if image.reused else "built"))
    return ExitCode.OK


def _guest_test(args: argparse.Namespace) -> int:
    from vlab.guesttest import GuestTestOptions, run_guest_test
    from vlab.qemu import Accel

    try:
        lab_args = tuple(shlex.split(args.lab_args))
    except ValueError as err:
        raise VlabError(f"'--lab-args' is not a shell-quoted option list: {err}.") from err
    accel = Accel.from_spec(args.accel, field="--accel")
    options = GuestTestOptions(image=args.output, mirror=args.mirror, accel=accel, lab_args=lab_args,
                               results_dir=args.results_dir)  # fmt: skip
    with sigterm_interrupts():
        report = run_guest_test(options)
    for line in report:
        print(_tsv(*line))
    return ExitCode.OK


def _run(args: argparse.Namespace) -> int:
    commands = {
        "guest-image": _guest_image,
        "guest-test": _guest_test,
        "up": _up,
        "down": _down,
        "reset": _reset,
        "status": _status,
        "ssh": _ssh,
        "selftest": _selftest,
        "plan": _plan,
    }
    return commands[args.command](args)


def main(argv: list[str] | None = None) -> int:
    """Run ``ovsperf-vlab``; return the process exit code (see ``--help``)."""
    return run_command(build_parser(), _run, argv)


if __name__ == "__main__":
    sys.exit(main())
