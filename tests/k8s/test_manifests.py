"""The Kubernetes manifests, the Dockerfile and scripts/render_manifests.py, checked offline.

Each kustomization is rendered with the project's own renderer (no kubectl needed), then:
the core kinds go through kubernetes-validate --strict, every KEDA ScaledObject through the stored
KEDA schema (jsonschema), and the rest is cross-checked against the code: probe ports against
container ports and Settings, the grace period against GRPC_SHUTDOWN_GRACE_SECONDS, env names
against athena.config.Settings, the KEDA list against athena.keys.DISPATCHER.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from athena import keys
from athena.config import Settings, load_settings
from athena.metrics import QUEUE_DEPTH
from athena.queue import QueueDepth

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "k8s"
SERVICES = ("ingest", "cognition", "formation")

_spec = importlib.util.spec_from_file_location("render_manifests", ROOT / "scripts" / "render_manifests.py")
assert _spec is not None and _spec.loader is not None
rm = importlib.util.module_from_spec(_spec)
sys.modules["render_manifests"] = rm
_spec.loader.exec_module(rm)

OVERLAYS = {"dev": K8S / "overlays" / "dev", "prod": K8S / "overlays" / "prod"}
ALTERNATIVE = K8S / "alternatives" / "hpa-prometheus-adapter"
TARGETS = {**OVERLAYS, "base": K8S / "base", "no-keda": ALTERNATIVE}

# kubernetes-validate: the oldest version we support (gRPC probes are GA since 1.27) and the newest it knows.
K8S_VERSIONS = ("1.30.0", kubernetes_validate.latest_version())

# Env names that are not Athena settings but are read by a library Athena uses.
STANDARD_ENV = {
    "OMP_NUM_THREADS",
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
    "PYTHONUNBUFFERED",
    "TOKENIZERS_PARALLELISM",
}
STANDARD_ENV_PREFIXES = ("OTEL_",)

COGNITION_MEMORY_BUDGET = 1536 * 2**20  # 1.5 GiB: cognition with the model loaded must fit


@cache
def rendered(target: str) -> tuple[dict[str, Any], ...]:
    return tuple(rm.render(TARGETS[target]))


def of_kind(docs: tuple[dict[str, Any], ...], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def one(docs: tuple[dict[str, Any], ...], kind: str, name: str) -> dict[str, Any]:
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind}/{name}, found {len(found)}"
    return found[0]


def config(docs: tuple[dict[str, Any], ...]) -> dict[str, str]:
    return one(docs, "ConfigMap", "athena-config")["data"]


def containers(deployment: dict[str, Any]) -> list[dict[str, Any]]:
    return deployment["spec"]["template"]["spec"]["containers"]


def quantity(value: Any) -> float:
    """A Kubernetes quantity ('500m', '1', '1536Mi', '1Gi') as a number."""
    text = str(value)
    units = {"m": 1e-3, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 1e3, "M": 1e6, "G": 1e9}
    match = re.fullmatch(r"([0-9.]+)([A-Za-z]*)", text)
    assert match, f"bad quantity {value!r}"
    number, unit = match.groups()
    return float(number) * (units[unit] if unit else 1)


def autoscaler_targets(docs: tuple[dict[str, Any], ...]) -> dict[str, list[tuple[str, int, int]]]:
    """Deployment name -> [(autoscaler kind, min replicas, max replicas)]."""
    out: dict[str, list[tuple[str, int, int]]] = {}
    for hpa in of_kind(docs, "HorizontalPodAutoscaler"):
        spec = hpa["spec"]
        out.setdefault(spec["scaleTargetRef"]["name"], []).append(
            ("HPA", spec.get("minReplicas", 1), spec["maxReplicas"])
        )
    for so in of_kind(docs, "ScaledObject"):
        spec = so["spec"]
        out.setdefault(spec["scaleTargetRef"]["name"], []).append(
            ("ScaledObject", spec.get("minReplicaCount", 0), spec.get("maxReplicaCount", 100))
        )
    return out


def example_secret() -> dict[str, Any]:
    return yaml.safe_load((K8S / "examples" / "secret.example.yaml").read_text())


# --- (a) kubernetes-validate --strict on the core kinds -------------------------------------------


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("target", sorted(TARGETS))
def test_core_kinds_pass_kubernetes_validate_strict(target: str, version: str) -> None:
    errors = []
    checked = 0
    for doc in rendered(target):
        if doc["apiVersion"].startswith("keda.sh/"):
            continue  # no schema in kubernetes-validate; see test_scaledobjects_match_the_keda_schema
        try:
            kubernetes_validate.validate(doc, version, strict=True)
            checked += 1
        except kubernetes_validate.ValidationError as exc:
            errors.append(f"{doc['kind']}/{doc['metadata']['name']}: {exc.message} at {'.'.join(map(str, exc.path))}")
        except kubernetes_validate.SchemaNotFoundError as exc:
            errors.append(f"{doc['kind']}/{doc['metadata']['name']}: no schema ({exc})")
    assert not errors, "\n".join(errors)
    assert checked == len([d for d in rendered(target) if not d["apiVersion"].startswith("keda.sh/")]) >= 16


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_example_secret_passes_kubernetes_validate(version: str) -> None:
    kubernetes_validate.validate(example_secret(), version, strict=True)


def test_kubernetes_validate_catches_a_named_grpc_probe_port() -> None:
    """The validator really checks what matters here: a named gRPC probe port is rejected."""
    deployment = json.loads(json.dumps(one(rendered("prod"), "Deployment", "ingest")))
    containers(deployment)[0]["readinessProbe"]["grpc"]["port"] = "grpc"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, K8S_VERSIONS[0], strict=True)


# --- (b) the KEDA ScaledObject against the stored schema -----------------------------------------


@lru_cache(maxsize=1)
def keda_validator() -> jsonschema.protocols.Validator:
    schema = json.loads((K8S / "schemas" / "keda-scaledobject-v1alpha1.json").read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def keda_errors(doc: dict[str, Any]) -> list[str]:
    errors = [f"{'.'.join(map(str, e.path))}: {e.message}" for e in keda_validator().iter_errors(doc)]
    spec = doc.get("spec", {})
    # The CRD's CEL rule, which JSON Schema cannot express.
    if spec.get("minReplicaCount", 0) > spec.get("maxReplicaCount", 100):
        errors.append("minReplicaCount must be less than or equal to maxReplicaCount")
    return errors


@pytest.mark.parametrize("target", ["base", "dev", "prod"])
def test_scaledobjects_match_the_keda_schema(target: str) -> None:
    scaled = of_kind(rendered(target), "ScaledObject")
    assert scaled, "the cognition ScaledObject is missing"
    for doc in scaled:
        assert keda_errors(doc) == []


@pytest.mark.parametrize(
    "breakage",
    [
        lambda so: so["spec"]["triggers"][0]["metadata"].__setitem__("listLength", 2),  # metadata values are strings
        lambda so: so["spec"].__setitem__("triggers", []),  # at least one trigger
        lambda so: so["spec"].pop("scaleTargetRef"),
        lambda so: so["spec"].__setitem__("minReplicas", 1),  # HPA spelling: unknown field
        lambda so: so["spec"].__setitem__("minReplicaCount", 9),  # above maxReplicaCount (CEL rule)
    ],
)
def test_the_keda_schema_rejects_broken_scaledobjects(breakage: Any) -> None:
    so = json.loads(json.dumps(of_kind(rendered("base"), "ScaledObject")[0]))
    breakage(so)
    assert keda_errors(so)


# --- (c) consistency ------------------------------------------------------------------------------


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_grpc_probes_use_the_numeric_container_ports(target: str) -> None:
    docs = rendered(target)
    settings = load_settings(**{k.lower(): v for k, v in config(docs).items()})
    for name in SERVICES:
        deployment = one(docs, "Deployment", name)
        (container,) = containers(deployment)
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        assert ports == {
            "grpc": getattr(settings, f"{name}_grpc_port"),
            "metrics": getattr(settings, f"{name}_metrics_port"),
        }
        for probe, health_service in (
            ("startupProbe", "liveness"),
            ("livenessProbe", "liveness"),
            ("readinessProbe", "readiness"),
        ):
            grpc = container[probe]["grpc"]
            assert isinstance(grpc["port"], int) and grpc["port"] == ports["grpc"], (name, probe)
            assert grpc["service"] == health_service, (name, probe)
        annotations = deployment["spec"]["template"]["metadata"]["annotations"]
        assert annotations["prometheus.io/scrape"] == "true"
        assert annotations["prometheus.io/port"] == str(ports["metrics"])
        service = one(docs, "Service", name)
        assert {p["name"]: p["port"] for p in service["spec"]["ports"]} == ports
        assert all(p["targetPort"] in ports for p in service["spec"]["ports"])
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert service["spec"]["selector"].items() <= labels.items()
        assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_termination_grace_exceeds_the_shutdown_grace(target: str) -> None:
    docs = rendered(target)
    grace = float(
        config(docs).get("GRPC_SHUTDOWN_GRACE_SECONDS", Settings.model_fields["grpc_shutdown_grace_seconds"].default)
    )
    for name in SERVICES:
        pod = one(docs, "Deployment", name)["spec"]["template"]["spec"]
        pre_stop = 0.0
        for container in pod["containers"]:
            command = container.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command", [])
            if command[:1] == ["sleep"]:
                pre_stop = max(pre_stop, float(command[1]))
        assert pod["terminationGracePeriodSeconds"] > grace + pre_stop, name


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_pods_run_non_root_on_a_read_only_root_filesystem(target: str) -> None:
    docs = rendered(target)
    accounts = {d["metadata"]["name"] for d in of_kind(docs, "ServiceAccount")}
    for name in SERVICES:
        pod = one(docs, "Deployment", name)["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] == 10001
        assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
        assert pod["automountServiceAccountToken"] is False
        assert pod["serviceAccountName"] in accounts
        volumes = {v["name"]: v for v in pod["volumes"]}
        for container in pod["containers"]:
            sc = container["securityContext"]
            assert sc["readOnlyRootFilesystem"] is True
            assert sc["allowPrivilegeEscalation"] is False
            assert sc["capabilities"]["drop"] == ["ALL"]
            tmp = [m for m in container["volumeMounts"] if m["mountPath"] == "/tmp"]
            assert len(tmp) == 1 and "emptyDir" in volumes[tmp[0]["name"]]


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_every_container_has_requests_and_limits(target: str) -> None:
    docs = rendered(target)
    for deployment in of_kind(docs, "Deployment"):
        for container in containers(deployment):
            res = container["resources"]
            for resource in ("cpu", "memory"):
                assert quantity(res["limits"][resource]) >= quantity(res["requests"][resource]) > 0, (
                    container["name"],
                    resource,
                )
    (cognition,) = containers(one(docs, "Deployment", "cognition"))
    assert quantity(cognition["resources"]["limits"]["memory"]) <= COGNITION_MEMORY_BUDGET
    # the model alone is about 600 MiB resident
    assert quantity(cognition["resources"]["requests"]["memory"]) >= 512 * 2**20


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_each_deployment_has_exactly_one_autoscaler_and_a_budget(target: str) -> None:
    docs = rendered(target)
    scalers = autoscaler_targets(docs)
    assert sorted(scalers) == sorted(SERVICES)
    for name in SERVICES:
        assert len(scalers[name]) == 1, f"{name} is targeted by {scalers[name]}"
        _, low, high = scalers[name][0]
        assert 1 <= low <= high
        pdb = one(docs, "PodDisruptionBudget", name)
        labels = one(docs, "Deployment", name)["spec"]["template"]["metadata"]["labels"]
        assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
        if "minAvailable" in pdb["spec"]:
            assert pdb["spec"]["minAvailable"] < low, f"{name}: the PDB would block every eviction"
    for name in ("ingest", "formation"):
        hpa = one(docs, "HorizontalPodAutoscaler", name)
        assert [m["resource"]["name"] for m in hpa["spec"]["metrics"]] == ["cpu"]


@pytest.mark.parametrize("target", ["base", "dev", "prod"])
def test_cognition_scales_on_the_redis_work_queue(target: str) -> None:
    docs = rendered(target)
    (so,) = of_kind(docs, "ScaledObject")
    spec = so["spec"]
    assert spec["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "cognition"}
    assert spec["minReplicaCount"] >= 1
    triggers = {t["name"]: t for t in spec["triggers"]}
    assert {t["type"] for t in triggers.values()} == {"redis"}
    assert triggers["ready"]["metadata"]["listName"] == keys.DISPATCHER
    assert triggers["in_flight"]["metadata"]["listName"] == keys.QUEUE_LEASES
    # the same quantities cognition exports as memos_queue_depth{state=...}
    assert set(triggers) <= {f.name for f in dataclasses.fields(QueueDepth)}
    modifiers = spec["advanced"]["scalingModifiers"]
    assert set(re.findall(r"[A-Za-z_]\w*", modifiers["formula"])) == set(triggers)
    assert modifiers["target"] == config(docs)["MEMORY_WORKER_COUNT"]
    auth_names = {t["authenticationRef"]["name"] for t in triggers.values()}
    secret_keys = set(example_secret()["stringData"])
    for auth in of_kind(docs, "TriggerAuthentication"):
        assert auth["metadata"]["name"] in auth_names
        for ref in auth["spec"]["secretTargetRef"]:
            assert ref["name"] == "athena-secrets" and ref["key"] in secret_keys
    assert {a["metadata"]["name"] for a in of_kind(docs, "TriggerAuthentication")} == auth_names


def test_the_alternative_uses_an_hpa_on_the_adapter_metric_instead_of_keda() -> None:
    docs = rendered("no-keda")
    assert not [d for d in docs if d["apiVersion"].startswith("keda.sh/")]
    hpa = one(docs, "HorizontalPodAutoscaler", "cognition")
    (metric,) = hpa["spec"]["metrics"]
    assert metric["type"] == "External"
    assert metric["external"]["target"]["averageValue"] == config(docs)["MEMORY_WORKER_COUNT"]
    adapter = yaml.safe_load((ALTERNATIVE / "prometheus-adapter-config.yaml").read_text())
    (rule,) = adapter["externalRules"]
    assert rule["name"]["as"] == metric["external"]["metric"]["name"]
    gauge = QUEUE_DEPTH._name
    assert f"{gauge}{{" in rule["seriesQuery"] and f"{gauge}{{" in rule["metricsQuery"]
    assert "<<.LabelMatchers>>" in rule["metricsQuery"]
    states = re.search(r'state=~"([^"]+)"', rule["metricsQuery"])
    assert states and set(states.group(1).split("|")) == {"ready", "in_flight"}
    assert {"ready", "in_flight"} <= {f.name for f in dataclasses.fields(QueueDepth)}
    # the alternative is not part of the base kustomization
    assert "cognition" not in {h["metadata"]["name"] for h in of_kind(rendered("base"), "HorizontalPodAutoscaler")}


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_env_names_are_athena_settings(target: str) -> None:
    docs = rendered(target)
    fields = {name.upper() for name in Settings.model_fields}

    def known(name: str) -> bool:
        return name in fields or name in STANDARD_ENV or name.startswith(STANDARD_ENV_PREFIXES)

    data = config(docs)
    assert [k for k in data if not known(k)] == []
    load_settings(**{k.lower(): v for k, v in data.items()})  # every value parses
    secret_keys = set(example_secret()["stringData"])
    for deployment in of_kind(docs, "Deployment"):
        for container in containers(deployment):
            assert [e["name"] for e in container.get("env", []) if not known(e["name"])] == []
            for ref in container.get("envFrom", []):
                assert ref == {"configMapRef": {"name": "athena-config"}}
            for env in container.get("env", []):
                secret = env.get("valueFrom", {}).get("secretKeyRef")
                if secret:
                    assert secret["name"] == "athena-secrets" and secret["key"] in secret_keys


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_no_secret_values_are_shipped(target: str) -> None:
    assert of_kind(rendered(target), "Secret") == []


def test_overlays_differ_as_documented() -> None:
    dev, prod = rendered("dev"), rendered("prod")
    assert config(dev)["LOG_LEVEL"] == "DEBUG" and config(prod)["LOG_LEVEL"] == "INFO"
    assert all(low == high == 1 for [(_, low, high)] in autoscaler_targets(dev).values())
    assert all(low >= 2 for [(_, low, _)] in autoscaler_targets(prod).values())
    for name in SERVICES:
        assert "minAvailable" in one(prod, "PodDisruptionBudget", name)["spec"]
        (dev_c,) = containers(one(dev, "Deployment", name))
        (prod_c,) = containers(one(prod, "Deployment", name))
        assert quantity(prod_c["resources"]["limits"]["memory"]) > quantity(dev_c["resources"]["limits"]["memory"])
        assert quantity(prod_c["resources"]["limits"]["cpu"]) >= quantity(dev_c["resources"]["limits"]["cpu"])
        image = prod_c["image"]
        assert re.search(r"(:[\w][\w.-]*|@sha256:[0-9a-f]{64})$", image.split("/")[-1]) and not image.endswith(
            ":latest"
        ), image
        assert prod_c["args"] == [name] and dev_c["args"] == [name]
    for docs in (dev, prod):
        assert {d["metadata"].get("namespace") for d in docs if d["kind"] != "Namespace"} == {"athena"}
        assert one(docs, "Namespace", "athena")


@pytest.mark.parametrize("target", sorted(OVERLAYS))
def test_the_configured_sampler_keeps_whole_journeys(target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from athena.tracing import FollowLinkedProducer, sampler_from_env

    data = config(rendered(target))
    for name in ("OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG"):
        monkeypatch.setenv(name, data[name])
    sampler = sampler_from_env()
    assert isinstance(sampler, FollowLinkedProducer), sampler.get_description()
    expected = {"dev": "1.0", "prod": "0.1"}[target]
    assert f"TraceIdRatioBased{{{expected}}}" in sampler.get_description()


# --- the Dockerfile ------------------------------------------------------------------------------------


def dockerfile_instructions() -> list[tuple[str, str]]:
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def test_dockerfile_runs_athena_serve_as_non_root_offline() -> None:
    instructions = dockerfile_instructions()
    stages = [rest for word, rest in instructions if word == "FROM"]
    assert len(stages) >= 2, "multi-stage build"
    args = dict(rest.split("=", 1) for word, rest in instructions if word == "ARG" and "=" in rest)
    assert args.get("PYTHON_IMAGE", "").startswith("python:3.11-slim")
    final = instructions[max(i for i, (word, _) in enumerate(instructions) if word == "FROM") :]
    entrypoint = [json.loads(rest) for word, rest in final if word == "ENTRYPOINT"]
    assert entrypoint == [["athena", "serve"]]
    cmd = [json.loads(rest) for word, rest in final if word == "CMD"]
    assert len(cmd) == 1 and cmd[0][0] in SERVICES
    assert [rest for word, rest in final if word == "USER"] == ["10001:10001"]
    env = " ".join(rest for word, rest in final if word == "ENV")
    assert "HF_HUB_OFFLINE=1" in env and "HOME=/tmp" in env
    runs = " ".join(rest for word, rest in instructions if word == "RUN")
    assert "download.pytorch.org/whl/cpu" in runs and "torch==2.13.0" in runs
    assert ".[dev]" not in runs and "[dev]" not in runs
    exposed = {int(p) for word, rest in final if word == "EXPOSE" for p in rest.split()}
    for target in ("dev", "prod"):
        for deployment in of_kind(rendered(target), "Deployment"):
            for container in containers(deployment):
                assert {p["containerPort"] for p in container["ports"]} <= exposed


def test_dockerignore_keeps_the_context_small() -> None:
    lines = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert lines[0] == "**"
    allowed = {line[1:].rstrip("/") for line in lines if line.startswith("!")}
    copied = {
        rest.split()[0].rstrip("/").removeprefix("./")
        for word, rest in dockerfile_instructions()
        if word == "COPY" and not rest.startswith("--from")
    }
    assert copied <= allowed, copied - allowed
    assert allowed <= {"pyproject.toml", "README.md", "clients/python", "libs", "services"}


# --- the renderer --------------------------------------------------------------------------------------


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_strategic_merge_merges_containers_env_and_volumes_by_key() -> None:
    target = {
        "spec": {
            "containers": [
                {
                    "name": "a",
                    "image": "x",
                    "env": [{"name": "A", "value": "1"}],
                    "resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
                },
                {"name": "b", "image": "y"},
            ],
            "tolerations": [{"key": "t1"}],
        }
    }
    patch = {
        "spec": {
            "containers": [
                {"name": "a", "env": [{"name": "B", "value": "2"}], "resources": {"limits": {"memory": "2Gi"}}}
            ],
            "tolerations": [{"key": "t2"}],
        }
    }
    merged = rm.strategic_merge(target, patch)
    a, b = merged["spec"]["containers"]
    assert a["image"] == "x" and a["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
    assert a["resources"]["limits"] == {"cpu": "1", "memory": "2Gi"}
    assert b == {"name": "b", "image": "y"}
    assert merged["spec"]["tolerations"] == [{"key": "t2"}]  # no merge key: replaced
    assert target["spec"]["containers"][0]["resources"]["limits"]["memory"] == "1Gi"  # input untouched


def test_json_merge_replaces_lists_and_deletes_nulls() -> None:
    target = {"spec": {"maxUnavailable": 1, "triggers": [{"a": "1"}], "keep": True}}
    assert rm.json_merge(target, {"spec": {"maxUnavailable": None, "minAvailable": 1, "triggers": [{"b": "2"}]}}) == {
        "spec": {"minAvailable": 1, "triggers": [{"b": "2"}], "keep": True}
    }


@pytest.mark.parametrize(
    ("image", "parts"),
    [
        ("athena", ("athena", "", "")),
        ("athena:dev", ("athena", ":dev", "")),
        ("reg.local:5000/team/athena:1.2", ("reg.local:5000/team/athena", ":1.2", "")),
        ("reg.local:5000/athena@sha256:abc", ("reg.local:5000/athena", "", "@sha256:abc")),
    ],
)
def test_split_image(image: str, parts: tuple[str, str, str]) -> None:
    assert rm._split_image(image) == parts


def test_render_applies_bases_patches_namespace_labels_and_images(tmp_path: Path) -> None:
    write(
        tmp_path / "base" / "kustomization.yaml", "namespace: one\ncommonLabels:\n  team: t\nresources:\n  - all.yaml\n"
    )
    write(
        tmp_path / "base" / "all.yaml",
        """
