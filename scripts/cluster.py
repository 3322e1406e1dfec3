#!/usr/bin/env python3
"""Several tavli-engine replicas behind a balancing client, on loopback (issue #34).

Run by scripts/cluster.sh, which installs what this needs (the Python client package
clients/python with grpcio, dnslib, grpcio-health-checking; haproxy) and builds the
release binary. docs/deploy.md, "Scaling out", gives the figures of a run.

Stands in for a Kubernetes headless Service: a small DNS server on 127.0.0.1 (dnslib)
answers the A records of NAME (default tavli-engine-headless.default.svc.cluster.local)
with the addresses of the ready replicas, as the cluster DNS does for the ready pods.
Replicas are the release binary on 127.0.0.2, .3, .4 and, started mid-run, .5, all on
the same gRPC port, each with its own /metrics. The client is `tavli_client.channel`
(the project's service config, deploy/grpc-service-config.json: round_robin, health
checks, retries) on `dns://127.0.0.1:DNS_PORT/NAME:PORT`, driven by a few processes of
a few threads each making unary calls (ListLegalPlays and Evaluate at 0 ply, Portes).
Who answered is counted on the servers: grpc_server_handled_total of
tavli.v1.TavliEngine on each replica's /metrics, read before and after each phase.

Phases and checks (each prints its figures; any failed check makes the exit status 1):
  1. spread: three replicas; every replica's share of the calls within +-15 % of an
     even share (1/3).
  2. scale-out: a fourth replica starts; once its health says SERVING it joins the DNS
     answer. The clients see it when they next resolve the name, which they do when a
     server closes a connection (GOAWAY at --max-connection-age-seconds): it must carry
     >= 15 % of the calls (over a 2 s window) within max-age + grace + 5 s of joining.
  3. faults: one replica gets SIGTERM (it drains: NOT_SERVING, GOAWAY, in-flight calls
     finish, exit 0) and leaves the DNS answer 1 s later; another is killed with SIGKILL
     and leaves the DNS answer 2 s later. The whole run must have 0 failed calls.
  4. proxy: the same load through haproxy (deploy/proxy/haproxy.cfg: HTTP/2 without TLS
     on both sides, per-call round robin over the replicas it resolves from the same
     DNS name), as a client of a plain ClusterIP Service or an ingress has it: the
     spread over the replicas, then one replica drained and one killed; 0 failed calls.

Everything listens on loopback only; every process started here is stopped (and dies
with this one); the run is bounded by --deadline seconds.
"""

import argparse
import ctypes
import multiprocessing as mp
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

# The c-ares resolver is the one that takes a DNS server in the target's authority
# (dns://HOST:PORT/NAME:PORT); it is gRPC Python's default, set here to be sure.
os.environ["GRPC_DNS_RESOLVER"] = "ares"

import grpc  # noqa: E402
from dnslib import QTYPE, RCODE, RR, A, DNSLabel  # noqa: E402
from dnslib.server import BaseResolver, DNSServer  # noqa: E402
from grpc_health.v1 import health_pb2, health_pb2_grpc  # noqa: E402
from tavli.v1 import engine_pb2 as pb  # noqa: E402
from tavli.v1 import engine_pb2_grpc as rpc  # noqa: E402
from tavli_client import channel as tavli_channel  # noqa: E402

