"""Every folder a paper reads is one registered dataset, declared by the paper and judged once by `paperlib list
--data-root`: the frontmatter's datasets equal the module's `DATASETS`, a folder read by a paper's own reader is judged
by that reader, and a folder is found under its official archive's name as well as ours."""
import importlib, re, subprocess, sys
from pathlib import Path

import numpy as np
import pytest

from paperlib.collection import paper_notebooks, paper_meta
from paperlib.data import DataError
from paperlib.datasets import (REGISTRY, IMAGENET_LT_LISTS, IMNET_SPLITS_FOLDER, CELEBA_ATTRIBUTES, CELEBA_ATTR_FILE,
                               CELEBA_PARTITION_FILE, dataset_folders, folder_status, read_imagenet_lt, write_tiny_imagenet_lt,
                               write_tiny_celeba, read_celeba_attrs, read_image_tree, write_tiny_yfcc_celeba, vgg16_bn_weights,
                               read_fss_lists, read_pascal, read_coco20i, write_tiny_pascal, write_tiny_coco20i, resnet_weights,
                               PASCAL_TINY_CLASSES, COCO20I_TINY_CLASSES, label_classes)


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


@pytest.mark.parametrize("folder", ["cub2011", "cars196", "celeba", "lfw", "imagenet", "imagenet_lt_splits", "places365",
                                    "yfcc_celeba", "pascal", "coco20i", "cross_validated", "inria", "fa_inria", "wspd"])
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


def test_celeba_attributes_of_the_tiny_copy(tmp_path):
    "VCL's CelebA: 32 faces, 40 attributes as 0/1 with both values present, the partition file's split, real line numbers."
    folder = tmp_path / "celeba"
    write_tiny_celeba(folder, per_person=4)
    df = read_celeba_attrs(folder)
    assert list(df.columns) == ["path", *CELEBA_ATTRIBUTES, "split", "table", "line"] and len(CELEBA_ATTRIBUTES) == 40
    assert len(df) == 32 and df.line.tolist() == list(range(3, 35)) and set(df.table) == {str(folder.absolute() / CELEBA_ATTR_FILE)}
    assert df.split.value_counts().to_dict() == dict(train=26, val=3, test=3) and df.split.tolist()[-3:] == ["test"] * 3
    v = df[list(CELEBA_ATTRIBUTES)].to_numpy()
    assert set(v.ravel()) == {0, 1} and (v.min(0) == 0).all() and (v.max(0) == 1).all()
    assert all(Path(p).is_absolute() and Path(p).is_file() for p in df.path)
    raw = (folder / CELEBA_ATTR_FILE).read_text().splitlines()
    assert raw[0] == "32" and raw[1].split() == list(CELEBA_ATTRIBUTES)
    assert v[5].tolist() == [int(x == "1") for x in raw[7].split()[1:]]
    lines = (folder / CELEBA_PARTITION_FILE).read_text().splitlines()
    (folder / CELEBA_PARTITION_FILE).write_text("\n".join(["000001.jpg 1"] + lines[1:]) + "\n")
    assert read_celeba_attrs(folder).split[0] == "val"
    (folder / CELEBA_PARTITION_FILE).unlink()
    assert read_celeba_attrs(folder).split.tolist() == df.split.tolist()          # the same split by index order


@pytest.mark.parametrize("row, expected", [("000004.jpg" + " 1" * 39 + " 0", "row 6, column 'Young': '0' is not one of the valid values (-1, 1)"),
                                           ("000004.jpg" + " x" + " 1" * 39, "row 6, column '5_o_Clock_Shadow': 'x' is not a valid int"),
                                           ("000004.jpg" + " 1" * 41, "row 6: 42 fields, but the format has 41"),
                                           ("000001.jpg" + " -1" * 40, "row 6, column 'image': '000001.jpg' repeats row 3")])
def test_celeba_attribute_errors_name_file_row_and_column(tmp_path, row, expected):
    write_tiny_celeba(tmp_path, per_person=1)
    lines = (tmp_path / CELEBA_ATTR_FILE).read_text().splitlines()
    (tmp_path / CELEBA_ATTR_FILE).write_text("\n".join(lines[:5] + [row] + lines[6:]) + "\n")
    with pytest.raises(DataError, match="list_attr_celeba.txt, " + re.escape(expected)):
        read_celeba_attrs(tmp_path)


