"""The opt-in TL7 family (TL701-TL705): the target torch version, and the exact fixes it writes."""
from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from torchlint.fixer import fix_source
from torchlint.model import FileModel
from torchlint.rules import RULES_BY_CODE
from torchlint.request import LintRequest

AMP = "import torch\nscaler = torch.cuda.amp.GradScaler()\n"
SOLVE = "import torch\nx = torch.solve(b, A)\n"
LEGACY_INIT = "import torch\ntorch.nn.init.normal(w)\n"
COLLATE = "import torch\nb = torch.utils.data._utils.collate.default_collate(samples)\n"
VISION = "import torchvision\nm = torchvision.models.resnet50(pretrained=False)\n"


def found(code: str, source: str, target) -> int:
    model = FileModel(cst.parse_module(source), "train.py", target_torch=target)
    return len(list(RULES_BY_CODE[code]().check(model)))


@pytest.mark.parametrize("code, source, target, expected", [
    ("TL702", AMP, (2, 3), 0),  # torch.amp.GradScaler("cuda") is 2.3's; the old one was not deprecated yet
    ("TL702", AMP, (2, 4), 1),
    ("TL702", AMP, None, 1),  # no target: the newest torch known
    ("TL701", SOLVE, (1, 11), 0),
    ("TL701", SOLVE, (1, 12), 1),
    ("TL702", LEGACY_INIT, (1, 0), 1),
    ("TL703", COLLATE, (1, 10), 0),  # torch.utils.data.default_collate is public from 1.11
    ("TL703", COLLATE, (1, 11), 1),
    ("TL705", VISION, (1, 11), 0),
    ("TL705", VISION, (1, 12), 1),
])
def test_reported_from_the_release_that_changed_it(code, source, target, expected):
    assert found(code, source, target) == expected


def fixed(code: str, source: str) -> str:
    return fix_source(textwrap.dedent(source), "train.py", LintRequest.of({code}), {code}, unsafe=True)


@pytest.mark.parametrize("code, before, after", [
    # keyword arguments keep their meaning after the device argument
    ("TL702", "from torch.cuda.amp import GradScaler\ns = GradScaler(init_scale=1024.0)\n",
     'import torch\nfrom torch.cuda.amp import GradScaler\ns = torch.amp.GradScaler("cuda", init_scale=1024.0)\n'),
    ("TL702", "import torch as T\nwith T.cpu.amp.autocast(dtype=T.bfloat16):\n    pass\n",
     'import torch as T\nwith T.amp.autocast("cpu", dtype=T.bfloat16):\n    pass\n'),
    ("TL702", "import torch\ny = torch.chain_matmul(a, b, c)\n", "import torch\ny = torch.linalg.multi_dot([a, b, c])\n"),
    ("TL702", "import torch\nx = torch.lu_solve(b, lu, piv)\n", "import torch\nx = torch.linalg.lu_solve(lu, piv, b)\n"),
    ("TL702", "from torch import nn\nnn.init.xavier_uniform(w, gain=2)\n", "from torch import nn\nnn.init.xavier_uniform_(w, gain=2)\n"),
    ("TL702", "import torch\no = torch.ger(u, v)\n", "import torch\no = torch.outer(u, v)\n"),
    # a bare decorator is a call too; the factory form takes the device
    ("TL702", "import torch\n@torch.cuda.amp.custom_fwd\ndef forward(ctx, x):\n    return x\n",
     'import torch\n@torch.amp.custom_fwd(device_type="cuda")\ndef forward(ctx, x):\n    return x\n'),
    ("TL702", "import torch\n@torch.cuda.amp.custom_fwd(cast_inputs=torch.float32)\ndef forward(ctx, x):\n    return x\n",
     'import torch\n@torch.amp.custom_fwd(cast_inputs=torch.float32, device_type="cuda")\ndef forward(ctx, x):\n'
     '    return x\n'),
    ("TL701", "import torch\nr = torch.matrix_rank(A)\n", "import torch\nr = torch.linalg.matrix_rank(A)\n"),
    ("TL703", "import torch\nfrom torch.utils.data._utils.collate import default_convert\nx = default_convert(b)\n",
     "import torch\nfrom torch.utils.data._utils.collate import default_convert\nx = torch.utils.data.default_convert(b)\n"),
    ("TL704", "from torch import log\ny = log(1 + x)\n", "import torch\nfrom torch import log\ny = torch.log1p(x)\n"),
    ("TL704", "import torch\ny = (torch.exp(a * t) - 1.0) / t\n", "import torch\ny = torch.expm1(a * t) / t\n"),
    ("TL705", "from torchvision import models\nm = models.resnet50(pretrained=True)\n",
     'from torchvision import models\nm = models.resnet50(weights="IMAGENET1K_V1")\n'),
    ("TL705", "from torchvision.models import detection\nm = detection.fcos_resnet50_fpn(pretrained_backbone=False)\n",
     "from torchvision.models import detection\nm = detection.fcos_resnet50_fpn(weights_backbone=None)\n"),
])
def test_exact_fixes(code, before, after):
    assert fixed(code, before) == after


