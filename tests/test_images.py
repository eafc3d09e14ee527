"Tests of paperlib.images' ResNet-50/101 (names, dilation, load_resnet) and VGG16-bn: torchvision's parameter counts and names, output shapes at 224 and 128 px, the initialisation, and load_vgg16_bn's round trip and refusals."
import pytest
import torch

from paperlib.data import DataError
from paperlib.images import VGG16bn, ResNet, ResNet50, load_vgg16_bn, load_resnet50, load_resnet

n_params = lambda m: sum(p.numel() for p in m.parameters())


def test_vgg16_bn_parameter_counts_match_torchvision():
    with torch.device("meta"):                        # shapes only: no 550 MB of weights
        assert n_params(VGG16bn(1000)) == 138_365_992  # torchvision.models.vgg16_bn()
        assert n_params(VGG16bn()) == 138_365_992 - (4096 * 1000 + 1000)
        # VCL's 128-px backbone: 14,723,136 convolutional + Linear(8192, 4096) + Linear(4096, 4096)
        assert n_params(VGG16bn(None, 128)) == 14_723_136 + 8192 * 4096 + 4096 + 4096 * 4096 + 4096 == 65_062_976


def test_vgg16_bn_names_follow_torchvision():
    with torch.device("meta"):
        sd = VGG16bn(1000).state_dict()
    assert len(sd) == 13 * 7 + 3 * 2                 # 13 conv (w, b) + BN (w, b, mean, var, count); 3 linear layers
    assert [k for k in sd if k.endswith(".weight") and k.startswith("classifier")] == [
        "classifier.0.weight", "classifier.3.weight", "classifier.6.weight"]
    assert "features.40.weight" in sd and "features.41.running_var" in sd and "features.43.weight" not in sd


def test_vgg16_bn_output_shapes():
    with torch.device("meta"):
        assert VGG16bn(1000).eval()(torch.zeros(2, 3, 224, 224)).shape == (2, 1000)
        assert VGG16bn().eval()(torch.zeros(2, 3, 224, 224)).shape == (2, 4096)
    net = VGG16bn(None, 128).eval()
    assert net(torch.rand(2, 3, 128, 128)).shape == (2, 4096)
    assert net(torch.rand(1, 3, 128, 156)).shape == (1, 4096)           # VCL's test images: Resize(128) of 178 x 218
    assert VGG16bn(40, 128).eval()(torch.rand(1, 3, 128, 128)).shape == (1, 40)
    with pytest.raises(ValueError, match="gives a \\(2, 2\\) map; input_size=128 takes sides of 128 to 159 px"):
        net(torch.rand(1, 3, 64, 64))


def test_vgg16_bn_initialisation_is_torchvision_s():
    net = VGG16bn(None, 128)
    conv, bn, lin = net.features[0], net.features[1], net.classifier[3]
    assert abs(net.features[40].weight.std().item() - (2 / (512 * 9)) ** 0.5) < 2e-3   # He normal, fan-out
    assert abs(lin.weight.std().item() - 0.01) < 1e-3 and abs(lin.weight.mean().item()) < 1e-3
    assert conv.bias.abs().max() == 0 and lin.bias.abs().max() == 0
    assert torch.all(bn.weight == 1) and torch.all(bn.bias == 0)


def test_vgg16_bn_bad_arguments():
    with pytest.raises(ValueError, match="input_size 96; valid: 224, 128"):
        VGG16bn(input_size=96)
    with pytest.raises(ValueError, match="num_classes -1; a whole number of at least 1, or None"):
        VGG16bn(num_classes=-1)


def _random_state(net, g, prefix=""):
    # one random number per tensor, broadcast (stride 0, so the file stays small) -- a swapped name would show
    return {prefix + k: torch.randn((), generator=g).to(v.dtype).expand(v.shape) for k, v in net.state_dict().items()}


