#!/usr/bin/env python3
"""Zero lost requests behind a real load balancer (specs/scale_out.md §5): Debian's nginx on
loopback, configured from deploy/nginx/mogserve.conf.in, in front of three real `mogserve serve`
instances while they come and go under 16 clients.

    run_scaleout.py --mogserve BUILD/mogserve --model-dir models/ssd_mobilenetv1
        --photos tests/data/photos --conf deploy/nginx/mogserve.conf.in

Load: 16 client threads through nginx, alternately /v1/detect and /v2 binary infer, over the
photos and two corrupt images. References first, from one instance directly. At 25 % of the
requests SIGTERM A (started with --shutdown-delay 2), at 50 % SIGKILL B once it has images in
flight, at 75 % SIGTERM C (no delay); each is restarted and waited ready before the next step.

Pass:
 1. no transport error; every valid request 200; each corrupt one a single 400 invalid_image,
    answered by one upstream (never retried);
 2. each 200 matches its reference (same count, boxes within 0.5 px, scores within 1e-3);
 3. nginx's log shows >= 1 request that failed on B and was answered 200 by another instance,
    and none took more than 3 attempts;
 4. A and C exit 0 within the drain timeout without cancelling anything;
 5. negative control: the SIGKILL step again behind an nginx without `non_idempotent` gives
    >= 1 client 502 (else the run is inconclusive and fails): the retry rule is what saves them;
 6. direct, no balancer: 32 connected clients, SIGTERM mid-flight: every one answered 200.
Printed only: duplicate work (images done by the instances minus the clients' successes).
Exit 0: all hold; 1: failures listed; 77: nginx is not installed (skipped).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from mogserve_testing import (FAILURES, binary_infer_body, check, decode_binary_response,  # noqa: E402
                              free_port, render_nginx_conf, request, scrape, start_server)

CLIENTS = 16
MIN_REQUESTS = 900
LOAD_SECONDS = 150
DRAIN_TIMEOUT = 20



def log(what):
    print(f"[{time.strftime('%H:%M:%S')}] {what}", flush=True)


class Instance:
    """One `mogserve serve` on loopback, its stderr in a file, restartable on the same ports."""

    def __init__(self, name, args, tmp, extra=()):
        self.name, self.args, self.extra = name, args, list(extra)
        self.port, self.admin = free_port(), free_port()
        self.log_path = os.path.join(tmp, f"mogserve-{name}.log")
        self.proc = None
        self.done_before = 0.0  # images done by earlier runs of this instance

    @property
    def addr(self):
        return f"127.0.0.1:{self.port}"

    def start(self):
        flags = ["--port", str(self.port), "--admin-port", str(self.admin), "--model-dir",
                 self.args.model_dir, "--threads", "1", "--instances", "1",
                 "--plan-batch-sizes", "1,2,4", "--max-batch-size", "4", "--model-name", "faces",
                 "--access-log", "off", "--drain-timeout", str(DRAIN_TIMEOUT)] + self.extra
        with open(self.log_path, "ab") as err:
            self.proc = start_server(self.args.mogserve, flags, self.admin, stderr=err)

    def stop(self, sig, timeout):
        """Signal it and wait; (exit code or None if still running, seconds taken)."""
        done = scrape_outcome(self.admin, "done")
        self.done_before += done or 0
        started = time.time()
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None, time.time() - started
        return self.proc.returncode, time.time() - started

    def log_text(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()


def scrape_outcome(port, outcome):
    try:
        status, _, data = request(port, "GET", "/metrics", timeout=5)
    except OSError:
        return None
    m = re.search(r'^mogserve_requests_total\{outcome="%s"\} (\S+)$' % outcome, data.decode(), re.M)
    return float(m.group(1)) if status == 200 and m else None


class Nginx:
    def __init__(self, args, tmp, name, instances, retry_non_idempotent=True):
        self.port = free_port()
        self.prefix = os.path.join(tmp, name)
        os.makedirs(self.prefix)
        os.chmod(self.prefix, 0o777)  # nginx's workers run as nobody when started by root
        self.access_log = os.path.join(self.prefix, "access.log")
        conf = open(args.conf).read()
        if not retry_non_idempotent:
            conf, n = re.subn(r"\s+non_idempotent;", ";", conf)
            check(n == 1, "the nginx conf retries non-idempotent requests (one rule to remove)")
        conf = render_nginx_conf(conf, [i.addr for i in instances], f"127.0.0.1:{self.port}",
                                 self.access_log, self.prefix)
        self.conf_path = os.path.join(self.prefix, "nginx.conf")
        open(self.conf_path, "w").write(conf)
        self.err = open(os.path.join(self.prefix, "error.log"), "wb")
        self.proc = subprocess.Popen([args.nginx, "-p", self.prefix, "-c", self.conf_path,
                                      "-e", "stderr", "-g", "daemon off;"],
                                     stdout=subprocess.DEVNULL, stderr=self.err)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                request(self.port, "GET", "/healthz", timeout=2)
                return
            except OSError:
                time.sleep(0.1)
        raise SystemExit(f"nginx did not start: {open(self.err.name).read()}")

    def stop(self):
        self.proc.send_signal(signal.SIGQUIT)  # graceful: finishes its requests, flushes the log
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def parse_log_line(line):
    """`$request_id $status $upstream_addr $upstream_status`, where the upstream fields list
    one entry per attempt separated by ", ": (id, status, [addrs], [statuses])."""
    rid, status, rest = line.strip().split(" ", 2)
    parts = rest.split(", ")
    # rest = "a1, a2, a3 s1, s2, s3": the middle part holds "a3 s1".
    middle = [i for i, p in enumerate(parts) if " " in p]
    if len(middle) != 1:
        return rid, status, [], []
    k = middle[0]
    last_addr, first_status = parts[k].split(" ", 1)
    return rid, status, parts[:k] + [last_addr], [first_status] + parts[k + 1:]


# ---- requests and their results ----

def send(conn, route, image):
    """One request on a kept-alive connection: (status, request id, result or error code)."""
    if route == "v1":
        conn.request("POST", "/v1/detect", body=image,
                     headers={"Content-Type": "application/octet-stream"})
    else:
        body, headers = binary_infer_body([image])
        conn.request("POST", "/v2/models/faces/infer", body=body, headers=headers)
    r = conn.getresponse()
    data = r.read()
    hdrs = {k.lower(): v for k, v in r.getheaders()}
    return r.status, hdrs.get("x-request-id", ""), parse_result(route, r.status, hdrs, data)


def parse_result(route, status, hdrs, data):
    """200: (count, boxes, scores); otherwise the error code ('' when the body is not ours)."""
    try:
        if status != 200:
            err = json.loads(data).get("error")
            return err.get("code", "") if isinstance(err, dict) else str(err).split(":", 1)[0]
        if route == "v1":
            faces = json.loads(data)["faces"]
            return len(faces), [f["box"] for f in faces], [f["score"] for f in faces]
        _, t, _ = decode_binary_response(hdrs, data)
        n = t["COUNT"][1][0]
        k = t["SCORES"][0][1]
        boxes = [t["BOXES"][1][j * 4:j * 4 + 4] for j in range(n)]
        return n, boxes, t["SCORES"][1][:n] if k else []
    except (ValueError, KeyError, AttributeError, TypeError):
        return ""


def same_faces(got, want):
    return (got[0] == want[0] and
            all(abs(a - b) <= 0.5 for g, w in zip(got[1], want[1]) for a, b in zip(g, w)) and
            all(abs(a - b) <= 1e-3 for a, b in zip(got[2], want[2])))


class Load:
    """CLIENTS threads sending work items through PORT until stopped; results by item."""

    def __init__(self, port, items, clients=CLIENTS):
        self.port, self.items = port, items
        self.lock = threading.Lock()
        self.next = 0
        self.completed = 0
        self.results = []  # (item index, status, request id, result)
        self.transport_errors = []
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self.client, daemon=True) for _ in range(clients)]
        for t in self.threads:
            t.start()

    def client(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=90)
        while not self.stopping.is_set():
            with self.lock:
                i = self.next
                self.next += 1
            route, image_index = self.items[i % len(self.items)]
            try:
                status, rid, result = send(conn, route, IMAGES[image_index][1])
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=90)
                with self.lock:
                    self.transport_errors.append((i, repr(e)))
                    self.completed += 1
                continue
            with self.lock:
                self.results.append((i, status, rid, result))
                self.completed += 1
        conn.close()

    def wait_completed(self, n, deadline):
        while self.completed < n and time.time() < deadline:
            time.sleep(0.05)
        return self.completed >= n

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join(timeout=120)


IMAGES: list[tuple[str, bytes]] = []  # (name, bytes); names of corrupt ones start "corrupt"


def load_images(photos):
    for name in sorted(os.listdir(photos)):
        if name.lower().endswith((".jpg", ".jpeg", ".png", ".webp")):
            IMAGES.append((name, open(os.path.join(photos, name), "rb").read()))
    IMAGES.append(("corrupt-truncated.jpg", IMAGES[0][1][:600]))
    IMAGES.append(("corrupt-noise.png", b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4))


def references(port):
    refs = {}
    for route in ("v1", "v2"):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        for k, (name, data) in enumerate(IMAGES):
            status, _, result = send(conn, route, data)
            if name.startswith("corrupt"):
                check(status == 400 and result == "invalid_image",
                      f"reference {route} {name}: {status} {result}")
            else:
                check(status == 200 and isinstance(result, tuple),
                      f"reference {route} {name}: {status} {result}")
                refs[(route, k)] = result
        conn.close()
    return refs


# ---- the steps ----

def graceful_restart(inst, what):
    log(f"{what}: SIGTERM {inst.name}")
    rc, took = inst.stop(signal.SIGTERM, DRAIN_TIMEOUT + 10)
    check(rc == 0 and took <= DRAIN_TIMEOUT + 3,
          f"{inst.name}: SIGTERM -> exit {rc} after {took:.1f} s (drain timeout {DRAIN_TIMEOUT} s)")
    check("drain timeout" not in inst.log_text(), f"{inst.name}: cancelled requests at the drain")
    inst.start()
    log(f"{inst.name} restarted and ready")


def kill_in_flight(inst, what):
    deadline = time.time() + 30
    while time.time() < deadline and not (scrape(inst.admin, "mogserve_inflight_images") or 0) >= 1:
        time.sleep(0.01)
    log(f"{what}: SIGKILL {inst.name} ({scrape(inst.admin, 'mogserve_inflight_images')} in flight)")
    inst.stop(signal.SIGKILL, 10)
    inst.start()
    log(f"{inst.name} restarted and ready")


def check_load_results(load, refs, label):
    check(not load.transport_errors,
          f"{label}: {len(load.transport_errors)} transport errors, e.g. {load.transport_errors[:3]}")
    bad = 0
    for i, status, rid, result in load.results:
        route, k = load.items[i % len(load.items)]
        name = IMAGES[k][0]
        if name.startswith("corrupt"):
            ok = status == 400 and result == "invalid_image"
        else:
            ok = status == 200 and isinstance(result, tuple) and same_faces(result, refs[(route, k)])
        if not ok:
            bad += 1
            if bad <= 5:
                check(False, f"{label}: request {i} ({route} {name}, id {rid}): {status} {result}")
    check(bad == 0, f"{label}: {bad} requests answered wrongly")


def check_nginx_log(nginx, load, b_addr):
    lines = [parse_log_line(l) for l in open(nginx.access_log)]
    by_id = {rid: (status, addrs, statuses) for rid, status, addrs, statuses in lines}
    check(len(lines) >= len(load.results), f"nginx logged {len(lines)} of {len(load.results)}")
    retried_from_b = sum(1 for _, status, addrs, st in lines
                         if status == "200" and len(addrs) > 1 and b_addr in addrs[:-1])
    retried = sum(1 for _, _, addrs, _ in lines if len(addrs) > 1)
    over = [l for l in lines if len(l[2]) > 3]
    log(f"nginx: {len(lines)} requests, {retried} retried, {retried_from_b} failed on B then 200")
    check(retried_from_b >= 1, "nginx: no request failed on B and was answered elsewhere (vacuous)")
    check(not over, f"nginx: requests with more than 3 attempts: {over[:3]}")
    for i, status, rid, result in load.results:
        if IMAGES[load.items[i % len(load.items)][1]][0].startswith("corrupt"):
            entry = by_id.get(rid)
            # Only a failed attempt (an instance going away) may come before its one 400.
            check(entry is not None and entry[2][-1] == "400" and entry[2].count("400") == 1 and
                  all(s in ("502", "503", "504") for s in entry[2][:-1]),
                  f"corrupt request {rid}: nginx saw {entry} (one 400, never retried, expected)")


def negative_control(args, tmp, instances, items):
    """The SIGKILL step behind an nginx that does not retry POSTs: clients see 502s."""
    nginx = Nginx(args, tmp, "nginx-no-retry", instances, retry_non_idempotent=False)
    load = Load(nginx.port, items)
    try:
        load.wait_completed(60, time.time() + 60)
        kill_in_flight(instances[1], "negative control")
        load.wait_completed(load.completed + 60, time.time() + 60)
    finally:
        load.stop()
        nginx.stop()
    lost = sum(1 for _, status, _, _ in load.results if status == 502)
    log(f"negative control (no retry of POSTs): {lost} client 502s of {len(load.results)}")
    check(lost >= 1, "negative control inconclusive: no 502 without non_idempotent retries")


def direct_drain(args, tmp):
    """32 clients connected straight to one instance, SIGTERM while their requests run."""
    inst = Instance("direct", args, tmp)
    inst.start()
    photo = IMAGES[0][1]
    answers = []
    lock = threading.Lock()
    sent = threading.Semaphore(0)

    def one():
        try:
            conn = http.client.HTTPConnection("127.0.0.1", inst.port, timeout=90)
            conn.connect()
            sent.release()
            status, _, result = send(conn, "v1", photo)
            conn.close()
        except (OSError, http.client.HTTPException) as e:
            status, result = 0, repr(e)
        with lock:
            answers.append((status, result))

    threads = [threading.Thread(target=one) for _ in range(32)]
    for t in threads:
        t.start()
    for _ in threads:
        sent.acquire(timeout=30)
    deadline = time.time() + 10
    while time.time() < deadline and not (scrape(inst.admin, "mogserve_inflight_images") or 0) >= 1:
        time.sleep(0.005)
    rc, took = inst.stop(signal.SIGTERM, DRAIN_TIMEOUT + 10)
    for t in threads:
        t.join(timeout=60)
    ok = sum(1 for s, _ in answers if s == 200)
    log(f"direct drain: {ok} of 32 answered 200, exit {rc} after {took:.1f} s")
    check(ok == 32, f"direct drain: answers {sorted(set(map(str, answers)))[:4]}")
    check(rc == 0, f"direct drain: exit {rc}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mogserve", required=True)
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--photos", required=True)
    ap.add_argument("--conf", required=True, help="deploy/nginx/mogserve.conf.in")
    ap.add_argument("--nginx", default=shutil.which("nginx") or "/usr/sbin/nginx")
    args = ap.parse_args()
    if not os.path.exists(args.nginx):
        print("skipped: nginx is not installed (scripts/setup.sh installs it)")
        return 77
    load_images(args.photos)
    # Alternate the routes; every image goes through both.
    items = [(route, k) for k in range(len(IMAGES)) for route in ("v1", "v2")]
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)
        a = Instance("A", args, tmp, ["--shutdown-delay", "2"])
        b = Instance("B", args, tmp)
        c = Instance("C", args, tmp)
        instances = [a, b, c]
        try:
            for inst in instances:
                inst.start()
            refs = references(a.port)
            nginx = Nginx(args, tmp, "nginx", instances)
            load = Load(nginx.port, items)
            deadline = time.time() + LOAD_SECONDS
            steps = [(0.25, lambda: graceful_restart(a, "25 %")),
                     (0.50, lambda: kill_in_flight(b, "50 %")),
                     (0.75, lambda: graceful_restart(c, "75 %"))]
            try:
                for fraction, step in steps:
                    if not check(load.wait_completed(int(MIN_REQUESTS * fraction), deadline),
                                 f"the load did not reach {fraction:.0%} in {LOAD_SECONDS} s"):
                        break
                    step()
                check(load.wait_completed(MIN_REQUESTS, deadline),
                      f"{load.completed} of {MIN_REQUESTS} requests in {LOAD_SECONDS} s")
            finally:
                load.stop()
                nginx.stop()
            log(f"load: {len(load.results)} answers, {len(load.transport_errors)} transport errors")
            check_load_results(load, refs, "through nginx")
            check_nginx_log(nginx, load, b.addr)
            done = sum(i.done_before + (scrape_outcome(i.admin, "done") or 0) for i in instances)
            successes = sum(1 for _, s, _, _ in load.results if s == 200) + len(refs)
            log(f"duplicate work: {done:.0f} images done by the instances - {successes} client "
                f"successes = {done - successes:.0f} (approximate: what B finished between its last "
                f"scrape and SIGKILL is counted by nobody)")
            negative_control(args, tmp, instances, items)
            direct_drain(args, tmp)
        finally:
            for inst in instances:
                if inst.proc and inst.proc.poll() is None:
                    inst.proc.kill()
    print(f"{len(FAILURES)} failure(s)" if FAILURES else "ok: no request lost behind nginx")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