def test_celeba_folder_valid_with_either_table(tmp_path):
    "`paperlib list` accepts celeba/ with findml's identity table or VCL's attribute table, and names both when neither is there."
    importlib.import_module("paperlib.papers.findml_parade")
    write_tiny_celeba(tmp_path / "celeba", per_person=2)
    judge = lambda: {r["folder"]: r for r in folder_status(tmp_path, ["findml_parade"])}["celeba"]
    assert judge()["valid"] is True
    (tmp_path / "celeba" / "identity_CelebA.txt").rename(tmp_path / "ids.txt")
    assert judge()["valid"] is True
    (tmp_path / "celeba" / CELEBA_ATTR_FILE).write_text("16\n" + " ".join(CELEBA_ATTRIBUTES) + "\n000001.jpg 1\n")
    assert judge()["valid"] is False and "row 3: 2 fields, but the format has 41" in judge()["error"]
    (tmp_path / "celeba" / CELEBA_ATTR_FILE).unlink()
    assert judge()["valid"] is False and "neither identity_CelebA.txt" in judge()["error"] and CELEBA_ATTR_FILE in judge()["error"]
    (tmp_path / "ids.txt").rename(tmp_path / "celeba" / "identity_CelebA.txt")
    assert judge()["valid"] is True


def test_yfcc_celeba_tree_lists_images_in_any_case(tmp_path):
    rels = write_tiny_yfcc_celeba(tmp_path)
    assert len(rels) == 10 and {r.split("/")[0] for r in rels} == {"a", "b"}
    (tmp_path / "b" / "deep").mkdir(); (tmp_path / "b" / "deep" / "X.JpEg").write_bytes((tmp_path / rels[0]).read_bytes())
    (tmp_path / "readme.txt").write_text("not an image")
    paths = read_image_tree(tmp_path).path.tolist()
    assert paths == sorted(paths) and len(paths) == 11 and all(Path(p).is_absolute() for p in paths) and paths[-1].endswith("b/deep/X.JpEg")
    (tmp_path / "empty" / "sub").mkdir(parents=True); (tmp_path / "empty" / "sub" / "a.gif").write_bytes(b"GIF89a")
    with pytest.raises(DataError, match=r"empty: no image file \(\.jpg, \.jpeg, \.png, any case\)"):
        read_image_tree(tmp_path / "empty")


def test_vgg16_bn_folder_one_weights_file_loaded_as_vgg16_bn(tmp_path, monkeypatch):
    "No tiny copy (553 MB): one .pth/.pt is found, none or several are named, the file is loaded at 128 px, and the breakages hold."
    import torch
    import paperlib.images
    ds = REGISTRY["vgg16_bn_imagenet"]
    assert ds.write_tiny is None and ds.breakages
    with pytest.raises(DataError, match="no weights file"): ds.judge(tmp_path)
    torch.save({"features.0.weight": torch.zeros(1)}, tmp_path / "vgg16_bn-6c64b313.pth")
    assert vgg16_bn_weights(tmp_path) == tmp_path / "vgg16_bn-6c64b313.pth"
    with pytest.raises(DataError, match="not a VGG16-bn state dict with torchvision's names"): ds.judge(tmp_path)
    seen = []
    monkeypatch.setattr(paperlib.images, "load_vgg16_bn", lambda path, input_size=224: seen.append((path, input_size)))
    ds.judge(tmp_path)
    assert seen == [(tmp_path / "vgg16_bn-6c64b313.pth", 128)]
    (tmp_path / "copy.PT").write_bytes(b"x")
    with pytest.raises(DataError, match=r"2 weights files \(copy.PT, vgg16_bn-6c64b313.pth\)"): vgg16_bn_weights(tmp_path)
    monkeypatch.undo()
    _breakages_of_an_empty_folder(ds, tmp_path)


def _classes_by_split(df):
    return {s: sorted({c for t in g.classes for c in t}) for s, g in df.groupby("split")}