@pytest.mark.parametrize("code, source", [
    ("TL702", "import torch\nwith torch.cuda.amp.autocast(True, torch.bfloat16):\n    pass\n"),  # positions would shift
    ("TL702", "import torch\ns = torch.cuda.amp.GradScaler(**options)\n"),
    ("TL702", "import torch\nq, r = torch.qr(A, some=False)\n"),  # mode="complete", not a rename
    ("TL702", "import torch\nL = torch.cholesky(A, upper=True)\n"),
    ("TL702", "import torch\nx = torch.range(0, 10)\n"),  # arange excludes the end point
    ("TL702", "import torch\ny = torch.chain_matmul(a)\n"),  # one matrix: multi_dot needs two
    ("TL701", "import torch\nx, lu = torch.solve(b, A)\n"),
    ("TL705", "from torchvision import models\nm = models.detection.maskrcnn_resnet50_fpn(pretrained=True)\n"),
    ("TL705", "from torchvision import models\nm = models.vit_h_14(pretrained=True)\n"),  # no IMAGENET1K_V1 weights
    ("TL705", "from torchvision import models\nm = models.resnet50(pretrained=args.pretrained)\n"),
])
def test_no_fix_where_the_replacement_is_not_exact(code, source):
    assert found(code, source, None) == 1
    assert fixed(code, source) == source


def test_dtensor_members_move_with_their_class():
    source = ("from torch.distributed._tensor import DTensor, Shard\n"
              "t = DTensor.from_local(local, mesh, [Shard(0)])\n")
    assert found("TL703", source, (2, 5)) == 2 and found("TL703", source, (2, 4)) == 0
    assert fixed("TL703", source) == (
        "import torch\nfrom torch.distributed._tensor import DTensor, Shard\n"
        "t = torch.distributed.tensor.DTensor.from_local(local, mesh, [torch.distributed.tensor.Shard(0)])\n")


VERBOSE = "import torch\ns = torch.optim.lr_scheduler.StepLR(opt, 30, verbose=True)\n"
GATHER = "import torch.distributed as dist\ndist._all_gather_base(out, x)\n"
NAMED = "import torch\nx = torch.zeros(2, 3, names=('N', 'C'))\ny = x.refine_names('N', 'C')\n"
SCRIPT = "import torch\nf = torch.jit.script(g)\n"
DDP = "import torch\nm = torch.nn.parallel.DistributedDataParallel(net, broadcast_buffers=False)\n"


@pytest.mark.parametrize("code, source, target, expected", [
    # verbose= deprecated in 2.2 (TL702), gone in 2.7 (TL701): one report, never both
    ("TL702", VERBOSE, (2, 1), 0),
    ("TL702", VERBOSE, (2, 2), 1),
    ("TL702", VERBOSE, (2, 6), 1),
    ("TL701", VERBOSE, (2, 6), 0),
    ("TL702", VERBOSE, (2, 7), 0),
    ("TL701", VERBOSE, (2, 7), 1),
    ("TL701", NAMED, (2, 12), 0),
    ("TL701", NAMED, (2, 13), 2),
    ("TL702", SCRIPT, (2, 9), 0),
    ("TL702", SCRIPT, (2, 10), 1),
    ("TL702", DDP, (2, 12), 0),
    ("TL702", DDP, (2, 13), 1),
    ("TL702", GATHER, (1, 12), 0),
    ("TL702", GATHER, (1, 13), 1),
])
def test_keywords_methods_and_2_x_deprecations_follow_the_target(code, source, target, expected):
    assert found(code, source, target) == expected


def fixed_at(code: str, source: str, target) -> str:
    return fix_source(source, "train.py", LintRequest.of({code}, target), {code}, unsafe=False)


@pytest.mark.parametrize("target, after", [
    # the advice is the target's: the 1.13 name while the target lacks the 2.13 one
    ((2, 12), "import torch.distributed as dist\ndist.all_gather_into_tensor(out, x)\n"),
    ((2, 13), "import torch.distributed as dist\ndist.all_gather_single(out, x)\n"),
])
def test_the_collective_rename_follows_the_target(target, after):
    assert fixed_at("TL702", GATHER, target) == after


def test_a_removed_verbose_is_dropped_and_a_deprecated_quiet_one_too():
    assert fixed_at("TL701", VERBOSE, (2, 7)) == "import torch\ns = torch.optim.lr_scheduler.StepLR(opt, 30)\n"
    quiet = VERBOSE.replace("verbose=True", "verbose=False")
    assert fixed_at("TL702", quiet, (2, 4)) == "import torch\ns = torch.optim.lr_scheduler.StepLR(opt, 30)\n"
    # verbose=True printed the learning rate on 2.2-2.6: dropping it is an unsafe fix there
    assert fixed_at("TL702", VERBOSE, (2, 4)) == VERBOSE


@pytest.mark.parametrize("source", [
    "import pandas as pd\nframe = pd.DataFrame(rows).rename(columns={'a': 'b'})\n",
    "import torch\nimport geometry\np = geometry.align_to(points, target)\n",
    "import torch\nfrom mylib import Scheduler\ns = Scheduler(opt, verbose=True)\n",
    "import torch\nx = torch.zeros_like(y)\nnames = [n for n, _ in model.named_parameters()]\n",
])
def test_named_tensor_and_verbose_lookalikes_are_silent(source):
    assert found("TL701", source, (2, 13)) == 0
