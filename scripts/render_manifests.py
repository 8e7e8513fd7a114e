#!/usr/bin/env python3
"""Render a kustomization directory to multi-document YAML on stdout, without kubectl.

    python scripts/render_manifests.py k8s/overlays/prod > prod.yaml

A deliberately small renderer for the kustomization fields Athena's manifests use, all of which
current kubectl (kustomize v5) understands, and kubectl 1.22 or newer (kustomize v4.1, for ``labels``).
With an older kubectl, render here and apply the output with ``kubectl apply -f``:

- ``resources`` (files, or directories as in current kustomize) and ``bases`` (directories),
  rendered recursively: a base is fully rendered before the overlay's transformers run;
- ``patchesStrategicMerge``: a patch matches a resource by kind and name (and namespace and API
  group when the patch gives them). ``$patch: delete`` removes the resource. Deployment-like
  kinds merge lists the way strategic merge does (containers, env, volumes, ... by their key);
  other kinds get a JSON merge patch (maps merge, lists are replaced, ``null`` deletes a field),
  which is what kustomize does for custom resources and what strategic merge does for the maps
  of ConfigMaps, HPAs and PodDisruptionBudgets;
- ``namespace`` (set on every namespaced resource), ``commonLabels`` (metadata labels, plus
  the selectors and pod template labels kustomize also labels), ``labels`` (``pairs`` on the
  metadata labels; the selectors too with ``includeSelectors: true``, the pod templates with
  ``includeTemplates: true``) and ``images`` (``newName``/``newTag``/``digest``).

Transformers run in kustomize's order: patches, namespace, labels, images. Output is sorted like
kustomize's legacy order (Namespace, ServiceAccount, ConfigMap, Service, Deployment, ...; other
kinds by API group, version and kind), keys sorted, so it can be compared with `kubectl kustomize`
output. Anything else in a kustomization file is an error rather than being silently ignored.
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path
from typing import Any

import yaml

__all__ = ["RenderError", "json_merge", "render", "render_yaml", "strategic_merge"]

Resource = dict[str, Any]

SUPPORTED_FIELDS = {
    "apiVersion",
    "kind",
    "resources",
    "bases",
    "namespace",
    "commonLabels",
    "labels",
    "patchesStrategicMerge",
    "images",
}

CLUSTER_SCOPED = {
    "Namespace",
    "ClusterRole",
    "ClusterRoleBinding",
    "CustomResourceDefinition",
    "PersistentVolume",
    "StorageClass",
    "PriorityClass",
    "APIService",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
    "ClusterTriggerAuthentication",
}

POD_TEMPLATE_KINDS = {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"}

# Strategic-merge list keys of the pod spec fields a patch is likely to touch; other lists are
# replaced, as strategic merge does for lists without a patch strategy.
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
    "imagePullSecrets": "name",
}

# kustomize's legacy output order; kinds not listed come after these, by kind and name.
ORDER_FIRST = [
    "Namespace",
    "ResourceQuota",
    "StorageClass",
    "CustomResourceDefinition",
    "ServiceAccount",
    "PodSecurityPolicy",
    "Role",
    "ClusterRole",
    "RoleBinding",
    "ClusterRoleBinding",
    "ConfigMap",
    "Secret",
    "Endpoints",
    "Service",
    "LimitRange",
    "PriorityClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "Deployment",
    "StatefulSet",
    "CronJob",
    "PodDisruptionBudget",
]
ORDER_LAST = ["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"]


class RenderError(ValueError):
    """The kustomization uses something this renderer does not support, or is inconsistent."""


# --- merging ---------------------------------------------------------------------------------------


def json_merge(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: maps merge recursively, None deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = json_merge(result.get(key), value)
    return result


def strategic_merge(target: Any, patch: Any, field: str | None = None) -> Any:
    """Strategic merge for the pod-spec lists in MERGE_KEYS; otherwise like json_merge."""
    if isinstance(patch, list):
        key = MERGE_KEYS.get(field or "")
        if key is None or not isinstance(target, list):
            return copy.deepcopy(patch)
        result = copy.deepcopy(target)
        for item in patch:
            match = next(
                (i for i, old in enumerate(result) if isinstance(old, dict) and old.get(key) == item.get(key)), None
            )
            if match is None:
                result.append(copy.deepcopy(item))
            else:
                result[match] = strategic_merge(result[match], item)
        return result
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    merged: dict[str, Any] = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$"):
            raise RenderError(f"strategic-merge directive {key!r} is not supported inside a resource")
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = strategic_merge(merged.get(key), value, key)
    return merged


# --- loading ---------------------------------------------------------------------------------------


def _load_docs(path: Path) -> list[Resource]:
    with path.open() as fh:
        docs = [d for d in yaml.safe_load_all(fh) if d is not None]
    for doc in docs:
        if not isinstance(doc, dict) or "kind" not in doc or "metadata" not in doc:
            raise RenderError(f"{path}: every document needs kind and metadata")
    return docs


def _group(api_version: str) -> str:
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


def _matches(resource: Resource, patch: Resource) -> bool:
    meta, pmeta = resource["metadata"], patch["metadata"]
    if resource["kind"] != patch["kind"] or meta.get("name") != pmeta.get("name"):
        return False
    if "namespace" in pmeta and meta.get("namespace") != pmeta["namespace"]:
        return False
    return "apiVersion" not in patch or _group(resource.get("apiVersion", "")) == _group(patch["apiVersion"])


def _apply_patch(resources: list[Resource], patch: Resource, source: Path) -> list[Resource]:
    hits = [i for i, r in enumerate(resources) if _matches(r, patch)]
    if len(hits) != 1:
        raise RenderError(
            f"{source}: patch {patch['kind']}/{patch['metadata'].get('name')} matches {len(hits)} resources"
        )
    index = hits[0]
    directive = patch.get("$patch")
    if directive == "delete":
        return resources[:index] + resources[index + 1 :]
    if directive is not None:
        raise RenderError(f"{source}: $patch: {directive} is not supported")
    body = {k: v for k, v in patch.items() if k not in ("apiVersion", "kind")}
    merge = strategic_merge if patch["kind"] in POD_TEMPLATE_KINDS else json_merge
    resources = list(resources)
    resources[index] = merge(resources[index], body)
    return resources


# --- transformers ----------------------------------------------------------------------------------


def _set_namespace(resources: list[Resource], namespace: str) -> None:
    for r in resources:
        if r["kind"] not in CLUSTER_SCOPED:
            r["metadata"]["namespace"] = namespace


def _add_labels(
    resources: list[Resource], labels: dict[str, str], *, selectors: bool = True, templates: bool = True
) -> None:
    """Labels on every resource's metadata; with `selectors` also on the selectors (and, as kustomize
    does then, the pod templates); with `templates` on the pod templates."""

    def add(obj: dict[str, Any], *path: str) -> None:
        for key in path:
            obj = obj.setdefault(key, {})
        obj.update(labels)

    for r in resources:
        add(r, "metadata", "labels")
        kind = r["kind"]
        if kind in POD_TEMPLATE_KINDS:
            if selectors and kind != "Job":  # a Job's selector is generated by the API server
                add(r, "spec", "selector", "matchLabels")
            if selectors or templates:
                add(r, "spec", "template", "metadata", "labels")
        elif selectors and kind == "Service":
            add(r, "spec", "selector")
        elif selectors and kind == "PodDisruptionBudget":
            add(r, "spec", "selector", "matchLabels")


LABELS_ENTRY_FIELDS = {"pairs", "includeSelectors", "includeTemplates"}


def _apply_labels_field(resources: list[Resource], entries: list[dict[str, Any]], source: Path) -> None:
    """The `labels` field: a list of {pairs, includeSelectors, includeTemplates} (both default false)."""
    for entry in entries:
        unknown = set(entry) - LABELS_ENTRY_FIELDS
        if unknown:
            raise RenderError(f"{source}: unsupported fields {sorted(unknown)} in labels")
        pairs = {k: str(v) for k, v in (entry.get("pairs") or {}).items()}
        _add_labels(
            resources,
            pairs,
            selectors=bool(entry.get("includeSelectors", False)),
            templates=bool(entry.get("includeTemplates", False)),
        )


def _split_image(image: str) -> tuple[str, str, str]:
    """'reg:5000/a/b:tag@sha256:x' -> ('reg:5000/a/b', ':tag', '@sha256:x')."""
    name, _, digest = image.partition("@")
    slash = name.rfind("/")
    colon = name.rfind(":")
    tag = ""
    if colon > slash:
        name, tag = name[:colon], name[colon:]
    return name, tag, "@" + digest if digest else ""


def _set_images(resources: list[Resource], images: list[dict[str, str]]) -> None:
    for r in resources:
        pod = r.get("spec", {}).get("template", {}).get("spec", {})
        for container in pod.get("containers", []) + pod.get("initContainers", []):
            name, tag, digest = _split_image(container.get("image", ""))
            for entry in images:
                if entry.get("name") != name:
                    continue
                if "newName" in entry:
                    name = entry["newName"]
                if "digest" in entry:
                    tag, digest = "", "@" + entry["digest"]
                elif "newTag" in entry:
                    tag, digest = ":" + str(entry["newTag"]), ""
                container["image"] = name + tag + digest
                break


def _sort_key(r: Resource) -> tuple[int, str, str, str, str, str]:
    kind = r["kind"]
    if kind in ORDER_FIRST:
        rank = ORDER_FIRST.index(kind)
    elif kind in ORDER_LAST:
        rank = len(ORDER_FIRST) + 1 + ORDER_LAST.index(kind)
    else:
        rank = len(ORDER_FIRST)
    # Within a rank kustomize compares group_version_kind strings ("~G" for the core group), then ids.
    api_version = r.get("apiVersion", "")
    group, _, version = api_version.rpartition("/")
    meta = r["metadata"]
    return rank, group or "~G", version, kind, meta.get("namespace", ""), meta.get("name", "")


# --- rendering -------------------------------------------------------------------------------------


def render(directory: str | Path) -> list[Resource]:
    """The resources a kustomization directory renders to, in kustomize's legacy order."""
    directory = Path(directory)
    kfile = directory / "kustomization.yaml"
    if not kfile.is_file():
        raise RenderError(f"{directory}: no kustomization.yaml")
    spec = yaml.safe_load(kfile.read_text()) or {}
    unknown = set(spec) - SUPPORTED_FIELDS
    if unknown:
        raise RenderError(f"{kfile}: unsupported fields {sorted(unknown)}")

    resources: list[Resource] = []
    for entry in list(spec.get("bases", [])) + list(spec.get("resources", [])):
        path = directory / entry
        if path.is_dir():
            resources.extend(render(path))
        elif path.is_file():
            resources.extend(_load_docs(path))
        else:
            raise RenderError(f"{kfile}: {entry} not found")
    seen: set[tuple[str, str, str]] = set()
    for r in resources:
        ident = (r["kind"], r["metadata"].get("namespace", ""), r["metadata"].get("name", ""))
        if ident in seen:
            raise RenderError(f"{kfile}: duplicate resource {ident}")
        seen.add(ident)

    for entry in spec.get("patchesStrategicMerge", []):
        for patch in _load_docs(directory / entry):
            resources = _apply_patch(resources, patch, directory / entry)
    if spec.get("namespace"):
        _set_namespace(resources, spec["namespace"])
    if spec.get("commonLabels"):
        _add_labels(resources, {k: str(v) for k, v in spec["commonLabels"].items()})
    if spec.get("labels"):
        _apply_labels_field(resources, spec["labels"], kfile)
    if spec.get("images"):
        _set_images(resources, spec["images"])
    return sorted(resources, key=_sort_key)


def render_yaml(directory: str | Path) -> str:
    return yaml.safe_dump_all(render(directory), sort_keys=True, default_flow_style=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", help="a directory with a kustomization.yaml (e.g. k8s/overlays/prod)")
    args = parser.parse_args(argv)
    try:
        sys.stdout.write(render_yaml(args.directory))
    except RenderError as exc:
        print(f"render_manifests: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
