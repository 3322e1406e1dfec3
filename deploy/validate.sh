#!/usr/bin/env bash
# Validate the kustomize base in deploy/k8s (or the kustomization given).
#
#   1. render it: `kubectl kustomize`, else `kustomize build`, else (neither
#      installed) the files listed under `resources:` in kustomization.yaml,
#      read as they are (no kustomize transforms; RENDER=files forces this);
#   2. built-in kinds -> `kubernetes-validate --strict` (schemas of the
#      Kubernetes version in KUBE_VERSION, default: the package's newest);
#   3. CRD kinds: kubernetes-validate has no schema for them and only WARNs
#      "Couldn't find schema" (exit 0), so they are NOT given to it. The
#      prometheus-operator ServiceMonitor is checked here instead (apiVersion,
#      selector matches the metrics Service, endpoint port exists). Any other
#      kind without a schema is an error, so a typo in an apiVersion or kind
#      cannot pass silently;
#   4. checks of the deployment contract (gRPC probes on 50051, or TCP probes
#      and the TLS files from a Secret when TAVLI_TLS_CERT is set; grace period
#      above the server's drain, hardened securityContext, ports); for a
#      kustomization of Jobs only (deploy/k8s/analyze and its merge), the Job
#      contract instead (the same hardened securityContext and resources,
#      `tavli-engine analyze`, and an Indexed Job's `--shard .../COUNT` equal to
#      its completions).
#
#   deploy/validate.sh [DIR]   DIR: a kustomization (an overlay such as
#                              deploy/overlays/mtls needs kubectl or kustomize to
#                              render it); without DIR: deploy/k8s, then
#                              deploy/k8s/analyze and deploy/k8s/analyze/merge
#
# Needs python3 with PyYAML (a dependency of yamllint and kubernetes-validate)
# and kubernetes-validate on PATH; deploy/ci.sh installs them.
set -Eeuo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ $# -eq 0 ]; then
    for dir in deploy/k8s deploy/k8s/analyze deploy/k8s/analyze/merge; do
        echo "validate: $dir"
        bash "${BASH_SOURCE[0]}" "$ROOT/$dir"
    done
    exit 0