@pytest.mark.parametrize("write, read, classes, n_classes", [(write_tiny_pascal, read_pascal, PASCAL_TINY_CLASSES, 20),
                                                             (write_tiny_coco20i, read_coco20i, COCO20I_TINY_CLASSES, 80)])
def test_fss_tiny_copies_read_back_with_their_classes_per_split(tmp_path, write, read, classes, n_classes):
    "12 train and 8 val pairs; the four classes (one per fold) in each split, each in at least two images; the same with or without the cache."
    write(tmp_path / "d")
    df = read(tmp_path / "d", cache=tmp_path / "cache")
    assert list(df.columns) == ["image", "label", "split", "classes"] and df.split.tolist() == ["train"] * 12 + ["val"] * 8
    assert _classes_by_split(df) == dict(train=sorted(classes), val=sorted(classes))
    for split, g in df.groupby("split"):
        assert all(sum(c in t for t in g.classes) >= 2 for c in classes), split         # a query and a 1-shot support
    assert df.classes[0] == tuple(sorted(classes[:2])) and df.classes[1] == (classes[1],)
    assert all(Path(p).is_absolute() and Path(p).is_file() for p in (*df.image, *df.label))
    assert read(tmp_path / "d", cache=False).equals(df) and read(tmp_path / "d", cache=tmp_path / "cache").equals(df)
    assert read_fss_lists(tmp_path / "d", n_classes, "pascal" if n_classes == 20 else "coco20i", cache=False).equals(df)


def test_fss_errors_name_the_file_the_line_and_the_value(tmp_path):
    from PIL import Image
    write_tiny_pascal(tmp_path)
    lists, lab = tmp_path / "lists", tmp_path / "SegmentationClassAug" / "2007_000003.png"
    a = np.asarray(Image.open(lab)).copy(); a[0, 0] = 33; a[0, 1] = 254
    Image.fromarray(a).save(lab)
    with pytest.raises(DataError, match=rf"{lists}/train.txt, line 4: {lab}: class id\(s\) 33, 254; valid: 0 \(background\), 1-20, 255"):
        read_pascal(tmp_path, cache=False)
    with pytest.raises(DataError, match=r"2007_000003.png: class id\(s\) 254; valid: 0 \(background\), 1-80"):     # 33 is a COCO id
        label_classes(lab, tmp_path / "JPEGImages" / "2007_000003.jpg", 80)
    Image.fromarray(a[:, :-1]).save(lab)
    with pytest.raises(DataError, match=rf"line 4: {lab}: label size 39x48 differs from its image {tmp_path}/JPEGImages/2007_000003.jpg \(40x48\)"):
        read_pascal(tmp_path, cache=False)
    Image.fromarray(np.stack([a] * 3, -1)).save(lab)
    with pytest.raises(DataError, match=rf"line 4: {lab}: mode RGB"): read_pascal(tmp_path, cache=False)
    (lists / "val.txt").write_text("\n2007_000012\nJPEGImages/2007_000099.jpg SegmentationClassAug/2007_000013.png\n")
    with pytest.raises(DataError, match=rf"{lists}/val.txt, line 3: missing file {tmp_path}/JPEGImages/2007_000099.jpg"):
        read_pascal(tmp_path, cache=False)
    (lists / "val.txt").write_text("2007_000077\n")
    with pytest.raises(DataError, match=rf"val.txt, line 1: missing file {tmp_path}/JPEGImages/2007_000077.jpg"): read_pascal(tmp_path)
    (lists / "val.txt").unlink()
    with pytest.raises(DataError, match=rf"missing file {lists}/val.txt: the list of the test \(val\) images .*it is required"):
        read_pascal(tmp_path)


def test_resnet_folder_one_weights_file_loaded_with_its_depth(tmp_path):
    "No tiny copy: the file is found, loaded by load_resnet (a ResNet-101 read as such), and the breakages hold."
    import torch
    from paperlib.images import ResNet
    ds = REGISTRY["resnet_imagenet"]
    assert ds.write_tiny is None and len(ds.breakages) == 2
    with pytest.raises(DataError, match="no weights file"): ds.judge(tmp_path)
    with torch.device("meta"): names = ResNet(101).state_dict()
    torch.save({k: torch.zeros(()).expand(v.shape) for k, v in names.items()}, tmp_path / "resnet101-x.pth")
    assert resnet_weights(tmp_path) == tmp_path / "resnet101-x.pth"
    ds.judge(tmp_path)
    _breakages_of_an_empty_folder(ds, tmp_path)


