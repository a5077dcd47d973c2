#!/usr/bin/python3
"""k8s_check.py DIR — offline check of deploy/k8s (used by test_deploy.sh; kubectl --dry-run=client needs a server).

Two layers:
  1. shape: every document of every *.yaml is a known kind with its apiVersion, and every field on the paths the
     manifests use is a real Kubernetes field of that object (an allowlist per object type, from the API
     reference), with the right type (int, string, list, mapping). A misspelt field is an error, not a no-op.
  2. values that matter: the orchestrator listens on the port its Service targets and its probes ask, on
     0.0.0.0 (a pod's loopback is unreachable), keeps --db on its volume and reads --token-file from the
     Secret; workers reach that Service and port, read the worker token (and only it) from the Secret, have one
     GPU each and --devices 0, checkpoint to a ReadWriteMany volume, run the program as PID 1 (no command: the
     image's exec-form entrypoint gets SIGTERM) and get long enough to checkpoint before SIGKILL.
Prints one line per object checked; exit 1 with every problem listed.
"""
import glob
import os
import sys

import yaml

errors = []


def err(where, msg):
    errors.append(f"{where}: {msg}")


# ---- 1. shape --------------------------------------------------------------------------------------------
KINDS = {"Service": "v1", "StatefulSet": "apps/v1", "Deployment": "apps/v1", "PersistentVolumeClaim": "v1",
         "Secret": "v1", "Job": "batch/v1", "Kustomization": "kustomize.config.k8s.io/v1beta1"}

# field -> type or nested schema; "*" means a free-form map of strings (labels, annotations).
S, I, B, ANY = "str", "int", "bool", "any"
LABELS = {"*": S}
META = {"name": S, "namespace": S, "labels": LABELS, "annotations": LABELS}
SELECTOR = {"matchLabels": LABELS, "matchExpressions": [ANY]}
QUANTITIES = {"*": ANY}
RESOURCES = {"requests": QUANTITIES, "limits": QUANTITIES}
HTTPGET = {"path": S, "port": ANY, "host": S, "scheme": S, "httpHeaders": [ANY]}
PROBE = {"httpGet": HTTPGET, "exec": {"command": [S]}, "tcpSocket": {"port": ANY}, "grpc": ANY,
         "initialDelaySeconds": I, "periodSeconds": I, "timeoutSeconds": I, "failureThreshold": I,
         "successThreshold": I, "terminationGracePeriodSeconds": I}
CONTAINER_SC = {"allowPrivilegeEscalation": B, "readOnlyRootFilesystem": B, "runAsNonRoot": B, "runAsUser": I,
                "runAsGroup": I, "privileged": B, "capabilities": {"drop": [S], "add": [S]},
                "seccompProfile": {"type": S, "localhostProfile": S}}
ENV = {"name": S, "value": S, "valueFrom": {"fieldRef": {"fieldPath": S, "apiVersion": S},
                                            "secretKeyRef": {"name": S, "key": S, "optional": B},
                                            "configMapKeyRef": {"name": S, "key": S, "optional": B},
                                            "resourceFieldRef": ANY}}
CONTAINER = {"name": S, "image": S, "imagePullPolicy": S, "command": [S], "args": [S], "workingDir": S,
             "env": [ENV], "envFrom": [ANY], "ports": [{"name": S, "containerPort": I, "protocol": S, "hostPort": I}],
             "resources": RESOURCES, "volumeMounts": [{"name": S, "mountPath": S, "readOnly": B, "subPath": S}],
             "livenessProbe": PROBE, "readinessProbe": PROBE, "startupProbe": PROBE, "lifecycle": ANY,
             "securityContext": CONTAINER_SC, "terminationMessagePath": S, "terminationMessagePolicy": S,
             "stdin": B, "tty": B}
VOLUME = {"name": S, "emptyDir": {"medium": S, "sizeLimit": ANY},
          "secret": {"secretName": S, "defaultMode": I, "optional": B, "items": [{"key": S, "path": S, "mode": I}]},
          "persistentVolumeClaim": {"claimName": S, "readOnly": B}, "configMap": ANY, "hostPath": ANY, "nfs": ANY}
