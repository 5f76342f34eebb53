#!/usr/bin/env python3
"""Offline checks of deploy/ (no cluster, no Docker): the Kustomize overlays render and hang
together, the manifests' flags and probes are the real binary's, and the container image's
package list covers what the binary loads.

    check_deploy.py --mogserve BUILD/mogserve --model-dir models/ssd_mobilenetv1 --root .

1. `kubectl kustomize` renders deploy/k8s/overlays/{cpu,gpu}; in each: every selector matches
   the pod template's labels, named ports exist, probes use container ports, the HPA targets the
   Deployment, grace period >= --shutdown-delay + --drain-timeout + 5, the security context is
   locked down, CPU requests = limits; the GPU overlay asks for one GPU and runs --device cuda.
2. The CPU Deployment's args start the real mogserve (ports moved to free ones): it gets ready,
   every probe path answers 200 on the metrics port, /metrics carries the HPA's metric, and
   SIGTERM ends it (exit 0) within the grace period.
3. The KServe predictor's and the Dockerfile's flags are flags of `mogserve serve`; the
   Dockerfile runs as 10001, exec-form ENTRYPOINT, HEALTHCHECK through `mogserve probe`; its
   CMD, run as uid/gid 10001 (setpriv, when this runs as root) on a read-only copy of the model
   named by its ENV, gets ready and answers its HEALTHCHECK's probe.
4. Every library `ldd mogserve` resolves belongs (dpkg -S) to the dependency closure of
   deploy/docker/runtime-packages.txt (apt-cache depends --recurse).
5. deploy/nginx/mogserve.conf.in renders and passes `nginx -t`; every YAML file of deploy/ passes
   `yamllint -s` (deploy/.yamllint); the live /metrics passes `promtool check metrics` and the
   prometheus-adapter query, its placeholders filled, parses as a rule (`promtool check rules`).
   Each tool is skipped, saying so, where it is not installed (scripts/setup.sh installs them).
6. The Dockerfile passes `dockerfile-utils lint` and `dockerfilelint`, and every rendered manifest
   type-checks with `tsc --strict` against kubernetes-types and the Prometheus operator's models
   (an object literal with a misspelt or misplaced field is an excess-property error), with the
   pinned npm tools of tests/deploy/lint (package-lock.json; setup.sh runs npm ci there).
Exit 0: all hold; 1: a failure (listed); 77: kubectl missing (skipped).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from mogserve_testing import FAILURES, check, free_port, render_nginx_conf  # noqa: E402



RENDERED: dict[str, list] = {}  # overlay -> its rendered documents, for the type check


def render(root, overlay):
    out = subprocess.run(["kubectl", "kustomize", os.path.join(root, "deploy/k8s/overlays", overlay)],
                         capture_output=True, text=True)
    check(out.returncode == 0, f"kustomize {overlay}: {out.stderr.strip()}")
    RENDERED[overlay] = [d for d in yaml.safe_load_all(out.stdout) if d]
    return {d["kind"]: d for d in RENDERED[overlay]}


def subset(small, big):
    return all(big.get(k) == v for k, v in (small or {}).items())


def flag_value(args, name):
    for a in args:
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


def check_overlay(name, docs):
    dep, svc, pdb, hpa = (docs.get(k) for k in
                          ("Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler"))
    check(all((dep, svc, pdb, hpa)), f"{name}: Deployment, Service, PDB and HPA rendered")
    if not all((dep, svc, pdb, hpa)):
        return None
    pod = dep["spec"]["template"]
    labels = pod["metadata"]["labels"]
    check(subset(dep["spec"]["selector"]["matchLabels"], labels), f"{name}: Deployment selector")
    check(bool(svc["spec"].get("selector")) and subset(svc["spec"]["selector"], labels),
          f"{name}: Service selector")
    check(bool(pdb["spec"].get("selector", {}).get("matchLabels")) and
          subset(pdb["spec"]["selector"]["matchLabels"], labels), f"{name}: PDB selector")
    check(hpa["spec"]["scaleTargetRef"]["name"] == dep["metadata"]["name"], f"{name}: HPA target")
    container = pod["spec"]["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    for p in svc["spec"]["ports"]:
        check(p["targetPort"] in ports, f"{name}: Service port {p['name']} targets a container port")
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        check(container[probe]["httpGet"]["port"] in ports, f"{name}: {probe} port is named")
    sm = docs.get("ServiceMonitor")
    check(sm is not None and subset(sm["spec"]["selector"]["matchLabels"], svc["metadata"]["labels"])
          and sm["spec"]["endpoints"][0]["port"] in [p["name"] for p in svc["spec"]["ports"]],
          f"{name}: ServiceMonitor selects the Service's metrics port")
    args = container["args"]
    delay = float(flag_value(args, "--shutdown-delay") or 0)
    drain = float(flag_value(args, "--drain-timeout") or 30)
    grace = pod["spec"]["terminationGracePeriodSeconds"]
    check(grace >= delay + drain + 5, f"{name}: grace {grace} >= delay {delay} + drain {drain} + 5")
    sc, psc = container["securityContext"], pod["spec"]["securityContext"]
    check(psc.get("runAsNonRoot") and psc.get("runAsUser") == 10001 and
          psc.get("seccompProfile", {}).get("type") == "RuntimeDefault", f"{name}: pod security")
    check(sc.get("readOnlyRootFilesystem") and sc.get("allowPrivilegeEscalation") is False and
          sc.get("capabilities", {}).get("drop") == ["ALL"], f"{name}: container security")
    res = container["resources"]
    check(res["requests"]["cpu"] == res["limits"]["cpu"], f"{name}: CPU requests = limits")
    check(any(v["name"] == "tmp" for v in pod["spec"]["volumes"]), f"{name}: a writable /tmp")
    metric = hpa["spec"]["metrics"][0]["pods"]["metric"]["name"]
    return dep, container, metric


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, ""
    except OSError:
        return 0, ""


def run_like_the_deployment(args, container, metric, grace):
    """The Deployment's own args, ports moved to free ones on loopback."""
    port, admin = free_port(), free_port()
    cli = []
    for a in container["args"]:
        if a.startswith("--host="):
            a = "--host=127.0.0.1"
        elif a.startswith("--port="):
            a = f"--port={port}"
        elif a.startswith("--admin-port="):
            a = f"--admin-port={admin}"
        elif a.startswith("--grpc-port="):
            a = f"--grpc-port={free_port()}"
        cli.append(a)
    proc = subprocess.Popen([args.mogserve] + cli + ["--model-dir", args.model_dir],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        ready_path = container["readinessProbe"]["httpGet"]["path"]
        deadline = time.time() + 120
        while time.time() < deadline and get(f"http://127.0.0.1:{admin}{ready_path}")[0] != 200:
            if proc.poll() is not None:
                check(False, f"mogserve refused the Deployment's args {cli}: {proc.stderr.read()}")
                return
            time.sleep(0.3)
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            path = container[probe]["httpGet"]["path"]
            check(get(f"http://127.0.0.1:{admin}{path}")[0] == 200, f"{probe} {path} answers 200")
        status, text = get(f"http://127.0.0.1:{admin}/metrics")
        check(status == 200 and f"\n{metric} " in text, f"/metrics carries the HPA metric {metric}")
        check_metrics_text(text)
        started = time.time()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=grace + 10)
        check(proc.returncode == 0 and time.time() - started <= grace,
              f"SIGTERM: exit {proc.returncode} after {time.time() - started:.1f} s (grace {grace})")
    finally:
        if proc.poll() is None:
            proc.kill()


