"""The house rules, read from the source with `ast`: each layer imports only layers below it
(schemas < tasks.common < warehouse < tasks.index < tasks.ingest, tasks.qa < flows; ingest and qa
never import each other), flows share no private names, and flows stay thin."""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO

ROOTS = ("schemas", "tasks", "warehouse", "flows")
# each layer, bottom up, with the layers below it that it may import (besides itself)
BELOW = {
    "schemas": set(),
    "tasks.common": {"schemas"},
    "warehouse": {"schemas", "tasks.common"},
    "tasks.index": {"schemas", "tasks.common", "warehouse"},
    "tasks.ingest": {"schemas", "tasks.common", "warehouse", "tasks.index"},
    "tasks.qa": {"schemas", "tasks.common", "warehouse", "tasks.index"},
    "flows": {"schemas", "tasks.common", "warehouse", "tasks.index", "tasks.ingest", "tasks.qa"},
}
LAYERS = list(BELOW)
# (module, import statement) pairs allowed against the rule while a move is pending: none today.
KNOWN_VIOLATIONS: set[tuple[str, str]] = set()


@dataclass(frozen=True)
class Import:
    module: str  # the importing module, e.g. "tasks.index.sync"
    path: Path
    line: int
    target: str  # the imported module, absolute
    names: tuple[str, ...]  # the names of a `from … import`, else ()
    statement: str

    def __str__(self) -> str:
        return f"{self.module} ({self.path.relative_to(REPO)}:{self.line}): {self.statement}"


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> list[Import]:
    """Every import statement of a module, at module level or inside functions and classes."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [Import(module, path, node.lineno, alias.name, (), ast.unparse(node)) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:  # relative: resolved against the importing package
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([target] if target else []))
            found.append(Import(module, path, node.lineno, target, tuple(a.name for a in node.names),
                                ast.unparse(node)))
    return found


def layer_of(module: str) -> str | None:
    """The layer a project module belongs to (`tasks` itself belongs to none); None outside the project."""
    return next((layer for layer in LAYERS if module == layer or module.startswith(layer + ".")), None)


def project_modules() -> list[Path]:
    return sorted(p for root in ROOTS for p in (REPO / root).rglob("*.py"))


def project_imports() -> list[Import]:
    """Imports of project modules (schemas, tasks, warehouse, flows) by project modules."""
    return [imp for path in project_modules() for imp in imports_of(path)
            if imp.target.split(".")[0] in ROOTS]


def test_the_scanner_sees_function_level_and_relative_imports(tmp_path, monkeypatch):
    pkg = tmp_path / "tasks" / "qa"
    pkg.mkdir(parents=True)
    (pkg / "x.py").write_text("import os\n\ndef f():\n    from tasks.ingest import chunk\n    from .types import A\n"
                              "    from .. import common\n", encoding="utf-8")
    monkeypatch.setattr(f"{__name__}.REPO", tmp_path)
    assert [(imp.line, imp.target, imp.names) for imp in imports_of(pkg / "x.py")] == [
        (1, "os", ()), (4, "tasks.ingest", ("chunk",)), (5, "tasks.qa.types", ("A",)), (6, "tasks", ("common",))]


def test_every_module_is_in_a_layer():
    assert [module_name(p) for p in project_modules() if layer_of(module_name(p)) is None] == ["tasks"]


@pytest.mark.parametrize("layer", LAYERS)
def test_a_layer_imports_only_itself_and_the_layers_below(layer):
    allowed = BELOW[layer] | {layer}
    wrong = [f"{imp}  [{layer} may import only {', '.join(sorted(allowed))}]" for imp in project_imports()
             if layer_of(imp.module) == layer and layer_of(imp.target) not in allowed
             and (imp.module, imp.statement) not in KNOWN_VIOLATIONS]
    assert not wrong, "imports against the layer rule:\n" + "\n".join(wrong)


def test_known_violations_still_exist():
    """So the allowance above goes away with the violation."""
    present = {(imp.module, imp.statement) for imp in project_imports()}
    assert KNOWN_VIOLATIONS <= present, f"fixed, remove from KNOWN_VIOLATIONS: {KNOWN_VIOLATIONS - present}"


def test_ingest_and_qa_never_import_each_other():
    wrong = [str(imp) for imp in project_imports()
             if {layer_of(imp.module), layer_of(imp.target)} == {"tasks.ingest", "tasks.qa"}]
    assert not wrong, "ingest and qa import each other:\n" + "\n".join(wrong)


def test_only_flows_import_flows():
    wrong = [str(imp) for imp in project_imports()
             if layer_of(imp.target) == "flows" and layer_of(imp.module) != "flows"]
    assert not wrong, "imports of flows from below:\n" + "\n".join(wrong)


def test_no_flow_imports_a_private_name_of_another_flow():
    wrong = [f"{imp}  [private: {', '.join(n for n in imp.names if n.startswith('_'))}]" for imp in project_imports()
             if layer_of(imp.module) == layer_of(imp.target) == "flows" and imp.module != imp.target
             and any(name.startswith("_") for name in imp.names)]
    assert not wrong, "flows importing another flow's private names:\n" + "\n".join(wrong)


@pytest.mark.parametrize("flow, max_lines", [
    ("flows/ingest.py", 150),
    ("flows/batch_qa.py", 120),
    ("flows/evaluate.py", 120),
])
def test_flows_stay_thin(flow, max_lines):
    lines = len((REPO / flow).read_text(encoding="utf-8").splitlines())
    assert lines <= max_lines, f"{flow} has {lines} lines (at most {max_lines}): move logic into tasks/"