SERVICE = "tavli.v1.TavliEngine"
PORTES_START = "portes/w/24:2,13:5,8:3,6:5/1:2,12:5,17:3,19:5"
METHODS = ("ListLegalPlays", "Evaluate")
HANDLED = re.compile(r'^grpc_server_handled_total\{([^}]*)\} ([0-9.e+]+)$', re.M)
CLOSED = re.compile(r'^tavli_connections_closed_total\{([^}]*)\} ([0-9.e+]+)$', re.M)
# What gRPC says when a response ends without its trailers (grpc-status).
TRAILERS_LOST = "Data frame with END_STREAM flag received"
LABEL = re.compile(r'(\w+)="([^"]*)"')


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def die_with_parent():
    """preexec_fn: the child gets SIGKILL when this process dies (Linux prctl)."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


# --------------------------------------------------------------------------- DNS
class Headless(BaseResolver):
    """DNS answers for one name: an A record per address of `addrs` (TTL 1 s), like a
    headless Service's name; an empty NOERROR answer for its other types (AAAA, TXT:
    no service config in DNS) and NXDOMAIN for other names. Counts the A queries."""

    def __init__(self, name):
        self.name = DNSLabel(name)
        self.lock = threading.Lock()
        self.addrs = []
        self.a_queries = []  # monotonic times of the A queries

    def set(self, addrs):
        with self.lock:
            self.addrs = list(addrs)
        log(f"DNS {self.name} -> {', '.join(addrs) or '(none)'}")

    def resolve(self, request, handler):
        reply = request.reply()
        q = request.q
        if q.qname != self.name:
            reply.header.rcode = RCODE.NXDOMAIN
            return reply
        if q.qtype == QTYPE.A:
            with self.lock:
                addrs = list(self.addrs)
                self.a_queries.append(time.monotonic())
            for a in addrs:
                reply.add_answer(RR(q.qname, QTYPE.A, rdata=A(a), ttl=1))
        return reply

    def queries_since(self, t):
        with self.lock:
            return sum(1 for q in self.a_queries if q >= t)


class QuietLogger:
    """dnslib's logger, silent."""

    def __getattr__(self, _name):
        return lambda *args, **kwargs: None