def serve_flags(mogserve):
    help_text = subprocess.run([mogserve, "serve", "--help"], capture_output=True, text=True).stdout
    return set(re.findall(r"(--[a-z][a-z0-9-]+)", help_text))


def check_flags(where, args, flags):
    for a in args:
        if a.startswith("--"):
            name = a.split("=", 1)[0]
            check(name in flags, f"{where}: {name} is not a flag of mogserve serve")


def check_dockerfile(args, flags):
    text = open(os.path.join(args.root, "deploy/docker/Dockerfile")).read()
    check("USER 10001:10001" in text, "Dockerfile: USER 10001:10001")
    check('ENTRYPOINT ["mogserve"]' in text, "Dockerfile: exec-form ENTRYPOINT")
    check(re.search(r'HEALTHCHECK .*\n?.*CMD \["mogserve", "probe", "http://127\.0\.0\.1:8082/v2/health/ready"\]',
                    text) is not None, "Dockerfile: HEALTHCHECK through mogserve probe")
    cmd = re.search(r"^CMD \[(.*)\]$", text, re.M)
    check(cmd is not None, "Dockerfile: CMD")
    if cmd:
        cli = [a.strip().strip('"') for a in cmd.group(1).split(",")]
        check_flags("Dockerfile CMD", cli, flags)
        env = dict(re.findall(r"^ENV (\w+)=(\S+)$", text, re.M))
        run_like_the_image(args, cli, env)


