"""``sarif``: SARIF 2.1.0, for GitHub code scanning and other SARIF viewers.

One run; ``tool.driver.rules`` lists every torchlint rule (and TL001/TL002),
each result points at its rule by id and index. Paths are relative to the
working directory (``uriBaseId`` ``%SRCROOT%``), with forward slashes; columns
count code points (``columnKind``), end columns are exclusive as SARIF says.
A notebook finding gives the line within its cell; the cell number is in the
message and in ``properties.cell``.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from torchlint.links import HOMEPAGE, rule_url
from torchlint.reporters._common import PSEUDO_RULES, fix_record, relative_path, uri_reference

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVEL = "error"  # a finding fails the check run, as it fails `torchlint check`


def _descriptors() -> list:
    from torchlint.rules import ALL_RULES

    out = []
    for code, (name, text) in PSEUDO_RULES.items():
        out.append({
            "id": code, "name": name, "shortDescription": {"text": text},
            "helpUri": rule_url(code), "defaultConfiguration": {"level": LEVEL},
        })
    for rule in ALL_RULES:
        out.append({
            "id": rule.code,
            "name": rule.name,
            "shortDescription": {"text": rule.message.split(";")[0]},
            "fullDescription": {"text": rule.message},
            "helpUri": rule_url(rule.code),
            "defaultConfiguration": {"level": LEVEL, "enabled": bool(rule.default)},
            "properties": {"fixSafety": rule.fix_safety},
        })
    return out


def _location(d, base: str) -> dict:
    path = relative_path(d.path, base)
    artifact = {"uri": uri_reference(path)}
    if path.startswith("/") or ":" in path.split("/")[0]:
        artifact = {"uri": Path(os.path.abspath(d.path)).as_uri()}
    else:
        artifact["uriBaseId"] = "%SRCROOT%"
    region = {"startLine": d.line, "startColumn": d.col}
    if d.end_line is not None and d.end_col is not None:
        region.update(endLine=d.end_line, endColumn=d.end_col)
    return {"physicalLocation": {"artifactLocation": artifact, "region": region}}


def build(diagnostics, base=None) -> dict:
    from torchlint import __version__

    base = os.path.abspath(base or os.getcwd())
    rules = _descriptors()
    index = {rule["id"]: i for i, rule in enumerate(rules)}
    results = []
    for d in diagnostics:
        if d.code not in index:  # not a known code: still report it
            index[d.code] = len(rules)
            rules.append({"id": d.code, "shortDescription": {"text": d.code}})
        cell = getattr(d, "cell", None)
        where = f"cell {cell}, line {d.line}: " if cell is not None else ""
        result = {
            "ruleId": d.code,
            "ruleIndex": index[d.code],
            "level": LEVEL,
            "message": {"text": f"{where}{d.message}"},
            "locations": [_location(d, base)],
        }
        properties = {}
        if cell is not None:
            properties["cell"] = cell
        fix = fix_record(d)
        if fix is not None:
            properties["fix"] = fix
        if properties:
            result["properties"] = properties
        results.append(result)
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "torchlint",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": HOMEPAGE,
                "rules": rules,
            }},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": Path(base).as_uri().rstrip("/") + "/"}},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }


def report(diagnostics, out, **context) -> None:
    json.dump(build(diagnostics), out, indent=2)
    out.write("\n")