fi
BASE=$1
WORK=$(mktemp -d /tmp/tavli-validate.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

if [ "${RENDER:-auto}" = files ]; then
    : # forced: validate the listed files as they are
elif command -v kubectl >/dev/null 2>&1 && kubectl kustomize "$BASE" >"$WORK/rendered.yaml" 2>"$WORK/kustomize.err"; then
    echo "validate: rendered with kubectl kustomize"
elif command -v kustomize >/dev/null 2>&1 && kustomize build "$BASE" >"$WORK/rendered.yaml" 2>"$WORK/kustomize.err"; then
    echo "validate: rendered with kustomize build"
fi
if [ ! -s "$WORK/rendered.yaml" ]; then
    [ -s "$WORK/kustomize.err" ] && { echo "validate: kustomize failed:" >&2; cat "$WORK/kustomize.err" >&2; exit 1; }
    echo "validate: no kubectl/kustomize; validating the files listed in kustomization.yaml"
    python3 - "$BASE" >"$WORK/rendered.yaml" <<'EOF'
import sys, pathlib, yaml
base = pathlib.Path(sys.argv[1])
k = yaml.safe_load((base / "kustomization.yaml").read_text())
for res in k.get("resources", []):
    p = base / res
    if not p.is_file():
        sys.exit(f"resource {res} is not a file (directories need kustomize)")
    print("---")
    print(p.read_text())
EOF
fi

python3 - "$WORK" <<'EOF'
import sys, pathlib, yaml
work = pathlib.Path(sys.argv[1])
docs = [d for d in yaml.safe_load_all((work / "rendered.yaml").read_text()) if d]
errors = []
def err(msg):
    errors.append(msg)

builtin, crds = [], []
for d in docs:
    group = d.get("apiVersion", "").split("/")[0] if "/" in d.get("apiVersion", "") else ""
    (crds if group == "monitoring.coreos.com" else builtin).append(d)
(work / "builtin.yaml").write_text(yaml.safe_dump_all(builtin, sort_keys=False))

by_kind = {}
for d in docs:
    by_kind.setdefault(d.get("kind"), []).append(d)

# A kustomization of Jobs only (deploy/k8s/analyze): the Job contract below.
jobs_only = "Job" in by_kind and "Deployment" not in by_kind
for kind in () if jobs_only else ("Deployment", "Service", "HorizontalPodAutoscaler",
                                  "PodDisruptionBudget", "NetworkPolicy", "ServiceMonitor"):
    if kind not in by_kind:
        err(f"missing {kind}")

def hardened(c, ps, what):
    """The securityContext and resources every tavli-engine container has."""
    sc = c.get("securityContext", {})
    if sc.get("allowPrivilegeEscalation") is not False:
        err(f"{what}: allowPrivilegeEscalation must be false")
    if sc.get("readOnlyRootFilesystem") is not True:
        err(f"{what}: readOnlyRootFilesystem must be true")
    if "ALL" not in sc.get("capabilities", {}).get("drop", []):
        err(f"{what}: capabilities must drop ALL")
    if not (sc.get("runAsNonRoot") or ps.get("securityContext", {}).get("runAsNonRoot")):
        err(f"{what}: runAsNonRoot must be true")
    res = c.get("resources", {})
    if not res.get("requests", {}).get("cpu") or not res.get("limits", {}).get("memory"):
        err(f"{what}: resources need cpu requests (for the HPA) and memory limits")

services = by_kind.get("Service", [])
headless = [s for s in services if s["spec"].get("clusterIP") == "None"]
clusterip = [s for s in services if s["spec"].get("clusterIP") != "None"]
if not headless and not jobs_only:
    err("no headless Service (clusterIP: None) for client-side load balancing")
for s in services:
    for p in s["spec"].get("ports", []):
        if p.get("name") == "grpc" and p.get("appProtocol") != "grpc":
            err(f"Service {s['metadata']['name']}: grpc port without appProtocol: grpc")

# ServiceMonitor (CRD): structural checks in place of a schema.
SM_SPEC = {"selector", "endpoints", "namespaceSelector", "jobLabel", "targetLabels",
           "podTargetLabels", "sampleLimit", "targetLimit", "attachMetadata"}
SM_EP = {"port", "targetPort", "path", "scheme", "interval", "scrapeTimeout", "honorLabels",
         "honorTimestamps", "relabelings", "metricRelabelings", "params", "tlsConfig",
         "bearerTokenSecret", "basicAuth", "authorization", "followRedirects", "enableHttp2"}
for sm in crds:
    name = sm.get("metadata", {}).get("name")
    if sm.get("apiVersion") != "monitoring.coreos.com/v1" or sm.get("kind") != "ServiceMonitor":
        err(f"unhandled CRD {sm.get('apiVersion')} {sm.get('kind')}")
        continue
    spec = sm.get("spec", {})
    if set(spec) - SM_SPEC:
        err(f"ServiceMonitor {name}: unknown spec fields {sorted(set(spec) - SM_SPEC)}")
    sel = spec.get("selector", {}).get("matchLabels", {})
    matched = [s for s in services
               if sel and all(s["metadata"].get("labels", {}).get(k) == v for k, v in sel.items())]
    if len(matched) != 1:
        err(f"ServiceMonitor {name}: selector {sel} matches {len(matched)} Services, want exactly 1")
    eps = spec.get("endpoints") or []
    if not eps:
        err(f"ServiceMonitor {name}: no endpoints")
    for ep in eps:
        if set(ep) - SM_EP:
            err(f"ServiceMonitor {name}: unknown endpoint fields {sorted(set(ep) - SM_EP)}")
        for s in matched:
            if ep.get("port") not in {p.get("name") for p in s["spec"]["ports"]}:
                err(f"ServiceMonitor {name}: port {ep.get('port')!r} not a named port of Service "
                    f"{s['metadata']['name']}")
    print(f"validate: ServiceMonitor/{name} checked (CRD, structural checks)")

# Deployment contract.
for dep in by_kind.get("Deployment", []):
    pod = dep["spec"]["template"]
    ann = pod["metadata"].get("annotations", {})
    if ann.get("prometheus.io/scrape") != "true" or ann.get("prometheus.io/port") != "9090":
        err("pod template lacks prometheus.io/scrape and prometheus.io/port: 9090 annotations")
    ps = pod["spec"]
    grace = ps.get("terminationGracePeriodSeconds", 30)
    for c in ps["containers"]:
        env = {e["name"]: e.get("value") for e in c.get("env", [])}
        drain = int(env.get("TAVLI_DRAIN_SECONDS", "10"))
        pre = c.get("lifecycle", {}).get("preStop", {}).get("sleep", {}).get("seconds", 0)
        if grace <= drain + pre:
            err(f"terminationGracePeriodSeconds {grace} must exceed drain {drain} + preStop {pre}")
        ports = {p["containerPort"] for p in c.get("ports", [])}
        if not {50051, 9090} <= ports:
            err(f"container {c['name']} must expose 50051 and 9090, has {sorted(ports)}")
        if env.get("TAVLI_TLS_CERT"):
            # TLS (deploy/overlays/mtls): the kubelet's gRPC probe speaks plaintext
            # only, so TCP probes; the TLS files must come from a mounted Secret.
            for probe in ("livenessProbe", "readinessProbe"):
                if c.get(probe, {}).get("tcpSocket", {}).get("port") != 50051 or "grpc" in c.get(probe, {}):
                    err(f"{probe} must be a tcpSocket probe on port 50051 under TLS")
            secrets = {v["name"] for v in ps.get("volumes", []) if "secret" in v}
            mounts = [m["mountPath"].rstrip("/") + "/" for m in c.get("volumeMounts", [])
                      if m["name"] in secrets]
            for var in ("TAVLI_TLS_CERT", "TAVLI_TLS_KEY", "TAVLI_TLS_CLIENT_CA"):
                path = env.get(var)
                if path and not any(path.startswith(m) for m in mounts):
                    err(f"{var}={path} is not in a mounted Secret volume")
            if not env.get("TAVLI_TLS_KEY"):
                err("TAVLI_TLS_CERT without TAVLI_TLS_KEY")
        else:
            for probe in ("livenessProbe", "readinessProbe"):
                g = c.get(probe, {}).get("grpc", {})
                if g.get("port") != 50051:
                    err(f"{probe} must be a native grpc probe on port 50051")
        hardened(c, ps, f"container {c['name']}")

# Job contract (deploy/k8s/analyze): `tavli-engine analyze` in a hardened
# container; an Indexed Job shards with --shard .../COUNT, COUNT = completions.
claims = {p["metadata"]["name"] for p in by_kind.get("PersistentVolumeClaim", [])}
for job in by_kind.get("Job", []):
    name, spec = job["metadata"]["name"], job["spec"]
    ps = spec["template"]["spec"]
    if ps.get("restartPolicy") not in ("Never", "OnFailure"):
        err(f"Job {name}: restartPolicy must be Never or OnFailure")
    if ps.get("automountServiceAccountToken") is not False:
        err(f"Job {name}: automountServiceAccountToken must be false")
    volumes = {v["name"]: v for v in ps.get("volumes", [])}
    for v in volumes.values():
        claim = v.get("persistentVolumeClaim", {}).get("claimName")
        if claim and claims and claim not in claims:
            err(f"Job {name}: volume {v['name']} claims {claim!r}, not a PersistentVolumeClaim here")
    for c in ps["containers"]:
        what = f"Job {name} container {c['name']}"
        hardened(c, ps, what)
        if "tavli-engine" not in c.get("image", ""):
            err(f"{what}: image {c.get('image')!r} is not tavli-engine")
        args = [str(a) for a in c.get("args", [])]
        if args[:1] != ["analyze"]:
            err(f"{what}: args must start with analyze, got {args[:1]}")
        for m in c.get("volumeMounts", []):
            if m["name"] not in volumes:
                err(f"{what}: volumeMount {m['name']!r} has no volume")
        if spec.get("completionMode") == "Indexed":
            shard = args[args.index("--shard") + 1] if "--shard" in args[:-1] else ""
            count = shard.rpartition("/")[2]
            if not count.isdigit() or int(count) != spec.get("completions"):
                err(f"{what}: --shard {shard!r}: COUNT must equal completions {spec.get('completions')}")
            if spec.get("parallelism", 1) > spec.get("completions", 1):
                err(f"Job {name}: parallelism above completions")
            if "--output" not in args:
                err(f"{what}: an Indexed Job's shards need --output on a volume")
    print(f"validate: Job/{name} checked (Job contract)")

for h in by_kind.get("HorizontalPodAutoscaler", []):
    if h["apiVersion"] != "autoscaling/v2":
        err("HPA must be autoscaling/v2")
    if not any(m.get("resource", {}).get("name") == "cpu" for m in h["spec"].get("metrics", [])):
        err("HPA must scale on CPU")

np_ports = {p.get("port") for np in by_kind.get("NetworkPolicy", [])
            for rule in np["spec"].get("ingress", []) for p in rule.get("ports", [])}
if not jobs_only and not {50051, 9090} <= np_ports:
    err(f"NetworkPolicy must allow ingress to 50051 and 9090, allows {sorted(np_ports)}")

if errors:
    for e in errors:
        print("validate: ERROR", e, file=sys.stderr)
    sys.exit(1)
print(f"validate: {len(docs)} documents, {len(builtin)} built-in, {len(crds)} CRD; contract checks ok")
EOF

KV_ARGS=(--strict)
[ -n "${KUBE_VERSION:-}" ] && KV_ARGS+=(-k "$KUBE_VERSION")
set +e
kubernetes-validate "${KV_ARGS[@]}" "$WORK/builtin.yaml" >"$WORK/kv.out" 2>&1
rc=$?
set -e
sed "s|$WORK/builtin.yaml|rendered|" "$WORK/kv.out"
if grep -q "Couldn't find schema" "$WORK/kv.out"; then
    echo "validate: ERROR a built-in-looking resource has no schema (typo in apiVersion/kind?)" >&2
    exit 1
fi
[ "$rc" -eq 0 ] || { echo "validate: kubernetes-validate --strict failed (rc=$rc)" >&2; exit 1; }
echo "validate: OK"
