"""prefect.yaml parses and every deployment's entrypoint imports to a flow with matching parameters."""
from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import yaml
from prefect import Flow

ROOT = Path(__file__).resolve().parents[1]


def test_deployments_point_at_real_flows():
    config = yaml.safe_load((ROOT / "prefect.yaml").read_text(encoding="utf-8"))
    assert config["deployments"]
    for deployment in config["deployments"]:
        module_path, name = deployment["entrypoint"].split(":")
        module = importlib.import_module(module_path.removesuffix(".py").replace("/", "."))
        flow = getattr(module, name)
        assert isinstance(flow, Flow)
        accepted = set(inspect.signature(flow.fn).parameters)
        assert set(deployment.get("parameters", {})) <= accepted, deployment["name"]
        for schedule in deployment.get("schedules", []):
            assert len(schedule["cron"].split()) == 5
