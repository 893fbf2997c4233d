"""Validate every manifest of deploy/k8s offline: ``python deploy/k8s/validate.py -k 1.33.0``.

Runs ``kubernetes-validate --strict --kubernetes-version V`` on every manifest (every
``*.yaml`` here but ``kustomization.yaml``). That tool exits 0 when it has no schema for a
resource (it prints ``WARN ... Couldn't find schema``): a CRD, but also a built-in kind under
an apiVersion the pinned Kubernetes no longer serves. So here a resource without a schema
fails, unless ``crd-schemas/`` holds one for its kind and apiVersion (our own, written from
the CRD's documentation), against which it is then validated with jsonschema.

Exit 0 when everything validates, else 1 with the reasons on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import yaml

HERE = Path(__file__).resolve().parent
CRD_SCHEMAS = HERE / "crd-schemas"
NO_SCHEMA = re.compile(r"^WARN (\S+) Couldn't find schema for kind (\S+) with api version (\S+) ")


def manifests(directory: Path = HERE) -> list[Path]:
    return sorted(p for p in directory.glob("*.yaml") if p.name != "kustomization.yaml")


def crd_schema_path(kind: str, api_version: str) -> Path:
    """``ScaledObject``, ``keda.sh/v1alpha1`` -> ``crd-schemas/scaledobject-keda-v1alpha1.json``
    (kubernetes-validate's own naming: the group's first label, then the version)."""
    group, _, version = api_version.rpartition("/")
    return CRD_SCHEMAS / f"{kind.lower()}-{group.split('.')[0]}-{version}.json"


def validate_crd(resource: dict[str, Any]) -> list[str]:
    """Errors of one custom resource against its schema in crd-schemas/ (none if valid)."""
    path = crd_schema_path(str(resource.get("kind")), str(resource.get("apiVersion")))
    if not path.is_file():
        return [f"no schema for {resource.get('kind')} {resource.get('apiVersion')} ({path})"]
    schema = json.loads(path.read_text())
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(resource), key=lambda e: list(map(str, e.absolute_path)))
    # dict.fromkeys: one message once (a value can break two subschemas the same way)
    return list(
        dict.fromkeys(
            f"{'.'.join(str(p) for p in err.absolute_path) or '(root)'}: {err.message}"
            for err in errors
        )
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", "--kubernetes-version", required=True)
    args = parser.parse_args(argv)

    files = manifests()
    tool = Path(sys.executable).with_name("kubernetes-validate")
    cmd = [str(tool), "--strict", "--kubernetes-version", args.kubernetes_version]
    cmd += [os.path.relpath(f) for f in files]
    print("$", " ".join(cmd))
    run = subprocess.run(cmd, capture_output=True, text=True, check=False)
    sys.stdout.write(run.stdout + run.stderr)
    failed = run.returncode != 0

    for line in run.stdout.splitlines():
        if not line.startswith("WARN"):
            continue
        match = NO_SCHEMA.match(line)
        if match is None:  # a warning we do not know how to judge: fail rather than pass it
            print(f"FAIL unrecognised warning: {line}")
            failed = True
            continue
        _file, kind, api_version = match.groups()
        if not crd_schema_path(kind, api_version).is_file():
            print(f"FAIL {kind} {api_version}: no schema, neither its own nor in crd-schemas/")
            failed = True

    for path in files:
        for resource in yaml.safe_load_all(path.read_text()):
            if not resource:
                continue
            schema = crd_schema_path(str(resource.get("kind")), str(resource.get("apiVersion")))
            if not schema.is_file():
                continue  # a built-in kind: kubernetes-validate judged it above
            name = f"{resource['kind'].lower()}/{resource.get('metadata', {}).get('name')}"
            errors = validate_crd(resource)
            for error in errors:
                print(f"ERROR {path.name} {name} against {schema.name}: {error}")
            if not errors:
                print(f"INFO {path.name} passed for resource {name} against {schema.name}")
            failed = failed or bool(errors)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