def test_cross_validated_tiny_copy_reads(tmp_path):
    from paperlib.datasets import read_cross_validated, CV_TINY_TAGS
    ds = REGISTRY["cross_validated"]
    assert ds.names == ("cross_validated", "statsquestions")
    df = read_cross_validated(ds.write_tiny(tmp_path / "ok" / "cross_validated"))
    assert len(df) == 39 and df.attrs["files"] == ["Questions.csv", "Tags.csv"]
    assert df.attrs["notes"] == ["Questions.csv is not UTF-8: read as latin-1",
                                 "1 question with an empty body after removing the HTML (kept, title only)",
                                 "1 question without a tag (dropped)"]
    assert sum(t.startswith("Cramér's V for a 2x2 table </title> ") for t in df.text) == 1
    assert sorted({t for ts in df.tags for t in ts}) == sorted(t for t, _ in CV_TINY_TAGS)
    assert [b[0] for b in ds.breakages] == ["missing Tags.csv", "missing Body column", "duplicate Id",
                                            "tag of an unknown question", "empty tag"]


def _breakages_of_an_empty_folder(ds, tmp_path):
    "A weights folder has no tiny copy: each breakage writes its broken file into an empty folder."
    for name, mutate, expected in ds.breakages:
        folder = tmp_path / name.replace(" ", "_"); folder.mkdir()
        mutate(folder)
        with pytest.raises(DataError) as e: ds.judge(folder)
        assert expected in str(e.value), (name, str(e.value))


def test_inria_tiny_copy_reads(tmp_path):
    "Boxes and negatives (NaN boxes) of both splits, from inria/INRIAPerson/, the archive's INRIAPerson/ or inria/ holding Train/ and Test/."
    import shutil
    from paperlib.datasets import read_inria, find_folder, INRIA_TINY, INRIA_TINY_NEG
    ds = REGISTRY["inria"]
    assert ds.names == ("inria", "INRIAPerson")
    df = read_inria(ds.write_tiny(tmp_path / "ok" / "inria"))
    assert list(df.columns) == ["image", "split", "x1", "y1", "x2", "y2", "width", "height"]
    boxes, neg = df[df.x1.notna()], df[df.x1.isna()]
    assert len(boxes) == sum(n for _, n in INRIA_TINY) == 7 and len(neg) == 2 and df.image.nunique() == 6
    assert [Path(p).name for p in neg.image] == [Path(r).name for r in INRIA_TINY_NEG] and neg.split.tolist() == ["train", "test"]
    assert (boxes.x2 > boxes.x1).all() and (boxes.y2 > boxes.y1).all() and (boxes.x2 <= boxes.width).all()
    assert df.attrs["notes"] == ["1 INRIA boxes reached outside their image: clipped to it"]
    assert all(Path(p).is_absolute() and Path(p).is_file() for p in df.image)
    shutil.copytree(tmp_path / "ok" / "inria" / "INRIAPerson", tmp_path / "root" / "INRIAPerson")
    assert find_folder(tmp_path / "root", "inria") == tmp_path / "root" / "INRIAPerson"
    assert len(read_inria(tmp_path / "root" / "INRIAPerson")) == 9
    (tmp_path / "root" / "INRIAPerson").rename(tmp_path / "root" / "inria")               # inria/ holding Train/ and Test/
    assert len(read_inria(tmp_path / "root" / "inria")) == 9
    assert [b[0] for b in ds.breakages] == ["missing annotation folder", "box with x2 <= x1", "annotation naming a missing image"]


def test_inria_malformed_box_line_names_file_line_and_text(tmp_path):
    from paperlib.datasets import read_inria
    ds = REGISTRY["inria"]
    ann = ds.write_tiny(tmp_path / "inria") / "INRIAPerson" / "Test" / "annotations" / "person_302.txt"
    ann.write_text(ann.read_text().replace("(Xmax, Ymax) : (2, 6)", "(Xmax, Ymax) : (2; 6)"))
    with pytest.raises(DataError, match=r"person_302.txt, line 9: not a box line: 'Bounding box for object 1 .*\(2; 6\)"):
        read_inria(tmp_path / "inria")


