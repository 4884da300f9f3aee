"""Reading CloudWatch embedded metric format (EMF) lines out of a log, as CloudWatch does.

A log line is an EMF record when it is a JSON object whose ``_aws`` holds a ``Timestamp``
(epoch milliseconds) and ``CloudWatchMetrics`` directives; each directive names a
namespace, dimension sets (lists of keys, each a string value at the top level) and metric
definitions (a name and a unit), whose values are the top-level key of the same name (a
number or a list of at most 100 numbers). Whatever breaks those rules CloudWatch drops;
here it fails the test.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

UNITS = frozenset({"Count", "Seconds", "Milliseconds"})


@dataclass(frozen=True)
class Datapoint:
    namespace: str
    name: str
    unit: str
    dimensions: tuple[tuple[str, str], ...]
    values: tuple[float, ...]


def records(log: str) -> list[dict[str, object]]:
    """The EMF records among the log's lines (other lines are left alone)."""
    found = []
    for line in log.splitlines():
        line = line.strip()
        if not line.startswith("{") or '"_aws"' not in line:
            continue
        record = json.loads(line)
        if isinstance(record, dict) and "_aws" in record:
            found.append(record)
    return found


def datapoints(log: str) -> list[Datapoint]:
    """Every metric datapoint the log's EMF records carry, checked as CloudWatch checks them."""
    points = []
    for record in records(log):
        aws = record["_aws"]
        assert isinstance(aws, dict) and isinstance(aws["Timestamp"], int), record
        for directive in aws["CloudWatchMetrics"]:
            namespace = directive["Namespace"]
            assert isinstance(namespace, str) and namespace, record
            for keys in directive["Dimensions"]:
                assert len(keys) <= 30 and all(isinstance(record.get(k), str) for k in keys), record
                dims = tuple((k, str(record[k])) for k in keys)
                for definition in directive["Metrics"]:
                    name, unit = definition["Name"], definition["Unit"]
                    assert unit in UNITS, definition
                    raw = record[name]
                    values = raw if isinstance(raw, list) else [raw]
                    assert 0 < len(values) <= 100 and all(isinstance(v, int | float) for v in values), record
                    points.append(Datapoint(namespace, name, unit, dims, tuple(float(v) for v in values)))
    return points


def values_of(points: list[Datapoint], name: str, **dimensions: str) -> list[float]:
    """All values of metric ``name`` with exactly ``dimensions`` (CloudWatch's identity of a metric)."""
    wanted = tuple(sorted(dimensions.items()))
    return [v for p in points if p.name == name and tuple(sorted(p.dimensions)) == wanted for v in p.values]
