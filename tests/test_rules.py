"""Every claim rule declared with `@rule` passes on its `passes` example and fails on its `fails` example, and every one a
paper declares is exported: the function that decides a verdict has a test that it can say yes and one that it can say no."""
import importlib, json, pkgutil
from pathlib import Path

import pytest

import paperlib.papers
from paperlib.report import RULES, check_rule

REPO = Path(__file__).resolve().parents[1]
PAPERS = sorted(m.name for m in pkgutil.iter_modules(paperlib.papers.__path__) if not m.name.startswith("_"))
for _m in PAPERS: importlib.import_module(f"paperlib.papers.{_m}")    # each import registers the paper's rules
DECLARED = {k: fn for k, fn in RULES.items() if k.startswith("paperlib.")}

def test_some_rules_are_declared():
    assert any(k.startswith("paperlib.papers.") for k in DECLARED), "no paper declares a rule with @rule"

@pytest.mark.parametrize("name", sorted(DECLARED))
def test_rule_passes_and_fails_as_declared(name):
    ok, bad = check_rule(DECLARED[name])
    assert ok.passed is True and bad.passed is False

@pytest.mark.parametrize("name", sorted(k for k in DECLARED if k.startswith("paperlib.papers.")))
def test_paper_rule_is_exported(name):
    mod, fn = name.rsplit(".", 1)
    assert fn in importlib.import_module(mod).__all__, f"{name} is declared with @rule but not exported (not in __all__)"

def _cells(path: Path):
    return ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]

@pytest.mark.parametrize("nb", sorted(p.name for p in (REPO / "nbs/papers").glob("*.ipynb")))
def test_rules_are_declared_in_exported_cells(nb):
    """A rule declared in a cell that is not exported would decide claims in the notebook while no module, and so no
    test, holds it."""
    hidden = [s.splitlines()[0] for s in _cells(REPO / "nbs/papers" / nb) if "@rule(" in s and not s.startswith("#| export")]
    assert not hidden, f"{nb}: @rule in cells that are not exported (first lines: {hidden})"
