#!/usr/bin/python3
"""Renders a kustomization directory, for the part of kustomize that deploy/kubernetes uses.

    kustomize_render.py DIR            print the rendering of DIR (like `kubectl kustomize DIR`)
    kustomize_render.py DIR -o FILE    write it to FILE, with a header naming DIR

deploy/kubernetes/colltest-cuda.yaml and colltest-rocm.yaml are this script's renderings of
overlays/cuda and overlays/rocm; kubernetes_test.py fails when they differ from a fresh one, so
they cannot drift from the kustomizations. The subset:

  resources       files (one or more YAML documents) and directories (kustomizations, rendered
                  first)
  namespace       sets metadata.namespace of every namespaced object
  labels          `pairs` added to every object's metadata.labels (includeSelectors and
                  includeTemplates are not supported)
  images          name -> newName / newTag, in every containers and initContainers list
  patches         `path` or `patch`: a strategic-merge patch, matched to an object by kind and
                  metadata.name. Maps merge; a null deletes the key; lists of containers,
                  initContainers, volumes, env and imagePullSecrets merge by name, volumeMounts
                  by mountPath, ports by containerPort (Service ports by port); an item holding
                  `$patch: delete` removes its match; any other list is replaced. A merged list
                  is ordered as kustomize orders it: the patch's items first, in its order, then
                  the base's other items.

Anything else in a kustomization is an error, so that a field this script would silently ignore
cannot make the committed files differ from what kustomize renders. Objects come out in
kustomize's default ("legacy") order and with sorted keys.
"""

import argparse
import copy
import os
import sys

import yaml

SUPPORTED_FIELDS = {"apiVersion", "kind", "namespace", "labels", "resources", "images", "patches"}

# Kinds that have no namespace (of those a deployment may hold).
CLUSTER_SCOPED = {
    "Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition",
    "PersistentVolume", "PriorityClass", "RuntimeClass", "StorageClass", "Node",
    "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
}

# kustomize's legacy order: these kinds first, in this order; the last ones last; the rest in
# between, by group_version_kind, then namespace and name.
ORDER_FIRST = [
    "Namespace", "ResourceQuota", "StorageClass", "CustomResourceDefinition", "ServiceAccount",
    "PodSecurityPolicy", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding", "ConfigMap",
    "Secret", "Endpoints", "Service", "LimitRange", "PriorityClass", "PersistentVolume",
    "PersistentVolumeClaim", "Deployment", "StatefulSet", "CronJob", "PodDisruptionBudget",
]
ORDER_LAST = ["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"]

# Strategic-merge keys of the lists that merge instead of being replaced.
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "env": "name",
    "imagePullSecrets": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
}


class RenderError(Exception):
    pass


def _load_documents(path):
    with open(path, encoding="utf-8") as f:
        return [doc for doc in yaml.safe_load_all(f) if doc is not None]


def _merge_key(field, items):
    if field == "ports":
        sample = [i for i in items if isinstance(i, dict)]
        return "containerPort" if any("containerPort" in i for i in sample) else "port"
    return MERGE_KEYS.get(field)


