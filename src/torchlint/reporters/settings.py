"""``--show-settings PATH``: what applies to one file, and where it came from."""
from __future__ import annotations

import os

from torchlint.torch_version import format_version


def show_settings(path: str, settings, out) -> None:
    resolved = settings.resolve(path)
    config = resolved.config
    files = settings.files
    lines = [
        f"Resolved settings for: {path}",
        f"Config file: {config.source if config.source is not None else '(none: defaults)'}",
        f"Config root: {config.root}",
        f"Excluded: {'yes' if resolved.excluded else 'no'}",
        f"Enabled codes ({len(resolved.codes)}): {', '.join(sorted(resolved.codes))}",
        f"exclude: {_listed(config.exclude if files is None or files.exclude is None else files.exclude)}",
        f"extend-exclude (command line): {_listed(files.extend_exclude if files else ())}",
        "per-file-ignores:",
        *_per_file(config.per_file_ignores.items(), "config"),
        *_per_file(files.per_file_ignores if files else (), "command line"),
        f"respect-gitignore: {str(settings.respects_gitignore(os.path.dirname(os.path.abspath(path)))).lower()}",
        f"target-torch-version: {format_version(resolved.target_torch)} ({resolved.target_origin})",
    ]
    out.write("\n".join(lines) + "\n")


def _listed(patterns) -> str:
    return ", ".join(patterns) if patterns else "(none)"


def _per_file(entries, source: str) -> list:
    return [f"  {pattern} = {', '.join(sorted(codes))}  ({source})" for pattern, codes in entries]
