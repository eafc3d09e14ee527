"""Every folder a paper reads is one registered dataset, declared by the paper and judged once by `paperlib list
--data-root`: the frontmatter's datasets equal the module's `DATASETS`, a folder read by a paper's own reader is judged
by that reader, and a folder is found under its official archive's name as well as ours."""
import importlib, subprocess, sys
from pathlib import Path

import pytest

from paperlib.collection import paper_notebooks, paper_meta
from paperlib.datasets import (REGISTRY, IMAGENET_LT_LISTS, IMNET_SPLITS_FOLDER, dataset_folders, folder_status,
                               read_imagenet_lt, write_tiny_imagenet_lt)


@pytest.mark.parametrize("slug", list(paper_notebooks()))
def test_frontmatter_datasets_are_the_declared_folders(slug):
    importlib.import_module(f"paperlib.papers.{slug}")
    assert tuple(paper_meta(paper_notebooks()[slug])["datasets"]) == dataset_folders(slug)


def test_a_folder_has_one_dataset_shared_by_its_papers():
    for slug in paper_notebooks(): importlib.import_module(f"paperlib.papers.{slug}")
    readers = {}
    for slug in paper_notebooks():
        for f in dataset_folders(slug): readers.setdefault(f, []).append(slug)
    assert readers["cub2011"] == readers["cars196"] == ["bgaugment_background_bias", "findml_parade"]
    assert set(readers) <= set(REGISTRY)


@pytest.mark.parametrize("folder", ["cub2011", "cars196", "celeba", "lfw", "imagenet", "imagenet_lt_splits", "places365"])
def test_library_dataset_tiny_copy_is_valid_and_each_breakage_is_named(folder, tmp_path):
    ds = REGISTRY[folder]
    for name, mutate, expected in ds.breakages:
        path = tmp_path / name.replace(" ", "_") / folder
        ds.write_tiny(path)
        ds.judge(path)
        mutate(path)
        with pytest.raises(Exception) as e: ds.judge(path)
        assert expected in str(e.value), (name, str(e.value))


