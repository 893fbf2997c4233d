"""Invariants of deploy/ that no schema check sees, because they span files or the code:

- every CONSOLIDATOR_* name in the ConfigMap, the Secret, the pod specs, the compose worker
  and the Dockerfile is a field of ``Settings`` (which ignores unknown variables, so a typo
  would silently fall back to a default), and the ConfigMap + Secret make valid Settings;
- Deployment replicas and the KEDA bounds stay within the configured partitions;
- the probes hit ``/health`` on the container port that is CONSOLIDATOR_HTTP_PORT;
- the KEDA trigger watches the group, topic and brokers the workers use;
- the kustomization lists every manifest; selectors and references point at what exists;
- the ScaledObject schema of deploy/k8s/crd-schemas accepts it and rejects usual mistakes.
"""

from __future__ import annotations

import copy
import importlib.util
import os
import re
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from schemas.settings import Settings
from schemas.topics import Topics

REPO = Path(__file__).resolve().parents[2]
K8S = REPO / "deploy" / "k8s"
PREFIX = "CONSOLIDATOR_"


def _load(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def _resources() -> list[dict[str, Any]]:
    return [doc for path in sorted(K8S.glob("*.yaml")) for doc in _load(path)]


def _one(kind: str) -> dict[str, Any]:
    found = [r for r in _resources() if r["kind"] == kind]
    assert len(found) == 1, f"expected one {kind} under deploy/k8s, found {len(found)}"
    return found[0]


def _config() -> dict[str, str]:
    data: dict[str, str] = _one("ConfigMap")["data"]
    return data


def _secret() -> dict[str, str]:
    secret = _one("Secret")
    return {**secret.get("data", {}), **secret.get("stringData", {})}


def _pod_specs() -> list[dict[str, Any]]:
    return [
        r["spec"]["template"]["spec"] for r in _resources() if r["kind"] in ("Deployment", "Job")
    ]


def _worker_container() -> dict[str, Any]:
    containers = _one("Deployment")["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    container: dict[str, Any] = containers[0]
    return container


def _compose_worker() -> dict[str, Any]:
    compose = yaml.safe_load((REPO / "deploy" / "docker-compose.yml").read_text())
    worker: dict[str, Any] = compose["services"]["worker"]
    return worker


def _compose_env(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment", {})
    if isinstance(env, list):  # the "KEY=VALUE" list form
        return dict(item.split("=", 1) for item in env)
    return {str(k): str(v) for k, v in env.items()}


def _unknown(names: Iterable[object]) -> list[str]:
    """The names that are not ``CONSOLIDATOR_<a Settings field>``."""
    fields = Settings.model_fields
    return sorted(
        str(n)
        for n in names
        if not str(n).startswith(PREFIX) or str(n).removeprefix(PREFIX).lower() not in fields
    )


# --- settings names ---


def test_configmap_and_secret_keys_are_settings_fields() -> None:
    assert _unknown(_config()) == []
    assert _unknown(_secret()) == []


def test_secret_holds_the_database_url_llm_key_and_api_token() -> None:
    assert set(_secret()) == {
        "CONSOLIDATOR_DATABASE_URL",
        "CONSOLIDATOR_OPENAI_API_KEY",
        "CONSOLIDATOR_API_TOKEN",
    }


def test_pod_env_names_are_settings_fields_and_pods_read_both_sources() -> None:
    for spec in _pod_specs():
        for container in spec["containers"]:
            assert _unknown(e["name"] for e in container.get("env", [])) == []
            refs = {
                (kind, source[kind]["name"])
                for source in container.get("envFrom", [])
                for kind in ("configMapRef", "secretRef")
                if kind in source
            }
            assert refs == {
                ("configMapRef", _one("ConfigMap")["metadata"]["name"]),
                ("secretRef", _one("Secret")["metadata"]["name"]),
            }, container["name"]


def test_compose_worker_is_configured_only_by_settings_fields() -> None:
    worker = _compose_worker()
    env = _compose_env(worker)
    assert env, "the compose worker sets no CONSOLIDATOR_* variable"
    assert _unknown(env) == []
    context = (REPO / "deploy" / worker["build"]["context"]).resolve()
    assert (context / worker["build"]["dockerfile"]).resolve() == REPO / "deploy" / "Dockerfile"


def test_dockerfile_names_only_settings_fields() -> None:
    names = set(re.findall(r"\bCONSOLIDATOR_[A-Z0-9_]+", (REPO / "deploy/Dockerfile").read_text()))
    assert "CONSOLIDATOR_MODEL_DIR" in names
    assert _unknown(names) == []


def test_configmap_and_secret_make_valid_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pod's view: only these variables (strings, as in a pod), parsed by Settings."""
    for name in list(os.environ):
        if name.startswith(PREFIX):
            monkeypatch.delenv(name)
    for name, value in {**_config(), **_secret()}.items():
        monkeypatch.setenv(name, value)
    settings = Settings()
    # In a pod the API must be reachable from the probes and the Service ...
    assert settings.http_host == "0.0.0.0"
    # ... and a non-loopback bind needs the token (only /health is open without it).
    assert settings.api_token is not None and settings.api_token.get_secret_value()
    assert settings.database_url  # the embedded PostgreSQL does not exist in a pod


# --- replicas and partitions ---


def test_replicas_and_keda_bounds_stay_within_partitions() -> None:
    partitions = int(_config()["CONSOLIDATOR_PARTITIONS"])
    replicas = _one("Deployment")["spec"].get("replicas", 1)
    spec = _one("ScaledObject")["spec"]
    low, high = spec.get("minReplicaCount", 0), spec.get("maxReplicaCount", 100)
    assert replicas <= partitions
    assert high <= partitions
    assert low <= replicas <= high
    fallback = spec.get("fallback")
    if fallback:
        assert low <= fallback["replicas"] <= high


# --- HTTP port and probes ---


def _container_port(container: dict[str, Any], port: int | str) -> int:
    if isinstance(port, int):
        return port
    named = [p["containerPort"] for p in container.get("ports", []) if p.get("name") == port]
    assert named, f"no container port named {port!r}"
    return int(named[0])


def test_probes_hit_health_on_the_configured_http_port() -> None:
    container = _worker_container()
    http_port = int(_config()["CONSOLIDATOR_HTTP_PORT"])
    assert {"livenessProbe", "readinessProbe"} <= set(container)
    for kind in ("startupProbe", "livenessProbe", "readinessProbe"):
        if kind not in container:
            continue
        probe = container[kind]["httpGet"]
        assert probe["path"] == "/health", kind
        assert _container_port(container, probe["port"]) == http_port, kind


def test_service_targets_the_http_port_of_the_worker_pods() -> None:
    service, deployment = _one("Service"), _one("Deployment")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    http_port = int(_config()["CONSOLIDATOR_HTTP_PORT"])
    for port in service["spec"]["ports"]:
        assert _container_port(_worker_container(), port["targetPort"]) == http_port


def test_pdb_and_deployment_select_the_worker_pods() -> None:
    deployment = _one("Deployment")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    pdb = _one("PodDisruptionBudget")
    assert pdb["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()


# --- KEDA ---


def test_keda_trigger_watches_the_workers_group_topic_and_brokers() -> None:
    config = _config()
    scaled = _one("ScaledObject")
    assert scaled["spec"]["scaleTargetRef"]["name"] == _one("Deployment")["metadata"]["name"]
    triggers = scaled["spec"]["triggers"]
    assert [t["type"] for t in triggers] == ["kafka"]
    meta = triggers[0]["metadata"]
    assert meta["consumerGroup"] == config["CONSOLIDATOR_GROUP_ID"]
    assert meta["topic"] == Topics(config["CONSOLIDATOR_TOPIC_PREFIX"]).events
    assert meta["bootstrapServers"] == config["CONSOLIDATOR_KAFKA_BOOTSTRAP"]


def _validator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("deploy_k8s_validate", K8S / "validate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_scaledobject_schema_accepts_ours_and_rejects_usual_mistakes() -> None:
    validate_crd = _validator().validate_crd
    scaled = _one("ScaledObject")
    assert validate_crd(scaled) == []

    def broken(change: Any) -> list[str]:
        doc = copy.deepcopy(scaled)
        change(doc)
        errors: list[str] = validate_crd(doc)
        return errors

    meta = ("spec", "triggers", 0, "metadata")

    def at(doc: Any, path: tuple[Any, ...]) -> Any:
        for step in path:
            doc = doc[step]
        return doc

    # KEDA's trigger metadata is a map of strings: an unquoted number is refused on apply.
    assert broken(lambda d: at(d, meta).update(lagThreshold=1000))
    assert broken(lambda d: at(d, meta).pop("consumerGroup"))
    assert broken(lambda d: at(d, meta).update(consumergroup="x"))  # misspelt parameter
    assert broken(lambda d: d["spec"].update(maxReplicas=6))  # not a ScaledObject field
    assert broken(lambda d: d["spec"].pop("scaleTargetRef"))


# --- kustomization ---


def test_kustomization_lists_every_manifest() -> None:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    listed = kustomization["resources"]
    on_disk = sorted(p.name for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml")
    assert sorted(listed) == on_disk
    assert len(listed) == len(set(listed))
    assert not list(K8S.glob("*.yml")), "use .yaml: only those are validated and listed"