def strategic_merge(base, patch, field=None):
    """Returns base with patch merged in (neither argument is modified)."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = copy.deepcopy(base)
        for key, value in patch.items():
            if key == "$patch":
                raise RenderError(f"$patch: {value} on a map is not supported")
            if value is None:
                out.pop(key, None)
            elif key in out:
                out[key] = strategic_merge(out[key], value, key)
            else:
                out[key] = _strip_directives(value)
        return out
    if isinstance(base, list) and isinstance(patch, list):
        key = _merge_key(field, base + patch)
        if key is None:
            return _strip_directives(patch)
        server_keys = [b.get(key) for b in base]
        patched, deleted = [], set()
        for item in patch:
            if not isinstance(item, dict) or key not in item:
                raise RenderError(f"an item of the patch's {field} list has no {key}: {item}")
            index = server_keys.index(item[key]) if item[key] in server_keys else None
            if item.get("$patch") == "delete":
                deleted.add(item[key])
                continue
            if "$patch" in item:
                raise RenderError(f"$patch: {item['$patch']} in a list is not supported")
            if index is None:
                patched.append(_strip_directives(item))
            else:
                patched.append(strategic_merge(base[index], item, field))
        touched = {p[key] for p in patched} | deleted
        server_only = [copy.deepcopy(b) for b in base if b.get(key) not in touched]
        # kustomize's order (kyaml's merge, not the API server's strategic merge): the patch's
        # items in the patch's order, then the items only the base has, in the base's order.
        # Base [A, B, C] patched with [C, D] is [C, D, A, B].
        return patched + server_only
    return _strip_directives(patch)


def _strip_directives(value):
    if isinstance(value, dict):
        if "$patch" in value:
            raise RenderError(f"$patch where nothing matches: {value}")
        return {k: _strip_directives(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_strip_directives(v) for v in value]
    return value


def _apply_images(node, images):
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("containers", "initContainers") and isinstance(value, list):
                for container in value:
                    if isinstance(container, dict) and "image" in container:
                        container["image"] = _new_image(container["image"], images)
            else:
                _apply_images(value, images)
    elif isinstance(node, list):
        for value in node:
            _apply_images(value, images)


def _split_image(image):
    if "@" in image:
        raise RenderError(f"image digests are not supported: {image}")
    slash = image.rfind("/")
    colon = image.rfind(":")
    if colon > slash:
        return image[:colon], image[colon + 1:]
    return image, None


def _new_image(image, images):
    name, tag = _split_image(image)
    for entry in images:
        if entry.get("name") != name:
            continue
        unknown = set(entry) - {"name", "newName", "newTag"}
        if unknown:
            raise RenderError(f"images: {sorted(unknown)} not supported")
        name = entry.get("newName", name)
        tag = str(entry["newTag"]) if "newTag" in entry else tag
        break
    return f"{name}:{tag}" if tag else name


def _object_id(obj):
    return (obj.get("kind"), (obj.get("metadata") or {}).get("name"))


def _sort_key(obj):
    kind = obj.get("kind", "")
    if kind in ORDER_FIRST:
        order = ORDER_FIRST.index(kind) - len(ORDER_FIRST)
    elif kind in ORDER_LAST:
        order = 1 + ORDER_LAST.index(kind)
    else:
        order = 0
    api = obj.get("apiVersion", "")
    group, _, version = api.rpartition("/")
    gvk = f"{group or '~G'}_{version}_{kind}"
    meta = obj.get("metadata") or {}
    return (order, gvk, meta.get("namespace", ""), meta.get("name", ""))


def render(directory):
    """The objects of the kustomization in `directory`, transformed and in kustomize's order."""
    path = os.path.join(directory, "kustomization.yaml")
    with open(path, encoding="utf-8") as f:
        kustomization = yaml.safe_load(f) or {}
    unknown = set(kustomization) - SUPPORTED_FIELDS
    if unknown:
        raise RenderError(f"{path}: fields this renderer does not support: {sorted(unknown)}")

    objects = []
    for resource in kustomization.get("resources", []):
        target = os.path.normpath(os.path.join(directory, resource))
        if os.path.isdir(target):
            objects.extend(render(target))
        else:
            objects.extend(_load_documents(target))

    for entry in kustomization.get("patches", []):
        unknown = set(entry) - {"path", "patch"}
        if unknown:
            raise RenderError(f"{path}: patches: {sorted(unknown)} not supported")
        if "path" in entry:
            patch_docs = _load_documents(os.path.join(directory, entry["path"]))
        else:
            patch_docs = [d for d in yaml.safe_load_all(entry["patch"]) if d is not None]
        for patch in patch_docs:
            matches = [i for i, o in enumerate(objects) if _object_id(o) == _object_id(patch)]
            if len(matches) != 1:
                raise RenderError(
                    f"{path}: patch for {_object_id(patch)} matches {len(matches)} objects")
            body = {k: v for k, v in patch.items() if k not in ("apiVersion", "kind")}
            body["metadata"] = {k: v for k, v in (patch.get("metadata") or {}).items()
                                if k != "name"}
            if not body["metadata"]:
                del body["metadata"]
            objects[matches[0]] = strategic_merge(objects[matches[0]], body)

    namespace = kustomization.get("namespace")
    if namespace:
        for obj in objects:
            if obj.get("kind") not in CLUSTER_SCOPED:
                obj.setdefault("metadata", {})["namespace"] = namespace

    for entry in kustomization.get("labels", []):
        unknown = set(entry) - {"pairs"}
        if unknown:
            raise RenderError(f"{path}: labels: {sorted(unknown)} not supported")
        for obj in objects:
            labels = obj.setdefault("metadata", {}).setdefault("labels", {})
            labels.update({str(k): str(v) for k, v in entry["pairs"].items()})

    images = kustomization.get("images", [])
    if images:
        for obj in objects:
            _apply_images(obj, images)

    ids = [(_object_id(o), (o.get("metadata") or {}).get("namespace")) for o in objects]
    if len(set(ids)) != len(ids):
        raise RenderError(f"{path}: two objects of the same kind, name and namespace")
    return sorted(objects, key=_sort_key)


class _Dumper(yaml.SafeDumper):
    pass


def _str_representer(dumper, value):
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _str_representer)


def to_yaml(objects):
    return "---\n".join(
        yaml.dump(o, Dumper=_Dumper, sort_keys=True, default_flow_style=False, width=100)
        for o in objects)


def header(relative_dir, file_name):
    """The comment that starts a committed rendering of deploy/kubernetes/relative_dir."""
    return (f"# Rendered from deploy/kubernetes/{relative_dir} by tests/deploy/kustomize_render.py\n"
            f"# (the same objects as `kubectl kustomize deploy/kubernetes/{relative_dir}`).\n"
            "# Do not edit: change the kustomization, then render again:\n"
            f"#   tests/deploy/kustomize_render.py deploy/kubernetes/{relative_dir} \\\n"
            f"#       -o deploy/kubernetes/{file_name}\n")


def committed_text(directory, relative_dir, file_name):
    """What deploy/kubernetes/file_name must hold: the header and the rendering."""
    return header(relative_dir, file_name) + "---\n" + to_yaml(render(directory))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dir", help="kustomization directory")
    parser.add_argument("-o", "--out", help="write here, with a header, instead of stdout")
    args = parser.parse_args()
    try:
        text = to_yaml(render(args.dir))
    except (RenderError, OSError, yaml.YAMLError) as e:
        print(f"kustomize_render: {e}", file=sys.stderr)
        return 1
    if args.out is None:
        sys.stdout.write(text)
        return 0
    marker = os.sep + os.path.join("deploy", "kubernetes") + os.sep
    full = os.path.abspath(args.dir) + os.sep
    relative = full[full.index(marker) + len(marker):].rstrip(os.sep) if marker in full else args.dir
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(header(relative, os.path.basename(args.out)) + "---\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