apiVersion: v1
kind: Namespace
metadata: {name: one}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {A: "1", B: "2"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - {name: web, image: "athena", resources: {limits: {cpu: "1"}}}
        - {name: side, image: "other:1"}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {selector: {app: web}, ports: [{port: 80}]}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec: {maxUnavailable: 1, selector: {matchLabels: {app: web}}}
---
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: web}
spec: {scaleTargetRef: {name: web}, minReplicaCount: 1, triggers: [{type: redis, metadata: {listName: q}}]}
""",
    )
    write(
        tmp_path / "overlay" / "kustomization.yaml",
        """
bases: [../base]
namespace: two
patchesStrategicMerge: [patch.yaml]
images:
  - {name: athena, newName: reg/athena, newTag: "1.0"}
""",
    )
    write(
        tmp_path / "overlay" / "patch.yaml",
        """
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {B: "3"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers:
        - {name: web, resources: {limits: {memory: 1Gi}}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec: {minAvailable: 1, maxUnavailable: null}
---
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: web}
$patch: delete
""",
    )
    docs = rm.render(tmp_path / "overlay")
    assert [(d["kind"], d["metadata"]["name"]) for d in docs] == [
        ("Namespace", "one"),
        ("ConfigMap", "cfg"),
        ("Service", "web"),
        ("Deployment", "web"),
        ("PodDisruptionBudget", "web"),
    ]
    namespace, cfg, service, deployment, pdb = docs
    assert "namespace" not in namespace["metadata"] and namespace["metadata"]["labels"] == {"team": "t"}
    assert {d["metadata"]["namespace"] for d in docs[1:]} == {"two"}
    assert cfg["data"] == {"A": "1", "B": "3"}
    assert service["spec"]["selector"] == {"app": "web", "team": "t"}
    assert deployment["spec"]["selector"]["matchLabels"] == {"app": "web", "team": "t"}
    assert deployment["spec"]["template"]["metadata"]["labels"] == {"app": "web", "team": "t"}
    web, side = deployment["spec"]["template"]["spec"]["containers"]
    assert web["image"] == "reg/athena:1.0" and side["image"] == "other:1"
    assert web["resources"]["limits"] == {"cpu": "1", "memory": "1Gi"}
    assert pdb["spec"] == {"minAvailable": 1, "selector": {"matchLabels": {"app": "web", "team": "t"}}}


@pytest.mark.parametrize(
    ("kustomization", "patch", "message"),
    [
        ("resources: [a.yaml]\npatches: []\n", None, "unsupported fields"),
        (
            "resources: [a.yaml]\npatchesStrategicMerge: [p.yaml]\n",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: nope}\n",
            "matches 0",
        ),
        ("resources: [missing.yaml]\n", None, "not found"),
    ],
)
def test_render_refuses_what_it_does_not_understand(
    tmp_path: Path, kustomization: str, patch: str | None, message: str
) -> None:
    write(tmp_path / "kustomization.yaml", kustomization)
    write(tmp_path / "a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
    if patch:
        write(tmp_path / "p.yaml", patch)
    with pytest.raises(rm.RenderError, match=message):
        rm.render(tmp_path)


def test_render_cli_prints_multi_document_yaml() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "render_manifests.py"), str(OVERLAYS["prod"])],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    assert list(yaml.safe_load_all(out)) == list(rendered("prod"))


def _kubectl() -> str | None:
    return os.environ.get("ATHENA_KUBECTL") or shutil.which("kubectl")


def _kustomize_major(kubectl: str) -> int:
    out = subprocess.run(
        [kubectl, "version", "--client", "-o", "json"], capture_output=True, text=True, timeout=60
    ).stdout
    try:
        version = json.loads(out).get("kustomizeVersion", "v2")
    except json.JSONDecodeError:
        return 2
    match = re.match(r"v(\d+)", version)
    return int(match.group(1)) if match else 2


@pytest.mark.skipif(_kubectl() is None, reason="no kubectl here: the renderer is checked by the tests above")
@pytest.mark.parametrize("target", sorted(TARGETS))
def test_renderer_matches_kubectl_kustomize(target: str) -> None:
    """Optional cross-check against `kubectl kustomize` (any kubectl on PATH, or ATHENA_KUBECTL)."""
    kubectl = _kubectl()
    assert kubectl is not None
    if target == "no-keda" and _kustomize_major(kubectl) < 4:
        pytest.skip(
            "kustomize v2/v3 cannot `$patch: delete` a custom resource; the alternative needs a current kubectl"
        )
    result = subprocess.run([kubectl, "kustomize", str(TARGETS[target])], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert list(yaml.safe_load_all(result.stdout)) == list(rendered(target))