def test_fa_inria_tiny_copy_reads(tmp_path):
    from paperlib.datasets import read_fa_inria
    ds = REGISTRY["fa_inria"]
    df = read_fa_inria(ds.write_tiny(tmp_path / "ok" / "fa_inria"))
    assert list(df.columns) == ["image", "split", "x1", "y1", "x2", "y2", "age", "width", "height"]
    assert len(df) == 25 and df.image.nunique() == 8 and (df.age == "child").sum() == 5
    assert set(df.split) == {"train", "test", "val"} and df.attrs["lines"] == list(range(2, 27))
    assert df.attrs["notes"] == ["1 FA-INRIA boxes reached outside their image: clipped to it"] and df.y2.max() == df.height.max()
    (tmp_path / "ok" / "fa_inria" / "boxes.csv").write_text("image,split,x1,y1,x2,y2\nimages/crop_000000.png,train,1,2,3,4\n")
    with pytest.raises(DataError, match=r"missing column\(s\) \['age'\].*the columns are image, split, x1, y1, x2, y2, age"):
        read_fa_inria(tmp_path / "ok" / "fa_inria")
    assert [b[0] for b in ds.breakages] == ["bad age", "box with x2 <= x1", "missing image"]


def test_wspd_tiny_copy_reads(tmp_path):
    "Person boxes only (the car boxes ignored), the car-only photo kept with a NaN box; photos in images/ or beside the json."
    from paperlib.datasets import read_wspd
    ds = REGISTRY["wspd"]
    folder = ds.write_tiny(tmp_path / "ok" / "wspd")
    df = read_wspd(folder)
    assert list(df.columns) == ["image", "x1", "y1", "x2", "y2", "width", "height"]
    assert len(df) == 5 and df.x1.isna().sum() == 1 and Path(df.image.iloc[-1]).name == "web_0003.jpg"
    assert df.iloc[0][["x1", "y1", "x2", "y2"]].tolist() == [4, 6, 24, 56]                   # x, y, w, h -> x1, y1, x2, y2
    assert df.attrs["notes"][0] == "1 images without a person: kept with a NaN box (unlabelled candidates)"
    for p in (folder / "images").iterdir(): p.rename(folder / p.name)
    assert read_wspd(folder)[["x1", "y2"]].equals(df[["x1", "y2"]])
    assert [b[0] for b in ds.breakages] == ["no person category", "unknown image_id", "missing image"]


def test_vgg16_folder_checks_the_conv_names_and_shapes(tmp_path):
    "No tiny copy (528 MB): a state dict of VGG16's conv shapes (views of one number, so the file is small) passes; a wrong shape fails."
    import torch
    from paperlib.datasets import VGG16_CONV_SHAPES, vgg16_weights
    ds = REGISTRY["vgg16_imagenet"]
    assert ds.write_tiny is None and len(ds.breakages) == 1
    assert [s[0] for s in VGG16_CONV_SHAPES.values()] == [64, 64, 128, 128, 256, 256, 256, 512, 512, 512, 512, 512, 512]
    assert all(s[2:] == (3, 3) for s in VGG16_CONV_SHAPES.values())
    with pytest.raises(DataError, match="no weights file"): ds.judge(tmp_path)
    state = {k: torch.zeros(()).expand(s) for k, s in VGG16_CONV_SHAPES.items()}
    torch.save(state, tmp_path / "vgg16-397923af.pth")
    assert (tmp_path / "vgg16-397923af.pth").stat().st_size < 100_000
    ds.judge(tmp_path); assert vgg16_weights(tmp_path) == tmp_path / "vgg16-397923af.pth"
    state["features.28.weight"] = torch.zeros(()).expand(512, 512, 1, 1)
    torch.save(state, tmp_path / "vgg16-397923af.pth")
    with pytest.raises(DataError, match=r"vgg16-397923af.pth: features.28.weight has shape \(512, 512, 1, 1\); VGG16's is \(512, 512, 3, 3\)"):
        ds.judge(tmp_path)
    _breakages_of_an_empty_folder(ds, tmp_path)
