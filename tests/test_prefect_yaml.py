"""prefect.yaml parses, every deployment's entrypoint imports to a flow, its parameters are ones
the flow takes (all required ones given, values valid for the flow's signature), schedules are
5-field crons; the re-ingestion deployment is scheduled and the batch-QA one exists."""
from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import yaml
from prefect import Flow

ROOT = Path(__file__).resolve().parents[1]


def _deployments() -> dict[str, dict]:
    config = yaml.safe_load((ROOT / "prefect.yaml").read_text(encoding="utf-8"))
    assert config["deployments"]
    return {d["name"]: d for d in config["deployments"]}


def _flow(entrypoint: str) -> Flow:
    module_path, name = entrypoint.split(":")
    assert (ROOT / module_path).is_file(), entrypoint
    module = importlib.import_module(module_path.removesuffix(".py").replace("/", "."))
    flow = getattr(module, name)
    assert isinstance(flow, Flow)
    return flow


def test_deployments_point_at_real_flows():
    for name, deployment in _deployments().items():
        flow = _flow(deployment["entrypoint"])
        signature = inspect.signature(flow.fn)
        given = deployment.get("parameters", {})
        assert set(given) <= set(signature.parameters), name
        required = {p for p, v in signature.parameters.items() if v.default is inspect.Parameter.empty}
        assert required <= set(given), f"{name}: a scheduled run would miss {required - set(given)}"
        flow.validate_parameters(given)  # values of the right types
        for schedule in deployment.get("schedules", []):
            assert len(schedule["cron"].split()) == 5
        assert deployment["work_pool"]["name"]


def test_scheduled_reingestion_and_batch_qa_deployments():
    deployments = _deployments()
    ingests = [d for n, d in deployments.items() if n.startswith("ingest-")]
    assert ingests and all(d["entrypoint"] == "flows/ingest.py:ingest" and d["schedules"] for d in ingests)
    for d in ingests:
        assert d["name"] == f"ingest-{d['parameters']['kb']}"
        assert {"paths", "kb", "home"} <= set(d["parameters"])
        for path in d["parameters"]["paths"]:
            assert (ROOT / path).exists(), path  # the demo corpus ships with the repository
    assert deployments["batch-qa"]["entrypoint"] == "flows/batch_qa.py:batch_qa"
