"The real-data path of medical_sr_gan: a tiny dataset written in the real layout, and the ways real files break."
from pathlib import Path

import pytest

from paperlib.data import DataError
from paperlib.papers.medical_sr_gan import load_real_data, FOLDER

def write_tiny_dataset(data_root: Path) -> None:
    "A tiny dataset in the real layout under data_root/<FOLDER>/ (replace with your paper's files)."
    d = Path(data_root) / FOLDER
    d.mkdir(parents=True, exist_ok=True)
    (d / "samples.csv").write_text("sample_id,x,y\ns1,0.0,0.1\ns2,1.0,0.6\ns3,2.0,1.1\n")

def _write(data_root, text): (Path(data_root) / FOLDER / "samples.csv").write_text(text)

# (name, how the tiny dataset is broken, what the error must say): the runner's bad-data checks read this list
BREAKAGES = [
    ("bad number", lambda r: _write(r, "sample_id,x,y\ns1,0.0,abc\n"), "row 2 (sample_id 's1'), column 'y': 'abc' is not a valid float"),
    ("missing column", lambda r: _write(r, "sample_id,x\ns1,0.0\n"), "missing column(s) ['y']"),
    ("duplicate id", lambda r: _write(r, "sample_id,x,y\ns1,0,1\ns1,1,2\n"), "repeats row 2"),
    ("empty file", lambda r: _write(r, ""), "is empty"),
]

def test_tiny_dataset_loads(tmp_path):
    write_tiny_dataset(tmp_path)
    src, df = load_real_data(tmp_path / FOLDER)
    assert src.kind == "real" and len(df) == 3

def test_bom_header_is_read(tmp_path):
    write_tiny_dataset(tmp_path)
    p = tmp_path / FOLDER / "samples.csv"
    p.write_text(p.read_text(), encoding="utf-8-sig")
    assert len(load_real_data(tmp_path / FOLDER)[1]) == 3

@pytest.mark.parametrize("name,mutate,expected", BREAKAGES, ids=[b[0] for b in BREAKAGES])
def test_broken_data_is_named(tmp_path, name, mutate, expected):
    write_tiny_dataset(tmp_path)
    mutate(tmp_path)
    with pytest.raises(DataError) as e: load_real_data(tmp_path / FOLDER)
    assert expected in str(e.value) and "samples.csv" in str(e.value), str(e.value)