POD_SC = {"runAsNonRoot": B, "runAsUser": I, "runAsGroup": I, "fsGroup": I, "supplementalGroups": [I],
          "seccompProfile": {"type": S, "localhostProfile": S}, "fsGroupChangePolicy": S}
POD_SPEC = {"containers": [CONTAINER], "initContainers": [CONTAINER], "volumes": [VOLUME],
            "terminationGracePeriodSeconds": I, "securityContext": POD_SC, "restartPolicy": S,
            "serviceAccountName": S, "nodeSelector": LABELS, "tolerations": [ANY], "affinity": ANY,
            "priorityClassName": S, "runtimeClassName": S, "imagePullSecrets": [ANY], "hostname": S, "subdomain": S,
            "automountServiceAccountToken": B, "enableServiceLinks": B, "dnsPolicy": S,
            "topologySpreadConstraints": [ANY]}
TEMPLATE = {"metadata": META, "spec": POD_SPEC}
PVC_SPEC = {"accessModes": [S], "resources": RESOURCES, "storageClassName": S, "volumeMode": S,
            "selector": SELECTOR, "volumeName": S}
SCHEMAS = {
    "Service": {"spec": {"type": S, "selector": LABELS, "clusterIP": S, "sessionAffinity": S,
                         "ports": [{"name": S, "port": I, "targetPort": ANY, "protocol": S, "nodePort": I}]}},
    "StatefulSet": {"spec": {"serviceName": S, "replicas": I, "selector": SELECTOR, "template": TEMPLATE,
                             "volumeClaimTemplates": [{"metadata": META, "spec": PVC_SPEC}],
                             "podManagementPolicy": S, "updateStrategy": ANY,
                             "persistentVolumeClaimRetentionPolicy": ANY, "minReadySeconds": I}},
    "Deployment": {"spec": {"replicas": I, "selector": SELECTOR, "template": TEMPLATE, "minReadySeconds": I,
                            "strategy": {"type": S, "rollingUpdate": {"maxUnavailable": ANY, "maxSurge": ANY}},
                            "revisionHistoryLimit": I, "progressDeadlineSeconds": I, "paused": B}},
    "PersistentVolumeClaim": {"spec": PVC_SPEC},
    "Secret": {"type": S, "data": LABELS, "stringData": LABELS, "immutable": B},
    "Kustomization": {"resources": [S], "namespace": S, "images": [ANY], "commonLabels": LABELS},
}


def check_shape(where, value, schema):
    if schema == ANY:
        return
    if isinstance(schema, list):
        if not isinstance(value, list):
            return err(where, f"must be a list, got {type(value).__name__}")
        for i, v in enumerate(value):
            check_shape(f"{where}[{i}]", v, schema[0])
        return
    if isinstance(schema, dict):
        if not isinstance(value, dict):
            return err(where, f"must be a mapping, got {type(value).__name__}")
        for k, v in value.items():
            sub = schema.get(k, schema.get("*"))
            if sub is None:
                err(where, f"unknown field '{k}' (known: {', '.join(sorted(schema))})")
            else:
                check_shape(f"{where}.{k}", v, sub)
        return
    ok = {S: isinstance(value, str), I: isinstance(value, int) and not isinstance(value, bool),
          B: isinstance(value, bool)}[schema]
    if not ok:
        err(where, f"must be {schema}, got {value!r}")


def load(d):
    docs = []
    files = sorted(glob.glob(os.path.join(d, "*.yaml")))
    if not files:
        err(d, "no *.yaml files")
    for f in files:
        try:
            for i, doc in enumerate(yaml.safe_load_all(open(f))):
                if doc is not None:
                    docs.append((f"{os.path.basename(f)}#{i}", doc))
        except yaml.YAMLError as e:
            err(f, f"not YAML: {e}")
    return docs


# ---- 2. values ----------------------------------------------------------------------------------------------
def flag(args, name):
    """The value after `name` in an args list (None when absent)."""
    return args[args.index(name) + 1] if name in args and args.index(name) + 1 < len(args) else None


def under(path, mounts):
    """The volumeMount whose mountPath holds path."""
    for m in mounts:
        mp = m["mountPath"].rstrip("/")
        if path == mp or path.startswith(mp + "/"):
            return m
    return None


def pod_of(obj):
    return obj["spec"]["template"]["spec"]


