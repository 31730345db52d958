"""What jupyter-lsp (the server half of jupyterlab-lsp) needs to start ``torchlint server``
for notebooks in JupyterLab: found through the ``jupyter_lsp_spec_v1`` entry point, so
installing ``torchlint[lsp]`` next to jupyterlab-lsp is all the setup (docs/notebooks.md).

jupyterlab-lsp sends a notebook to its servers as one Python text document, its code
cells joined, named like the notebook under ``.virtual_documents/``; the server lints it
as Python. Imports nothing of jupyter-lsp: the spec is plain data.
"""
from __future__ import annotations

import importlib.util
import sys

KEY = "torchlint"
# jupyter-lsp's spec format version (jupyter_lsp.schema.SPEC_VERSION)
SPEC_VERSION = 2


def spec(manager=None) -> dict:
    """``{"torchlint": spec}``; the spec's ``argv`` is empty (jupyter-lsp then leaves the
    server out) when pygls, the ``lsp`` extra, is not installed."""
    installed = importlib.util.find_spec("pygls") is not None
    return {KEY: {
        "argv": [sys.executable, "-m", "torchlint", "server"] if installed else [],
        "languages": ["python"],
        "version": SPEC_VERSION,
        "display_name": "torchlint",
        "mime_types": ["text/python", "text/x-ipython"],
        "urls": {"home": "https://github.com/torchlint/torchlint",
                 "issues": "https://github.com/torchlint/torchlint/issues"},
        "install": {"pip": "pip install 'torchlint[lsp]'"},
    }}