# ---------------------------------------------------------------------- replicas
class Replica:
    """One tavli-engine process on IP:port, its /metrics on IP:metrics_port."""

    def __init__(self, ip, opts, logdir):
        self.ip, self.opts, self.logdir = ip, opts, logdir
        self.addr = f"{ip}:{opts.port}"
        self.metrics = f"http://{ip}:{opts.metrics_port}/metrics"
        self.proc = None
        self.gone = 0  # the calls it had answered when it stopped (see calls())
        self.closed = {}  # gRPC connections it closed, by reason (last scrape)

    def start(self):
        args = [
            self.opts.bin,
            "--grpc-addr", self.addr,
            "--metrics-addr", f"{self.ip}:{self.opts.metrics_port}",
            "--drain-seconds", str(self.opts.drain),
            "--max-connection-age-seconds", str(self.opts.max_age),
            "--max-connection-age-grace-seconds", str(self.opts.grace),
        ]
        logf = open(os.path.join(self.logdir, f"{self.ip}.log"), "ab")
        env = dict(os.environ, RUST_LOG=os.environ.get("RUST_LOG", "warn"))
        self.proc = subprocess.Popen(
            args, stdout=logf, stderr=subprocess.STDOUT, env=env, preexec_fn=die_with_parent
        )
        logf.close()
        self.gone = 0
        return self

    def wait_serving(self, timeout=15.0):
        """Until grpc.health.v1 Check(tavli.v1.TavliEngine) answers SERVING."""
        deadline = time.monotonic() + timeout
        with grpc.insecure_channel(self.addr) as ch:
            health = health_pb2_grpc.HealthStub(ch)
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise SystemExit(f"replica {self.ip} exited with {self.proc.returncode}: {self.tail()}")
                try:
                    r = health.Check(health_pb2.HealthCheckRequest(service=SERVICE), timeout=1)
                    if r.status == health_pb2.HealthCheckResponse.SERVING:
                        return
                except grpc.RpcError:
                    pass
                time.sleep(0.1)
        raise SystemExit(f"replica {self.ip} not SERVING after {timeout} s: {self.tail()}")

    def scrape(self):
        """{(method, code): count} of grpc_server_handled_total for tavli.v1; sets
        `closed` from tavli_connections_closed_total{listener="grpc"}."""
        with urllib.request.urlopen(self.metrics, timeout=3) as r:
            text = r.read().decode()
        out = {}
        for labels, value in HANDLED.findall(text):
            lab = dict(LABEL.findall(labels))
            if lab.get("grpc_service") == SERVICE:
                key = (lab.get("grpc_method"), lab.get("grpc_code"))
                out[key] = out.get(key, 0) + int(float(value))
        closed = {}
        for labels, value in CLOSED.findall(text):
            lab = dict(LABEL.findall(labels))
            if lab.get("listener") == "grpc" and float(value) > 0:
                closed[lab.get("reason")] = int(float(value))
        self.closed = closed
        return out

    def calls(self):
        """Calls of METHODS answered OK so far (the last count once it stopped)."""
        if self.proc is None or self.proc.poll() is not None:
            return self.gone
        try:
            counts = self.scrape()
        except OSError:
            return self.gone
        self.gone = sum(n for (m, code), n in counts.items() if m in METHODS and code == "OK")
        return self.gone

    def tail(self, n=15):
        try:
            with open(os.path.join(self.logdir, f"{self.ip}.log"), errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def stop(self, sig):
        if self.proc is not None and self.proc.poll() is None:
            self.calls()
            self.proc.send_signal(sig)


def counts(replicas):
    return {r.ip: r.calls() for r in replicas}


def delta(after, before):
    return {ip: after[ip] - before.get(ip, 0) for ip in after}


def shares(d):
    total = sum(d.values())
    return {ip: (n / total if total else 0.0) for ip, n in d.items()}, total


def closed_by_age(replicas):
    """'N at their age, M cut at the grace's end': connections the replicas closed."""
    age = sum(r.closed.get("max_age", 0) for r in replicas)
    grace = sum(r.closed.get("max_age_grace", 0) for r in replicas)
    return f"{age} closed at their age (GOAWAY, then idle), {grace} cut at the grace's end"


def fmt_shares(d):
    s, total = shares(d)
    return ", ".join(f"{ip} {d[ip]} ({s[ip] * 100:.1f} %)" for ip in sorted(d)) + f"; total {total}"


# ------------------------------------------------------------------------ load
def load_worker(target, threads, stop, until, out, extra_options):
    """One client process: one channel, `threads` threads of unary calls until `stop`
    is set, or at the latest `until` (time.time()), should the driver be gone. Puts
    {"ok", "failed": {code: n}, "errors": [...], "max_ms"} on `out`."""
    ch = tavli_channel.insecure_channel(target, options=extra_options)
    stub = rpc.TavliEngineStub(ch)
    lock = threading.Lock()
    res = {"ok": 0, "failed": {}, "trailers_lost": 0, "errors": [], "max_ms": 0.0}
    dice = [pb.Dice(die1=a, die2=b) for a in range(1, 7) for b in range(a, 7)]

    def run(seed):
        rnd = random.Random(seed)
        ok, max_ms = 0, 0.0
        while not stop.is_set() and time.time() < until:
            d = rnd.choice(dice)
            t0 = time.monotonic()
            try:
                if rnd.random() < 0.5:
                    r = stub.ListLegalPlays(pb.ListLegalPlaysRequest(position_id=PORTES_START, dice=d), timeout=10)
                    assert r.plays, "no plays"
                else:
                    r = stub.Evaluate(pb.EvaluateRequest(position_id=PORTES_START, dice=d, plies=0), timeout=10)
                    assert r.ranked_plays, "no ranked plays"
                ok += 1
            except grpc.RpcError as e:
                with lock:
                    name = e.code().name
                    res["failed"][name] = res["failed"].get(name, 0) + 1
                    res["trailers_lost"] += TRAILERS_LOST in (e.details() or "")
                    if len(res["errors"]) < 5:
                        res["errors"].append(f"{time.strftime('%H:%M:%S')} {name}: {e.details()}")
            max_ms = max(max_ms, (time.monotonic() - t0) * 1000)
        with lock:
            res["ok"] += ok
            res["max_ms"] = max(res["max_ms"], max_ms)

    ts = [threading.Thread(target=run, args=(os.getpid() * 100 + i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    ch.close()
    out.put(res)


class Load:
    """`procs` client processes (spawned: no gRPC state crosses a fork)."""

    def __init__(self, opts, target, extra_options=()):
        ctx = mp.get_context("spawn")
        self.stop_ev = ctx.Event()
        self.out = ctx.Queue()
        self.procs = [
            ctx.Process(
                target=load_worker,
                args=(target, opts.threads, self.stop_ev, opts.until, self.out, list(extra_options)),
                daemon=True,
            )
            for _ in range(opts.procs)
        ]
        for p in self.procs:
            p.start()

    def finish(self):
        """Stops the clients; their totals added up."""
        self.stop_ev.set()
        total = {"ok": 0, "failed": {}, "trailers_lost": 0, "errors": [], "max_ms": 0.0}
        for _ in self.procs:
            r = self.out.get(timeout=30)
            total["ok"] += r["ok"]
            total["trailers_lost"] += r["trailers_lost"]
            for k, v in r["failed"].items():
                total["failed"][k] = total["failed"].get(k, 0) + v
            total["errors"] += r["errors"]
            total["max_ms"] = max(total["max_ms"], r["max_ms"])
        for p in self.procs:
            p.join(timeout=10)
        total["failed_n"] = sum(total["failed"].values())
        return total


# ---------------------------------------------------------------------- checks
class Checks:
    def __init__(self):
        self.results = []

    def check(self, ok, what):
        self.results.append((ok, what))
        log(f"{'ok' if ok else 'FAIL'}: {what}")
        return ok

    def spread(self, d, label):
        s, total = shares(d)
        even = 1 / len(d)
        worst = max(abs(v - even) / even for v in s.values()) if total else 1.0
        self.check(
            total > 0 and worst <= 0.15,
            f"{label}: spread {fmt_shares(d)}; largest deviation from an even share "
            f"({even * 100:.1f} %) {worst * 100:.1f} % (limit 15 %)",
        )
        return worst

    def failed(self, res, label):
        """No failed call (those whose answer lost its trailers are also counted
        apart)."""
        err = "; ".join(res["errors"])
        lost = res["trailers_lost"]
        self.check(
            res["failed_n"] == 0,
            f"{label}: {res['ok']} calls OK, {res['failed_n']} failed {res['failed'] or ''}"
            f"{f', of which {lost} lost their trailers' if lost else ''}"
            f"{' (' + err + ')' if err else ''}; slowest call {res['max_ms']:.0f} ms",
        )


def wait_exit(replica, seconds):
    try:
        return replica.proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return None


def poll_share(replicas, late, window, until, step=0.25):
    """Polls the counters until `until` (monotonic); returns (time, share) of the first
    `window`-second window in which `late` answered >= 15 % of the calls, else
    (None, best share seen)."""
    hist = [(time.monotonic(), counts(replicas))]
    best = 0.0
    while time.monotonic() < until:
        time.sleep(step)
        now = time.monotonic()
        hist.append((now, counts(replicas)))
        old = [h for h in hist if h[0] <= now - window]
        if not old:
            continue
        s, total = shares(delta(hist[-1][1], old[-1][1]))
        best = max(best, s.get(late.ip, 0.0))
        if total > 0 and s.get(late.ip, 0.0) >= 0.15:
            return now, s[late.ip]
    return None, best


def faults(replicas, dns, live, term_ip, kill_ip, checks, opts, label):
    """SIGTERM to one replica (out of DNS 1 s later), SIGKILL to another (out of DNS 2 s
    later), under load; checks the drained one exits 0."""
    term = next(r for r in replicas if r.ip == term_ip)
    kill = next(r for r in replicas if r.ip == kill_ip)
    log(f"{label}: SIGTERM to {term.ip}")
    t0 = time.monotonic()
    term.stop(signal.SIGTERM)
    exited = []
    waiter = threading.Thread(target=lambda: exited.append((wait_exit(term, opts.drain + 10), time.monotonic())))
    waiter.start()
    time.sleep(1)
    live.remove(term.ip)
    dns.set(live)
    time.sleep(1)
    log(f"{label}: SIGKILL to {kill.ip}")
    kill.stop(signal.SIGKILL)
    time.sleep(2)
    live.remove(kill.ip)
    dns.set(live)
    waiter.join()
    rc, t1 = exited[0]
    checks.check(rc == 0, f"{label}: {term.ip} drained and exited {rc} {t1 - t0:.1f} s after SIGTERM")
    wait_exit(kill, 5)
    time.sleep(3)


# ------------------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True, help="the tavli-engine release binary")
    ap.add_argument("--port", type=int, default=22051, help="gRPC port of every replica")
    ap.add_argument("--metrics-port", type=int, default=22091, help="/metrics port of every replica")
    ap.add_argument("--dns-port", type=int, default=22053, help="the DNS server's port on 127.0.0.1")
    ap.add_argument("--proxy-addr", default="127.0.0.6:22051", help="haproxy's listen address")
    ap.add_argument(
        "--ips",
        default="127.0.0.2,127.0.0.3,127.0.0.4,127.0.0.5",
        help="the four replicas' loopback addresses, comma-separated (the fourth starts mid-run)",
    )
    ap.add_argument("--name", default="tavli-engine-headless.default.svc.cluster.local")
    ap.add_argument("--max-age", type=float, default=5, help="--max-connection-age-seconds (0: no limit)")
    ap.add_argument("--grace", type=float, default=5, help="--max-connection-age-grace-seconds")
    ap.add_argument("--drain", type=int, default=5, help="--drain-seconds")
    ap.add_argument("--procs", type=int, default=3, help="client processes")
    ap.add_argument("--threads", type=int, default=4, help="threads per client process")
    ap.add_argument("--seconds", type=float, default=8, help="length of a spread measurement")
    ap.add_argument("--haproxy", default=shutil.which("haproxy"), help="haproxy binary ('' to skip phase 4)")
    ap.add_argument("--haproxy-cfg", default=os.path.join(os.path.dirname(__file__), "../deploy/proxy/haproxy.cfg"))
    ap.add_argument(
        "--proxy-soak",
        type=float,
        metavar="SECONDS",
        help="instead of the checks: three replicas behind haproxy, load for SECONDS, "
        "the failed calls counted (exit 1 if any); to compare --max-age or --haproxy-cfg",
    )
    ap.add_argument("--deadline", type=float, default=170, help="the whole run's limit in seconds")
    ap.add_argument("--logs", help="directory for the servers' logs (default: a temporary one, removed)")
    opts = ap.parse_args()

    signal.signal(signal.SIGALRM, lambda *_: sys.exit(f"FAIL: the run took more than {opts.deadline} s"))
    signal.alarm(int(opts.deadline))
    opts.until = time.time() + opts.deadline
    cl = Cluster(opts)
    try:
        return proxy_soak(cl) if opts.proxy_soak else run_checks(cl)
    finally:
        cl.close()


class Cluster:
    """The replicas (--ips: 127.0.0.2-.5), the DNS server and haproxy of a run."""

    def __init__(self, opts):
        self.opts = opts
        self.ips = opts.ips.split(",")
        if len(self.ips) != 4:
            raise SystemExit(f"--ips: four addresses, got {opts.ips!r}")
        self.logdir = opts.logs or tempfile.mkdtemp(prefix="tavli-cluster.")
        os.makedirs(self.logdir, exist_ok=True)
        self.replicas = [Replica(ip, opts, self.logdir) for ip in self.ips]
        self.dns = Headless(opts.name)
        self.dns_servers = [
            DNSServer(self.dns, port=opts.dns_port, address="127.0.0.1", tcp=tcp, logger=QuietLogger())
            for tcp in (False, True)
        ]
        for s in self.dns_servers:
            s.start_thread()
        self.haproxy = None
        self.target = f"dns://127.0.0.1:{opts.dns_port}/{opts.name}:{opts.port}"

    def start(self, replicas):
        """Starts `replicas`, waits until each is SERVING."""
        for r in replicas:
            r.start()
        for r in replicas:
            r.wait_serving()

    def start_proxy(self):
        """haproxy with --haproxy-cfg on --proxy-addr, resolving the DNS name; returns
        once calls through it succeed."""
        opts = self.opts
        env = dict(
            os.environ,
            TAVLI_PROXY_BIND=opts.proxy_addr,
            TAVLI_DNS=f"127.0.0.1:{opts.dns_port}",
            TAVLI_ENGINES=f"{opts.name}:{opts.port}",
        )
        hlog = open(os.path.join(self.logdir, "haproxy.log"), "ab")
        self.haproxy = subprocess.Popen(
            [opts.haproxy, "-db", "-f", opts.haproxy_cfg],
            env=env, stdout=hlog, stderr=subprocess.STDOUT, preexec_fn=die_with_parent,
        )
        hlog.close()
        log(f"haproxy on {opts.proxy_addr} (pid {self.haproxy.pid}), {opts.haproxy_cfg}")
        wait_proxy(opts.proxy_addr, self.haproxy, self.logdir)

    def proxy_load(self):
        """Clients of the proxy: the service config less its health checks (a proxy
        that balances per call would pass the Watch stream to one replica, whose
        NOT_SERVING while it drains would then stop every call to the proxy)."""
        return Load(self.opts, self.opts.proxy_addr, [("grpc.inhibit_health_checking", 1)])

    def close(self):
        for r in self.replicas:
            r.stop(signal.SIGKILL)
        if self.haproxy is not None and self.haproxy.poll() is None:
            self.haproxy.kill()
        for s in self.dns_servers:
            s.stop()
        if not self.opts.logs:
            shutil.rmtree(self.logdir, ignore_errors=True)


def run_checks(cl):
    """Phases 1-4 of the module's doc; prints the figures; 0 if every check passed."""
    opts, replicas, dns = cl.opts, cl.replicas, cl.dns
    checks = Checks()
    figures = {}
    # ---------------------------------------------------------------- 1. spread
    ips = cl.ips
    live = ips[:3]
    cl.start(replicas[:3])
    dns.set(live)
    # Re-resolution at most once a second (gRPC's default is 30 s, too slow for a run
    # of a minute; a cluster's max connection age is minutes, not seconds).
    extra = [("grpc.dns_min_time_between_resolutions_ms", 1000)]
    log(f"load: {opts.procs} processes x {opts.threads} threads on {cl.target}")
    t_start = time.monotonic()
    load = Load(opts, cl.target, extra)
    time.sleep(2)
    c0 = counts(replicas[:3])
    time.sleep(opts.seconds)
    c1 = counts(replicas[:3])
    figures["spread"] = checks.spread(delta(c1, c0), "1. three replicas")
    # ------------------------------------------------------------- 2. scale-out
    late = replicas[3]
    t_launch = time.monotonic()
    cl.start([late])
    t_join = time.monotonic()
    live.append(late.ip)
    dns.set(live)
    limit = (opts.max_age or 0) + opts.grace + 5
    reached, share = poll_share(replicas, late, 2.0, t_join + limit)
    if reached is None:
        checks.check(False, f"2. the late replica {late.ip} never carried 15 % within {limit:.0f} s "
                            f"(best 2 s window {share * 100:.1f} %)")
    else:
        checks.check(True, f"2. the late replica {late.ip} carried {share * 100:.1f} % of the calls "
                           f"(2 s window) {reached - t_join:.1f} s after joining the DNS answer "
                           f"({reached - t_launch:.1f} s after its start; limit {limit:.0f} s)")
    c2 = counts(replicas)
    time.sleep(opts.seconds / 2)
    d4 = delta(counts(replicas), c2)
    figures["late_share"] = shares(d4)[0][late.ip]
    log(f"2. four replicas, the next {opts.seconds / 2:.0f} s: {fmt_shares(d4)}")
    log(f"   the clients asked the DNS server for A records {dns.queries_since(t_start)} times")
    # ---------------------------------------------------------------- 3. faults
    faults(replicas, dns, live, ips[0], ips[1], checks, opts, "3.")
    res = load.finish()
    checks.failed(res, "1.-3. balanced client (service config)")
    figures["failed"] = res["failed_n"]
    log(f"1.-3. the replicas' gRPC connections: {closed_by_age(replicas)}")
    # ----------------------------------------------------------------- 4. proxy
    if opts.haproxy:
        cl.start(replicas[:2])
        live = list(ips)
        dns.set(live)
        cl.start_proxy()
        load = cl.proxy_load()
        time.sleep(2)
        c0 = counts(replicas)
        time.sleep(opts.seconds)
        figures["proxy_spread"] = checks.spread(delta(counts(replicas), c0), "4. haproxy, four replicas")
        faults(replicas, dns, live, ips[2], ips[3], checks, opts, "4.")
        res = load.finish()
        # Every call, those whose answer lost its trailers included (counted apart:
        # what a TCP reset from a replica closing an aged connection did to haproxy
        # before the server's lingering close; docs/deploy.md, "Scaling out").
        checks.failed(res, "4. through haproxy")
        figures["proxy_failed"] = res["failed_n"]
        figures["proxy_lost"] = res["trailers_lost"]
        retried, abnormal = proxy_log(cl.logdir)
        log(f"4. haproxy's log: {retried} calls sent again to another replica, "
            f"{abnormal} ended abnormally (its termination state)")
        log(f"4. the replicas' gRPC connections: {closed_by_age(replicas[:2])} (the two restarted ones)")
    else:
        log("4. SKIP: no haproxy")
    bad = [what for ok, what in checks.results if not ok]
    print(
        "CLUSTER: spread (largest deviation) {:.1f} %, late replica share {:.1f} %, failed calls {}{}".format(
            figures.get("spread", 1) * 100,
            figures.get("late_share", 0) * 100,
            figures.get("failed", "?"),
            ", via haproxy: spread {:.1f} %, failed calls {} ({} of them trailers lost)".format(
                figures["proxy_spread"] * 100, figures["proxy_failed"], figures["proxy_lost"]
            )
            if "proxy_failed" in figures
            else "",
        )
    )
    print(f"cluster: {len(checks.results) - len(bad)} passed, {len(bad)} failed")
    return 1 if bad else 0


def proxy_soak(cl):
    """Three replicas behind haproxy, load for --proxy-soak seconds, no faults; prints
    the calls, the failed ones and the replicas' connections closed by age."""
    opts = cl.opts
    cl.start(cl.replicas[:3])
    cl.dns.set(cl.ips[:3])
    cl.start_proxy()
    log(f"proxy soak: {opts.procs} processes x {opts.threads} threads, {opts.proxy_soak:.0f} s, "
        f"max connection age {opts.max_age or 'none'}")
    load = cl.proxy_load()
    time.sleep(opts.proxy_soak)
    res = load.finish()
    counts(cl.replicas[:3])
    print(
        f"PROXY SOAK: {res['ok'] + res['failed_n']} calls, {res['failed_n']} failed"
        f"{' ' + str(res['failed']) if res['failed'] else ''} ({res['trailers_lost']} lost their trailers); "
        f"{opts.haproxy_cfg}; "
        f"max connection age {opts.max_age or 'none'}: {closed_by_age(cl.replicas[:3])}"
    )
    return 1 if res["failed_n"] else 0


def proxy_log(logdir):
    """(calls haproxy retried, calls with an abnormal termination state) from its log
    (option httplog: ... STATUS BYTES - - TERM actconn/feconn/beconn/srvconn/retries)."""
    retried = abnormal = 0
    line = re.compile(r' \d{3} \d+ \S+ \S+ (\S{4}) \d+/\d+/\d+/\d+/\+?(\d+) ')
    with open(os.path.join(logdir, "haproxy.log"), errors="replace") as f:
        for m in map(line.search, f):
            if m:
                retried += int(m.group(2)) > 0
                abnormal += m.group(1) != "----"
    return retried, abnormal


def wait_proxy(addr, haproxy, logdir, timeout=15):
    """Until health Check through the proxy answers SERVING a few times in a row."""
    deadline = time.monotonic() + timeout
    with grpc.insecure_channel(addr) as ch:
        health = health_pb2_grpc.HealthStub(ch)
        good = 0
        while time.monotonic() < deadline and good < 8:
            if haproxy.poll() is not None:
                with open(os.path.join(logdir, "haproxy.log"), errors="replace") as f:
                    raise SystemExit(f"haproxy exited with {haproxy.returncode}: {f.read()[-2000:]}")
            try:
                r = health.Check(health_pb2.HealthCheckRequest(service=SERVICE), timeout=1)
                good = good + 1 if r.status == health_pb2.HealthCheckResponse.SERVING else 0
            except grpc.RpcError:
                good = 0
            time.sleep(0.25)
    if good < 8:
        raise SystemExit(f"no SERVING through haproxy on {addr} after {timeout} s")


if __name__ == "__main__":
    sys.exit(main())