def run_like_the_image(args, cli, env):
    """The image's CMD as its user would run it: uid/gid 10001, the model read-only."""
    setpriv = tool("setpriv")
    if not setpriv or os.geteuid() != 0:
        print("skipped: running the CMD as uid 10001 (needs root and setpriv)")
        return
    check("MOGSERVE_MODEL_DIR" in env, "Dockerfile: ENV MOGSERVE_MODEL_DIR names the model")
    port, admin = free_port(), free_port()
    ports = {"--port": str(port), "--admin-port": str(admin), "--grpc-port": str(free_port()),
             "--host": "127.0.0.1"}
    cli = [ports.get(cli[i - 1], a) if i > 0 else a for i, a in enumerate(cli)]
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)
        model = os.path.join(tmp, "model")
        shutil.copytree(args.model_dir, model)
        for name in os.listdir(model):
            os.chmod(os.path.join(model, name), 0o444)
        os.chmod(model, 0o555)
        proc = subprocess.Popen([setpriv, "--reuid=10001", "--regid=10001", "--clear-groups",
                                 os.path.abspath(args.mogserve)] + cli,
                                env={"MOGSERVE_MODEL_DIR": model, "PATH": "/usr/bin:/bin"}, cwd="/",
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.time() + 120
            while time.time() < deadline and get(f"http://127.0.0.1:{admin}/v2/health/ready")[0] != 200:
                if proc.poll() is not None:
                    check(False, f"the image's CMD as uid 10001 exited {proc.returncode}: "
                                 f"{proc.stderr.read()[-2000:]}")
                    return
                time.sleep(0.3)
            probe = subprocess.run([setpriv, "--reuid=10001", "--regid=10001", "--clear-groups",
                                    os.path.abspath(args.mogserve), "probe",
                                    f"http://127.0.0.1:{admin}/v2/health/ready"],
                                   capture_output=True, text=True)
            check(probe.returncode == 0, f"the HEALTHCHECK probe as uid 10001: {probe.stderr}")
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
            check(proc.returncode == 0, f"the image's CMD: SIGTERM -> exit {proc.returncode}")
        finally:
            if proc.poll() is None:
                proc.kill()


def check_runtime_packages(root, mogserve):
    if not shutil.which("apt-cache") or not shutil.which("dpkg"):
        print("skipped: runtime packages (no apt-cache/dpkg)")
        return
    wanted = [l.strip() for l in open(os.path.join(root, "deploy/docker/runtime-packages.txt"))
              if l.strip() and not l.startswith("#")]
    deps = subprocess.run(["apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests",
                           "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances"] + wanted,
                          capture_output=True, text=True).stdout
    closure = {l.strip() for l in deps.splitlines() if l and not l.startswith(" ")}
    # Essential packages of every Debian image (bookworm-slim has them).
    closure |= {"libc6", "libgcc-s1", "libstdc++6", "zlib1g", "libzstd1", "liblzma5", "libbz2-1.0",
                "libselinux1", "libpcre2-8-0", "libcrypt1", "libgmp10", "libsystemd0", "libudev1",
                "libblkid1", "libmount1", "libuuid1", "libcap2", "liblz4-1", "libgcrypt20",
                "libgpg-error0", "libacl1", "libattr1", "libtinfo6", "libmd0", "libdb5.3"}
    ldd = subprocess.run(["ldd", mogserve], capture_output=True, text=True).stdout
    libs = [m.group(1) for m in re.finditer(r"=> (/\S+)", ldd)]
    check(len(libs) > 5, "ldd lists the binary's libraries")
    for lib in libs:
        owner = subprocess.run(["dpkg", "-S", os.path.realpath(lib)], capture_output=True, text=True)
        if owner.returncode != 0:
            owner = subprocess.run(["dpkg", "-S", lib], capture_output=True, text=True)
        pkg = owner.stdout.split(":")[0].strip()
        check(pkg in closure, f"{lib} ({pkg or 'no package'}) is not in runtime-packages.txt's closure")


def check_nginx(root):
    nginx = tool("nginx")
    if not nginx:
        return
    with tempfile.TemporaryDirectory() as tmp:
        conf = render_nginx_conf(open(os.path.join(root, "deploy/nginx/mogserve.conf.in")).read(),
                                 ["127.0.0.1:1"], "127.0.0.1:1", f"{tmp}/access.log", tmp)
        path = os.path.join(tmp, "nginx.conf")
        open(path, "w").write(conf)
        r = subprocess.run([nginx, "-t", "-p", tmp, "-c", path, "-e", "stderr"],
                           capture_output=True, text=True)
        check(r.returncode == 0, f"nginx -t: {r.stderr.strip()}")


def tool(name):
    path = shutil.which(name) or (f"/usr/sbin/{name}" if os.path.exists(f"/usr/sbin/{name}") else None)
    if not path:
        print(f"skipped: {name} is not installed")
    return path


def check_metrics_text(text):
    """Prometheus' own parser and linter on what /metrics serves (names, help, types, units)."""
    promtool = tool("promtool")
    if promtool:
        r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
        check(r.returncode == 0, f"promtool check metrics: {(r.stdout + r.stderr).strip()}")


def check_adapter_query(adapter):
    """The adapter's metricsQuery as prometheus-adapter expands it for one pod, as a rule."""
    promtool = tool("promtool")
    if not promtool:
        return
    rule = adapter["rules"]["custom"][0]
    query = (rule["metricsQuery"].replace("<<.Series>>", rule["name"]["as"])
             .replace("<<.LabelMatchers>>", 'namespace="default",pod=~"mogserve-.*"')
             .replace("<<.GroupBy>>", "pod"))
    check("<<" not in query, f"adapter query has unknown placeholders: {query}")
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
        yaml.safe_dump({"groups": [{"name": "adapter", "rules": [
            {"record": "pod:mogserve_inflight_images:avg1m", "expr": query}]}]}, f)
        f.flush()
        r = subprocess.run([promtool, "check", "rules", f.name], capture_output=True, text=True)
        check(r.returncode == 0, f"promtool check rules ({query}): {(r.stdout + r.stderr).strip()}")


def check_yaml_style(root):
    yamllint = tool("yamllint")
    if yamllint:
        r = subprocess.run([yamllint, "-s", "-c", os.path.join(root, "deploy/.yamllint"),
                            os.path.join(root, "deploy")], capture_output=True, text=True)
        check(r.returncode == 0, f"yamllint -s deploy/: {r.stdout.strip()}")


# The TypeScript type of each kind the overlays render: (module, type name).
KIND_TYPES = {
    "Deployment": ("kubernetes-types/apps/v1", "Deployment"),
    "Service": ("kubernetes-types/core/v1", "Service"),
    "PodDisruptionBudget": ("kubernetes-types/policy/v1", "PodDisruptionBudget"),
    "HorizontalPodAutoscaler": ("kubernetes-types/autoscaling/v2", "HorizontalPodAutoscaler"),
    "ServiceMonitor": ("@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor",
                       "IServiceMonitor"),
}


def lint_tools(root):
    modules = os.path.abspath(os.path.join(root, "tests/deploy/lint/node_modules"))
    node = tool("node")
    if node and not os.path.isdir(modules):
        print("skipped: the npm linters (run scripts/setup.sh: npm ci in tests/deploy/lint)")
        return None, None
    return node, modules


def check_dockerfile_lint(root):
    node, modules = lint_tools(root)
    if not node:
        return
    dockerfile = os.path.join(root, "deploy/docker/Dockerfile")
    r = subprocess.run([node, os.path.join(modules, "dockerfile-utils/bin/dockerfile-utils"), "lint",
                        "-j", dockerfile], capture_output=True, text=True)
    check(r.returncode == 0 and json.loads(r.stdout or "null") == [],
          f"dockerfile-utils lint: {r.stdout.strip()} {r.stderr.strip()}")
    r = subprocess.run([node, os.path.join(modules, "dockerfilelint/bin/dockerfilelint"), "-o", "json",
                        dockerfile], capture_output=True, text=True)
    try:
        issues = [i for f in json.loads(r.stdout)["files"] for i in f["issues"]]
    except (ValueError, KeyError):
        check(False, f"dockerfilelint: {r.stdout.strip()} {r.stderr.strip()}")
        return
    # dockerfilelint 1.8.0 reads HEALTHCHECK's options with /--\w+/, which cuts --start-period
    # (a Docker option since 17.05, in its own allowed list) to "--start": a false positive.
    issues = [i for i in issues if not (i["title"] == "Invalid Argument Format" and
                                        i["content"].startswith("HEALTHCHECK") and
                                        "--start-period=" in i["content"])]
    check(not issues, f"dockerfilelint: {issues}")


def check_manifest_types(root):
    node, modules = lint_tools(root)
    if not node:
        return
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for overlay, docs in RENDERED.items():
            lines, used = [], set()
            for k, doc in enumerate(docs):
                module, type_name = KIND_TYPES.get(doc.get("kind"), (None, None))
                if not check(module is not None, f"{overlay}: no TypeScript type for kind {doc.get('kind')}"):
                    continue
                used.add((module, type_name))
                lines.append(f"export const doc{k}: {type_name} = {json.dumps(doc, indent=1)};")
            imports = [f'import type {{ {t} }} from "{m}";' for m, t in sorted(used)]
            path = os.path.join(tmp, f"{overlay}.ts")
            open(path, "w").write("\n".join(imports + lines) + "\n")
            files.append(path)
        json.dump({"compilerOptions": {"strict": True, "noEmit": True, "module": "commonjs",
                                       "target": "es2020", "moduleResolution": "node",
                                       "baseUrl": modules, "paths": {"*": ["*"]}, "types": []},
                   "files": files}, open(os.path.join(tmp, "tsconfig.json"), "w"))
        r = subprocess.run([node, os.path.join(modules, "typescript/bin/tsc"), "-p", tmp],
                           capture_output=True, text=True)
        check(r.returncode == 0, f"tsc --strict on the rendered manifests: {r.stdout.strip()[:2000]}")



def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mogserve", required=True)
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--root", required=True)
    args = ap.parse_args()
    if not shutil.which("kubectl"):
        print("skipped: kubectl is not installed")
        return 77
    flags = serve_flags(args.mogserve)
    check("--shutdown-delay" in flags and "--admin-port" in flags, "serve --help lists its flags")
    cpu = check_overlay("cpu", render(args.root, "cpu"))
    gpu_docs = render(args.root, "gpu")
    gpu = check_overlay("gpu", gpu_docs)
    if gpu:
        dep, container, _ = gpu
        check("--device=cuda" in container["args"], "gpu: --device=cuda")
        check(str(container["resources"]["limits"].get("nvidia.com/gpu")) == "1", "gpu: one GPU")
        check(any(t["key"] == "nvidia.com/gpu" for t in dep["spec"]["template"]["spec"]["tolerations"]),
              "gpu: tolerates GPU nodes")
        check(dep["spec"]["strategy"]["rollingUpdate"]["maxSurge"] == 0, "gpu: no surge")
        check_flags("gpu Deployment", container["args"][1:], flags)
    if cpu:
        dep, container, metric = cpu
        check_flags("cpu Deployment", container["args"][1:], flags)
        run_like_the_deployment(args, container, metric,
                                dep["spec"]["template"]["spec"]["terminationGracePeriodSeconds"])
    isvc = yaml.safe_load(open(os.path.join(args.root, "deploy/k8s/kserve/inferenceservice.yaml")))
    check_flags("KServe", isvc["spec"]["predictor"]["containers"][0]["args"][1:], flags)
    adapter = yaml.safe_load(open(os.path.join(args.root,
                                               "deploy/k8s/autoscaling/prometheus-adapter-values.yaml")))
    check(adapter["rules"]["custom"][0]["name"]["as"] == "mogserve_inflight_images",
          "prometheus-adapter serves mogserve_inflight_images")
    check_adapter_query(adapter)
    check_yaml_style(args.root)
    check_dockerfile(args, flags)
    check_dockerfile_lint(args.root)
    check_manifest_types(args.root)
    check_runtime_packages(args.root, args.mogserve)
    check_nginx(args.root)
    print(f"{len(FAILURES)} failure(s)" if FAILURES else "ok: deploy/ renders, runs and fits the binary")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
