"""torchlint: find autograd hazards in PyTorch code without running it."""

__version__ = "0.1.0"
