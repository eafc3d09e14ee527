"Shared fixtures: throw-away paperlib projects whose paper notebooks are tiny and fast."
import json, os, shutil
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]

from paperlib.core import RunParams

PARAMS = RunParams().cell()

def paper_nb(slug: str, body: str, title: str = None) -> nbformat.NotebookNode:
    "A minimal paper notebook that follows the run contract: frontmatter, parameters, RunContext, Report."
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        nbformat.v4.new_raw_cell(f"---\ntitle: {title or 'Paper ' + slug}\nvenue: Test Venue 2024\nskip_exec: true\n---"),
        nbformat.v4.new_code_cell(PARAMS, metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell(
            "from pathlib import Path\nimport pandas as pd\n"
            "from paperlib.core import RunContext\nfrom paperlib.report import Report\nfrom paperlib.data import embedded_source\n"
            f"ctx = RunContext.create({slug!r}, profile, seed, device, data_root, out_dir, threads)\n"
            "rep = Report(ctx, 'T', 'V')\nrep.data_source(embedded_source('Toy', 'toy data', {'n': 5}))"),
        nbformat.v4.new_markdown_cell("Some prose about the method, $a^2 + b^2 = c^2$."),
        nbformat.v4.new_code_cell(body),
        nbformat.v4.new_code_cell("rep.finish()"),
    ]
    return nb

GOOD = ("x = ctx.rng(1).normal(size=50)\n"
        "rep.table(pd.DataFrame({'mean': [x.mean()], 'sd': [x.std()]}), 'Table 1')\n"
        "rep.claim('C1', 'the mean is small', '|mean| < 1', bool(abs(x.mean()) < 1), source='ours', ours=x.mean())")

FLAKY = ("import os\n"
         "if (Path(ctx.out_dir).parents[1] / 'FAIL').exists() or os.environ.get('PAPERLIB_TEST_FAIL'): "
         "raise RuntimeError('the experiment broke on purpose')\n" + GOOD)

SLOW = "import time\ntime.sleep(float(os.environ.get('PAPERLIB_TEST_SLEEP', '0')) if (os := __import__('os')) else 0)\n" + GOOD

@pytest.fixture
def project(tmp_path):
    "A project folder with three papers: good, flaky (fails when <root>/FAIL exists) and slow."
    root = tmp_path / "proj"
    (root / "nbs" / "papers").mkdir(parents=True)
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    (root / "settings.ini").write_text("[run]\nprofile = ci\nreports = reports\ntimeout = 300\njobs = 1\nseed = 0\n")
    for slug, body in [("good", GOOD), ("flaky", FLAKY), ("slow", SLOW)]:
        nbformat.write(paper_nb(slug, body), root / "nbs" / "papers" / f"{slug}.ipynb")
    return root