def check_pod_common(where, obj, volumes_extra=()):
    spec = pod_of(obj)
    sel = obj["spec"]["selector"]["matchLabels"]
    labels = obj["spec"]["template"]["metadata"].get("labels", {})
    for k, v in sel.items():
        if labels.get(k) != v:
            err(where, f"selector {k}={v} does not match the pod template's labels {labels}")
    names = {v["name"] for v in spec.get("volumes", [])} | set(volumes_extra)
    for c in spec["containers"]:
        for m in c.get("volumeMounts", []):
            if m["name"] not in names:
                err(where, f"container {c['name']} mounts volume '{m['name']}', which is not defined")
        if "command" in c:
            err(where, f"container {c['name']} sets command: the image's exec-form entrypoint must stay PID 1 "
                       "so that SIGTERM reaches the program")
    return spec


def main(d):
    docs = load(d)
    by_kind = {}
    for where, doc in docs:
        kind = doc.get("kind")
        if kind not in KINDS:
            err(where, f"unknown kind {kind!r}")
            continue
        if doc.get("apiVersion") != KINDS[kind]:
            err(where, f"{kind} needs apiVersion {KINDS[kind]}, got {doc.get('apiVersion')!r}")
        top = {"apiVersion": S, "kind": S, "metadata": META, **SCHEMAS[kind]}
        check_shape(where, doc, top)
        if kind != "Kustomization" and not doc.get("metadata", {}).get("name"):
            err(where, "metadata.name missing")
        by_kind.setdefault(kind, []).append((where, doc))
        print(f"checked {where}: {kind} {doc.get('metadata', {}).get('name', '')}")
    if errors:
        return
    for where, k in by_kind.get("Kustomization", []):
        for r in k.get("resources", []):
            if not os.path.exists(os.path.join(d, r)):
                err(where, f"resource {r} does not exist")

    # the orchestrator
    sts = [(w, o) for w, o in by_kind.get("StatefulSet", [])]
    if len(sts) != 1:
        return err(d, f"expected one StatefulSet (the orchestrator), found {len(sts)}")
    w_sts, o = sts[0]
    if o["spec"].get("replicas") != 1:
        err(w_sts, f"replicas must be 1 (one SQLite writer), got {o['spec'].get('replicas')}")
    claims = {t["metadata"]["name"]: t for t in o["spec"].get("volumeClaimTemplates", [])}
    spec = check_pod_common(w_sts, o, claims)
    c = spec["containers"][0]
    args, mounts = c.get("args", []), c.get("volumeMounts", [])
    if not args or args[0] != "serve":
        err(w_sts, f"args must start with serve, got {args[:1]}")
    listen = flag(args, "--listen") or ""
    host, _, port = listen.rpartition(":")
    if host != "0.0.0.0":
        err(w_sts, f"--listen {listen}: must be 0.0.0.0:PORT in a pod (its loopback is not reachable)")
    ports = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}
    if not port.isdigit() or int(port) not in ports.values():
        err(w_sts, f"--listen port {port} is not a containerPort ({ports})")
    for probe in ("livenessProbe", "readinessProbe"):
        hg = c.get(probe, {}).get("httpGet")
        if not hg or hg.get("path") != "/healthz":
            err(w_sts, f"{probe} must be httpGet /healthz, got {c.get(probe)}")
        elif ports.get(hg["port"], hg["port"]) != int(port or 0):
            err(w_sts, f"{probe} port {hg['port']} is not the listening port {port}")
    db = flag(args, "--db") or ""
    m = under(db, mounts)
    if not m or m["name"] not in claims:
        err(w_sts, f"--db {db} is not on the StatefulSet's volume (volumeClaimTemplates {list(claims)})")
    tok = flag(args, "--token-file") or ""
    m = under(tok, mounts)
    vols = {v["name"]: v for v in spec.get("volumes", [])}
    secret_name = None
    if not m or "secret" not in vols.get(m["name"], {}):
        err(w_sts, f"--token-file {tok} is not read from a Secret volume")
    else:
        sv = vols[m["name"]]["secret"]
        secret_name = sv["secretName"]
        keys = {i["path"]: i["key"] for i in sv.get("items", [])}
        rel = tok[len(m["mountPath"].rstrip("/")) + 1:]
        if keys and keys.get(rel) != "tokens":
            err(w_sts, f"--token-file {tok}: the Secret's key mounted there is {keys.get(rel)!r}, not 'tokens'")
    if (spec.get("terminationGracePeriodSeconds") or 30) < 10:
        err(w_sts, "terminationGracePeriodSeconds < 10: no time for a graceful stop")

    # its Service
    pod_labels = o["spec"]["template"]["metadata"]["labels"]
    svc_port = None
    svc_name = None
    for w, s in by_kind.get("Service", []):
        if all(pod_labels.get(k) == v for k, v in s["spec"].get("selector", {}).items()):
            for p in s["spec"]["ports"]:
                tp = p.get("targetPort", p["port"])
                if ports.get(tp, tp) != int(port or 0):
                    err(w, f"targetPort {tp} is not the orchestrator's port {port}")
            if s["spec"].get("clusterIP") != "None":
                svc_name, svc_port = s["metadata"]["name"], s["spec"]["ports"][0]["port"]
        else:
            err(w, f"selector {s['spec'].get('selector')} selects no orchestrator pod")
    if o["spec"]["serviceName"] not in {s["metadata"]["name"] for _, s in by_kind.get("Service", [])}:
        err(w_sts, f"serviceName {o['spec']['serviceName']} is not a Service here")
    if not svc_name:
        err(d, "no ClusterIP Service for the orchestrator")

    # the workers
    workers = by_kind.get("Deployment", []) + by_kind.get("Job", [])
    if not workers:
        err(d, "no worker Deployment or Job")
    pvcs = {p["metadata"]["name"]: p for _, p in by_kind.get("PersistentVolumeClaim", [])}
    for w, o in workers:
        spec = check_pod_common(w, o)
        c = spec["containers"][0]
        args, mounts = c.get("args", []), c.get("volumeMounts", [])
        vols = {v["name"]: v for v in spec.get("volumes", [])}
        server = flag(args, "--server")
        if server != f"http://{svc_name}:{svc_port}":
            err(w, f"--server {server}: the orchestrator's Service is http://{svc_name}:{svc_port}")
        gpus = c.get("resources", {}).get("limits", {}).get("nvidia.com/gpu")
        if gpus != 1:
            err(w, f"resources.limits nvidia.com/gpu must be 1, got {gpus!r}")
        if flag(args, "--devices") != "0":
            err(w, f"--devices {flag(args, '--devices')}: the pod sees its one GPU as device 0")
        grace = spec.get("terminationGracePeriodSeconds") or 30
        if grace < 120:
            err(w, f"terminationGracePeriodSeconds {grace} < 120: too short to finish a step and checkpoint")
        tok = flag(args, "--token-file") or ""
        m = under(tok, mounts)
        if not m or "secret" not in vols.get(m["name"], {}):
            err(w, f"--token-file {tok} is not read from a Secret volume")
        else:
            sv = vols[m["name"]]["secret"]
            if secret_name and sv["secretName"] != secret_name:
                err(w, f"token Secret {sv['secretName']} is not the orchestrator's {secret_name}")
            items = [i["key"] for i in sv.get("items", [])]
            if items != ["worker-token"]:
                err(w, f"workers must mount only the Secret's worker-token key (not the admin token), got {items}")
        ck = flag(args, "--checkpoint-dir") or ""
        m = under(ck, mounts)
        claim = vols.get(m["name"], {}).get("persistentVolumeClaim", {}).get("claimName") if m else None
        if not claim or claim not in pvcs or "ReadWriteMany" not in pvcs[claim]["spec"].get("accessModes", []):
            err(w, f"--checkpoint-dir {ck} must be on a ReadWriteMany claim defined here (any pod resumes a job)")
        for name in ("--work-dir", "--data-root"):
            p = flag(args, name)
            if p and not under(p, mounts):
                err(w, f"{name} {p} is on no volume (the root filesystem is read-only)")
        for a in args:
            if a.startswith("$(") and a[2:-1] not in {e["name"] for e in c.get("env", [])}:
                err(w, f"argument {a} names no env variable of the container")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: k8s_check.py DIR")
    main(sys.argv[1])
    if errors:
        print("\n".join(errors), file=sys.stderr)
        sys.exit(1)
    print("deploy/k8s: ok")