def test_list_judges_folders_read_by_a_papers_own_reader(tmp_path):
    importlib.import_module("paperlib.papers.supcon_strata")
    (tmp_path / "cifar-10-batches-py").mkdir()                     # present but empty: the reader says what is missing
    rows = {r["folder"]: r for r in folder_status(tmp_path, ["supcon_strata"])}
    assert rows["cifar-10-batches-py"]["found"] and rows["cifar-10-batches-py"]["valid"] is False
    assert "cifar-10-batches-py" in rows["cifar-10-batches-py"]["error"]
    assert rows["MNIST"]["found"] is None and rows["MNIST"]["valid"] is None
    r = subprocess.run([sys.executable, "-m", "paperlib.cli", "list", "--data-root", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    line = next(l for l in r.stdout.splitlines() if "cifar-10-batches-py/" in l)
    assert "NO" in line and "yes" in line                            # found, not valid


def test_list_judges_a_shared_folder_once_naming_its_papers(tmp_path):
    REGISTRY["cub2011"].write_tiny(tmp_path)                                 # the archive unpacked into the data root
    (tmp_path / "CUB_200_2011" / "image_class_labels.txt").write_text("1 1\n2 bird\n")
    r = subprocess.run([sys.executable, "-m", "paperlib.cli", "list", "--data-root", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = [l for l in r.stdout.splitlines() if l.startswith("cub2011/")]
    assert len(lines) == 1 and "bgaugment_background_bias, findml_parade" in lines[0], r.stdout
    assert "yes, as CUB_200_2011/" in lines[0] and "NO" in lines[0] and "'bird' is not a valid int" in lines[0]


def test_a_paper_declaring_an_unregistered_folder_is_refused(monkeypatch):
    mod = importlib.import_module("paperlib.papers.tariff_ood")
    monkeypatch.setattr(mod, "DATASETS", ("powertac", "powertac_v2"))
    with pytest.raises(ValueError, match="paper tariff_ood declares dataset folder 'powertac_v2', which no Dataset registers; "
                                         "registered folders: .*cub2011"):
        dataset_folders("tariff_ood")


def test_loader_finds_the_dataset_under_its_archive_name(tmp_path):
    "findml_parade's CUB loader, given the folder the run found under the archive's name `CUB_200_2011/`."
    from paperlib.core import RunContext
    from paperlib.papers.findml_parade import load_cub
    REGISTRY["cub2011"].write_tiny(tmp_path)                                  # tmp_path/CUB_200_2011/...
    ctx = RunContext.create("findml_parade", profile="ci", seed=0, data_root=str(tmp_path), out_dir=str(tmp_path / "out"))
    found = ctx.dataset("cub2011")
    assert found == tmp_path / "CUB_200_2011" and ctx.looked_for == {"cub2011": str(found)}
    cub, why = load_cub(found)
    assert len(cub) == 128 and cub.label.nunique() == 8 and "image_attribute_labels.txt is missing" in why
    assert ctx.dataset("cars196") is None and ctx.looked_names["cars196"] == ["cars196"]
    assert ctx.looked_names["cub2011"] == ["cub2011", "CUB_200_2011"]


def test_imagenet_lt_tiny_copy_reads_every_list(tmp_path):
    "The MAK lists of the tiny copy: sizes per key, sources, absolute paths on disk; the pool's undecodable file is skipped."
    from paperlib.images import load_images
    lt = read_imagenet_lt(write_tiny_imagenet_lt(tmp_path))
    assert {k: len(v) for k, v in lt.items()} == dict(seed=14, train=18, test=12, fewshot=6, in900=19, mix=12)
    assert all(list(f.columns) == ["path", "label", "source", "table", "line"] for f in lt.values())
    assert lt["seed"].label.value_counts().sort_index().tolist() == [8, 4, 2]
    assert set(lt["in900"].label) == {3, 4, 5} and set(lt["mix"].label) == {3, 4, 5, 100, 101}
    assert {k: f.source.value_counts().to_dict() for k, f in lt.items() if k in ("seed", "mix")} == \
        dict(seed={"imagenet": 14}, mix={"imagenet": 6, "places": 6})
    paths = [p for f in lt.values() for p in f.path]
    assert all(Path(p).is_absolute() and Path(p).is_file() for p in paths)
    assert [Path(p).parts[-4] for p in lt["mix"].path] == ["imagenet"] * 6 + ["places365"] * 6
    X, bad = load_images(lt["in900"].path.tolist(), 16)
    assert X.shape == (18, 3, 16, 16) and [Path(lt["in900"].path[i]).name for i in bad] == ["n01496331_broken.JPEG"]
    decoded = lt["in900"].label.drop(index=bad).to_numpy()
    means = [X[decoded == c].float().mean((0, 2, 3)) for c in (3, 4, 5)]
    assert min((a - b).abs().max().item() for i, a in enumerate(means) for b in means[i + 1:]) > 40     # a colour per wnid


@pytest.mark.parametrize("key, purpose", [("seed", "the long-tailed seed set"), ("train", "the linear probe's labels"),
                                          ("test", "the balanced test images"), ("in900", "the IN900 sampling pool")])
def test_imagenet_lt_missing_required_list_says_what_it_is_for(tmp_path, key, purpose):
    write_tiny_imagenet_lt(tmp_path)
    (tmp_path / IMNET_SPLITS_FOLDER / IMAGENET_LT_LISTS[key].index).unlink()
    with pytest.raises(Exception, match=f"missing file .*{Path(IMAGENET_LT_LISTS[key].index).name}: .*{purpose}.*is required"):
        read_imagenet_lt(tmp_path)


def test_imagenet_lt_optional_lists_may_be_absent(tmp_path):
    write_tiny_imagenet_lt(tmp_path)
    for key in ("fewshot", "mix"): (tmp_path / IMNET_SPLITS_FOLDER / IMAGENET_LT_LISTS[key].index).unlink()
    assert sorted(read_imagenet_lt(tmp_path)) == ["in900", "seed", "test", "train"]
