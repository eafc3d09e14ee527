"The real-data path of salient_facts: a tiny dataset written in the real layout, the ways real files break, and the claim rules."
from pathlib import Path

import numpy as np
import pytest

from paperlib.data import DataError
from paperlib.papers import salient_facts as sf
from paperlib.papers.salient_facts import load_real_data, FOLDER, TASK_FOLDER

def write_tiny_dataset(data_root: Path) -> None:
    "Two companies, unlabeled.txt, an expert file, a product and the four minority tasks, in the real layout."
    sf.write_tiny_dataset(data_root)

def _edit(data_root, rel, fn):
    p = Path(data_root) / FOLDER / rel
    p.write_text(fn(p.read_text()))

def _bad_label(text):
    lines = text.splitlines(); head, first = lines[0], lines[1].rsplit(",", 2)
    lines[1] = ",".join([first[0], "2", first[2]])
    return "\n".join(lines) + "\n"

# (name, how the tiny dataset is broken, what the error must say): the runner's bad-data checks read this list
BREAKAGES = [
    ("label not 0/1", lambda r: _edit(r, "amazon.csv", _bad_label), "amazon.csv, row 2, column 'label': '2' is not one of the valid values (0, 1)"),
    ("empty unlabeled.txt", lambda r: _edit(r, "unlabeled.txt", lambda t: "\n\n"), "unlabeled.txt is empty"),
    ("missing column", lambda r: _edit(r, "google.csv", lambda t: "sentence\nfree lunch\n"), "missing column(s) ['label']"),
    ("unknown reason", lambda r: _edit(r, "google.csv", lambda t: "sentence,label,reason\nok ok,0,boring\nfree spa,1,\n"),
     "column 'reason': 'boring' is not one of the valid values"),
    ("no positive", lambda r: _edit(r, "google.csv", lambda t: "sentence,label\nok ok,0\n"), "no sentence labelled 1"),
    ("bad task label", lambda r: (Path(r) / TASK_FOLDER / "HOTEL" / "train.csv").write_text("text,label\nplease add a spa,yes\n"),
     "train.csv, row 2, column 'label': 'yes' is not a valid int"),
    ("empty file", lambda r: _edit(r, "google.csv", lambda t: ""), "is empty"),
]

def test_tiny_dataset_loads(tmp_path):
    write_tiny_dataset(tmp_path)
    src, d = load_real_data(tmp_path / FOLDER, tmp_path / TASK_FOLDER)
    lab = d["labelled"]
    assert src.kind == "real" and set(lab.company) == {"google", "amazon"} and len(lab) == 80
    assert set(lab.split) == {"train", "test"} and lab.groupby("company").label.sum().tolist() == [6, 6]
    assert len(d["pool"]) == 40 and d["experts"].expert.sum() == 4 and set(d["tasks"]) == set(sf.TASKS)
    assert "label" in d["products"] and d["products"]["product"].unique().tolist() == ["headset"]

def test_bom_header_is_read(tmp_path):
    write_tiny_dataset(tmp_path)
    p = tmp_path / FOLDER / "google.csv"
    p.write_text(p.read_text(), encoding="utf-8-sig")
    assert (load_real_data(tmp_path / FOLDER)[1]["labelled"].company == "google").sum() == 40

def test_optional_parts_may_be_absent(tmp_path):
    write_tiny_dataset(tmp_path)
    for p in (tmp_path / FOLDER).glob("expert_*.txt"): p.unlink()
    for p in (tmp_path / FOLDER / "product").glob("*.csv"): p.unlink()
    _, d = load_real_data(tmp_path / FOLDER)
    assert d["experts"] is None and d["products"] is None and d["tasks"] == {}

@pytest.mark.parametrize("name,mutate,expected", BREAKAGES, ids=[b[0] for b in BREAKAGES])
def test_broken_data_is_named(tmp_path, name, mutate, expected):
    write_tiny_dataset(tmp_path)
    mutate(tmp_path)
    with pytest.raises(DataError) as e: load_real_data(tmp_path / FOLDER, tmp_path / TASK_FOLDER)
    assert expected in str(e.value), str(e.value)
