"""Turn one trial into its ``ovsperf-trials.json`` object (docs/results-format.md).

One function per kind of trial: a binary-search trial (:func:`binary_trial_to_json`, with the
generator/OVS cross-check), an MLRsearch trial (:func:`mlr_trial_to_json`; ``relevant_to`` is
filled in after the search) and a latency trial at a share of the PDR load
(:func:`latency_trial_to_json`; its histograms go to ``ovsperf-latency.json``). Units are in the key
names; times are local ISO 8601 with their offset. Keeping the records is
:mod:`ovsperf_lab.results`' job.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ovsperf_common.framemix import FrameSizeItem, item_json
from ovsperf_lab.search.binary import TrialRecord
from ovsperf_lab.search.latency import LatencyLevel
from ovsperf_lab.search.mlr import MlrTrial


def trial_to_json(record: TrialRecord, crosscheck: dict[str, Any] | None = None) -> dict[str, Any]:
    """Return one trial as a JSON-ready dict (units in the key names)."""
    result = record.result
    return {
        "index": record.index,
        "kind": record.kind.value,
        "outcome": record.outcome.value,
        **item_json(result.spec.frame_size_bytes),
        "rate_pps": record.rate_pps,
        "duration_s": result.spec.duration_s,
        "bidirectional": result.spec.bidirectional,
        "flows": result.spec.flows,
        "started_at": datetime.fromtimestamp(record.started_at).astimezone().isoformat(),
        "finished_at": datetime.fromtimestamp(record.finished_at).astimezone().isoformat(),
        "valid": result.valid,
        "invalid_reason": result.invalid_reason,
        "tx_packets": result.tx_packets,
        "rx_packets": result.rx_packets,
        "loss_ratio": result.loss_ratio,
        "tx_pps": result.tx_pps,
        "rx_pps": result.rx_pps,
        "directions": [
            {
                "tx_port": d.tx_port,
                "rx_port": d.rx_port,
                "tx_packets": d.tx_packets,
                "rx_packets": d.rx_packets,
                "loss_ratio": d.loss_ratio,
                "tx_pps": d.tx_pps,
                "tx_duration_s": d.tx_duration_s,
                "reordered_packets": d.reordered_packets,
                "duplicate_packets": d.duplicate_packets,
                "latency_min_ns": d.latency_min_ns,
                "latency_avg_ns": d.latency_avg_ns,
                "latency_max_ns": d.latency_max_ns,
                "latency_p50_ns": d.latency_p50_ns,
                "latency_p99_ns": d.latency_p99_ns,
                "latency_p999_ns": d.latency_p999_ns,
                **({} if d.per_size is None else {"per_size": _per_size_json(d.per_size)}),
            }
            for d in result.directions
        ],
        "crosscheck": crosscheck,
    }


def binary_trial_to_json(record: TrialRecord, crosscheck: dict[str, Any] | None) -> dict[str, Any]:
    """Return one binary-search trial as its ``ovsperf-trials.json`` object (``search``: ``'binary'``)."""
    return {"search": "binary", **trial_to_json(record, crosscheck)}


def _per_size_json(per_size: tuple[tuple[int, int, int], ...]) -> list[dict[str, Any]]:
    """Return a mix's per-size counters of one direction as ``per_size`` entries (loss ratio added)."""
    return [
        {
            "frame_size_bytes": size,
            "tx_packets": tx,
            "rx_packets": rx,
            "loss_ratio": (tx - rx) / tx if tx else 0.0,
        }
        for size, tx, rx in per_size
    ]


def mlr_trial_to_json(trial: MlrTrial, frame_size_bytes: FrameSizeItem, flows: int) -> dict[str, Any]:
    """Return one MLRsearch trial as a JSON-ready dict (``relevant_to`` is added after the search)."""
    return {
        "search": "mlr",
        "kind": "search",
        **item_json(frame_size_bytes),
        "flows": flows,
        "load_pps_per_direction": trial.load_pps,
        "duration_s": trial.duration_s,
        "started_at": datetime.fromtimestamp(trial.started_at).astimezone().isoformat(),
        "wall_s": trial.wall_s,
        "valid": trial.valid,
        "invalid_reason": trial.invalid_reason,
        "intended_packets_per_direction": trial.intended_packets,
        "rx_packets": list(trial.rx_packets),
        "loss_ratios": list(trial.loss_ratios),
        **(
            {"per_size": [None if p is None else _per_size_json(p) for p in trial.per_size]}
            if any(p is not None for p in trial.per_size)
            else {}
        ),
        "relevant_to": [],
    }


def latency_trial_to_json(level: LatencyLevel, frame_size_bytes: FrameSizeItem, flows: int) -> dict[str, Any]:
    """Return one latency trial as a JSON-ready dict (its histograms are in ``ovsperf-latency.json``)."""
    summary = level.all
    return {
        "search": "mlr",
        "kind": "latency",
        **item_json(frame_size_bytes),
        "flows": flows,
        "percent_of_pdr": level.percent_of_pdr,
        "load_pps_per_direction": level.load_pps,
        "duration_s": level.duration_s,
        "valid": level.valid,
        "invalid_reason": level.invalid_reason,
        "loss_ratio": level.loss_ratio,
        "latency": None if summary is None else {k: v for k, v in summary.to_json().items() if k != "hdrh"},
    }