def test_load_vgg16_bn_round_trip(tmp_path):
    g = torch.Generator().manual_seed(0)
    with torch.device("meta"):
        shapes128, shapes224 = VGG16bn(None, 128), VGG16bn(1000)
    sd = _random_state(shapes128, g, "module.")
    torch.save(sd, tmp_path / "ours.pth")
    net = load_vgg16_bn(tmp_path / "ours.pth", input_size=128)
    assert net.not_loaded == [] and all(torch.equal(v, sd["module." + k]) for k, v in net.state_dict().items())
    imnet = _random_state(shapes224, g)
    torch.save({"state_dict": imnet}, tmp_path / "imagenet.pth")
    net = load_vgg16_bn(tmp_path / "imagenet.pth")
    assert net.not_loaded == [] and all(torch.equal(v, imnet[k]) for k, v in net.state_dict().items())
    assert "classifier.6.weight" not in net.state_dict()                  # the ImageNet classes are ignored
    net = load_vgg16_bn(tmp_path / "imagenet.pth", input_size=128)        # 25,088 inputs cannot feed a 4 x 4 map
    assert net.not_loaded == ["classifier.0.weight", "classifier.0.bias"]
    assert net.classifier[0].in_features == 8192 and net.classifier[0].bias.abs().max() == 0 != imnet["classifier.0.bias"][0]
    assert all(torch.equal(v, imnet[k]) for k, v in net.state_dict().items() if not k.startswith("classifier.0."))


def test_load_vgg16_bn_refuses_other_files(tmp_path):
    g = torch.Generator().manual_seed(0)
    with torch.device("meta"):
        rn, v128 = ResNet50(), VGG16bn(None, 128)
    torch.save(_random_state(rn, g), tmp_path / "resnet50.pth")
    with pytest.raises(DataError, match=r"resnet50.pth: not a VGG16-bn state dict with torchvision's names \(82 missing, "
                                         r"e.g. \['features.0.weight', .*; 318 unexpected, e.g. \['conv1.weight'"):
        load_vgg16_bn(tmp_path / "resnet50.pth")
    torch.save(_random_state(v128, g), tmp_path / "vcl128.pth")
    with pytest.raises(DataError, match="vcl128.pth: not a VGG16-bn .*size mismatch for classifier.0.weight"):
        load_vgg16_bn(tmp_path / "vcl128.pth", input_size=224)
    (tmp_path / "garbage.pth").write_bytes(b"\x00garbage, not a checkpoint")
    with pytest.raises(DataError, match="garbage.pth: cannot read a state dict with weights_only=True"):
        load_vgg16_bn(tmp_path / "garbage.pth")
    torch.save(torch.zeros(3), tmp_path / "tensor.pth")
    for load in (load_vgg16_bn, load_resnet50):
        with pytest.raises(DataError, match="tensor.pth: holds a Tensor, not a (VGG16-bn|ResNet-50) state dict"):
            load(tmp_path / "tensor.pth")


def test_resnet50_keeps_its_names_and_the_dilated_101_loads_a_50_s_layers_by_name(tmp_path):
    "ResNet50 is ResNet(50) under its old name; load_resnet reads the depth from layer3 and dilation changes no name."
    with torch.device("meta"):
        names50, names101 = list(ResNet50().state_dict()), list(ResNet(101, dilate=True).state_dict())
        assert names50 == list(ResNet(50, dilate=True).state_dict())
    assert set(names50) < set(names101) and "layer3.22.conv3.weight" in names101 and "layer3.6.conv1.weight" not in names50
    g = torch.Generator().manual_seed(0)
    torch.save(_random_state(ResNet50(), g, "module."), tmp_path / "r50.pth")
    net = load_resnet(tmp_path / "r50.pth", dilate=True)
    assert (net.depth, net.dilate, net.layer4[1].conv2.dilation) == (50, True, (4, 4))
    assert [f.shape[-1] for f in net.eval().features(torch.rand(1, 3, 64, 72))] == [9, 9, 9]
    assert torch.equal(load_resnet50(tmp_path / "r50.pth").layer4[1].conv2.weight, net.layer4[1].conv2.weight)
    with pytest.raises(DataError, match="r50.pth: not a ResNet-101 state dict with torchvision's names"):
        load_resnet(tmp_path / "r50.pth", depth=101)
