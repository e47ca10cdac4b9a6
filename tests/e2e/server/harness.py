"""Starts and stops volt-serve on a tiny plan, for the server's e2e tests.

The tests find the binaries in $VOLT_BIN_DIR (ctest sets it to the build's
bin/ folder). A plan is compiled once per test process from a synthetic
model (volt-mkmodel, fixed seed) into a temporary folder. Each server is
started on a free loopback port (--port 0; the port is read from the
startup line) and stopped with SIGTERM, which must end it with status 0.
"""

import atexit
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time

BIN_DIR = os.environ.get("VOLT_BIN_DIR", "")
_plan_dir = None


def binary(name):
    if not BIN_DIR:
        raise RuntimeError("VOLT_BIN_DIR is not set (the folder holding volt-serve, volt-run, "
                           "volt-mkmodel and voltc)")
    path = os.path.join(BIN_DIR, name)
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"{path}: not built (build the targets volt-serve volt-run "
                           "volt-mkmodel voltc)")
    return path


def speculative_plan(k=4):
    """tiny_plan()'s model compiled with n-gram speculative decoding."""
    tiny_plan()
    path = os.path.join(_plan_dir, f"speculative{k}.vplan")
    if not os.path.exists(path):
        spec = os.path.join(_plan_dir, f"speculative{k}.yaml")
        with open(spec, "w") as f:
            f.write("model: model\ntarget: cpu\nmax_num_seqs: 32\nmax_num_batched_tokens: 256\n"
                    f"speculative: {{method: ngram, num_speculative_tokens: {k}, "
                    "prompt_lookup_min: 1, prompt_lookup_max: 3}\n")
        subprocess.run([binary("voltc"), "compile", spec, "-o", path],
                       check=True, capture_output=True)
    return path


def prefix_cache_plan():
    """tiny_plan()'s model compiled with enable_prefix_caching."""
    tiny_plan()
    path = os.path.join(_plan_dir, "prefix.vplan")
    if not os.path.exists(path):
        spec = os.path.join(_plan_dir, "prefix.yaml")
        with open(spec, "w") as f:
            f.write("model: model\ntarget: cpu\nmax_num_seqs: 32\nmax_num_batched_tokens: 256\n"
                    "enable_prefix_caching: true\n")
        subprocess.run([binary("voltc"), "compile", spec, "-o", path],
                       check=True, capture_output=True)
    return path


def generation_config_plan(fields):
    """tiny_plan()'s weights in a model folder whose generation_config.json
    also has the sampling `fields` (a dict), compiled; returns the plan."""
    import json
    tiny_plan()
    name = "gen_" + "_".join(f"{k}{v}" for k, v in sorted(fields.items()))
    path = os.path.join(_plan_dir, name + ".vplan")
    if not os.path.exists(path):
        model = os.path.join(_plan_dir, name)
        shutil.copytree(os.path.join(_plan_dir, "model"), model)
        config_path = os.path.join(model, "generation_config.json")
        with open(config_path) as f:
            config = json.load(f)
        config.update(fields)
        with open(config_path, "w") as f:
            json.dump(config, f)
        spec = os.path.join(_plan_dir, name + ".yaml")
        with open(spec, "w") as f:
            f.write(f"model: {name}\ntarget: cpu\nmax_num_seqs: 32\n"
                    "max_num_batched_tokens: 256\n")
        subprocess.run([binary("voltc"), "compile", spec, "-o", path],
                       check=True, capture_output=True)
    return path


def tiny_plan():
    """The path of a tiny qwen3-moe plan for the cpu backend (built once)."""
    global _plan_dir
    if _plan_dir is None:
        _plan_dir = tempfile.mkdtemp(prefix="volt-serve-e2e-")
        atexit.register(shutil.rmtree, _plan_dir, True)
        subprocess.run([binary("volt-mkmodel"), "--family", "qwen3-moe", "--seed", "7",
                        "-o", os.path.join(_plan_dir, "model")],
                       check=True, capture_output=True)
        with open(os.path.join(_plan_dir, "spec.yaml"), "w") as f:
            f.write("model: model\ntarget: cpu\nmax_num_seqs: 32\n"
                    "max_num_batched_tokens: 256\n")
        subprocess.run([binary("voltc"), "compile", os.path.join(_plan_dir, "spec.yaml"),
                        "-o", os.path.join(_plan_dir, "tiny.vplan")],
                       check=True, capture_output=True)
    return os.path.join(_plan_dir, "tiny.vplan")


def volt_run(prompt=None, prompt_ids=None, chat=None, max_tokens=16):
    """Greedy output of volt-run: (text, token ids)."""
    args = [binary("volt-run"), tiny_plan(), "--max-tokens", str(max_tokens), "--print-ids",
            "--temperature", "0"]
    if prompt is not None:
        args += ["--prompt", prompt]
    if prompt_ids is not None:
        args += ["--prompt-ids", ",".join(str(i) for i in prompt_ids)]
    if chat is not None:
        args += ["--chat", chat]
    out = subprocess.run(args, check=True, capture_output=True).stdout.decode("utf-8")
    text, _, ids = out.rpartition("\nids:")
    return text, [int(t) for t in ids.split()]


class Server:
    """A running volt-serve; use as a context manager."""

    def __init__(self, *flags, plan=None, env=None, health_headers=None):
        self.flags = list(flags)
        self.health_headers = health_headers
        self.plan = plan or tiny_plan()
        self.env = env
        self.proc = None
        self.port = None
        self.stderr_lines = []
        self._reader = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            self.stop()

    def start(self, wait_ready=True):
        env = dict(os.environ)
        if self.env:
            env.update(self.env)
        self.proc = subprocess.Popen(
            [binary("volt-serve"), self.plan, "--host", "127.0.0.1", "--port", "0"] + self.flags,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        port_found = threading.Event()

        def read():
            for raw in self.proc.stderr:
                line = raw.decode("utf-8", "replace").rstrip("\n")
                self.stderr_lines.append(line)
                m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
                if m:
                    self.port = int(m.group(1))
                    port_found.set()
            port_found.set()

        self._reader = threading.Thread(target=read, daemon=True)
        self._reader.start()
        if not port_found.wait(30) or self.port is None:
            self.proc.kill()
            raise RuntimeError("volt-serve did not start:\n" + "\n".join(self.stderr_lines))
        if wait_ready:
            deadline = time.time() + 30
            while time.time() < deadline:
                status, _, _ = self.request("GET", "/health", headers=self.health_headers)
                if status == 200:
                    return
                time.sleep(0.02)
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError("volt-serve did not become healthy:\n" +
                               "\n".join(self.stderr_lines))

    def stop(self, sig=signal.SIGTERM, timeout=60):
        """Signals the server and returns its exit status."""
        self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        self._reader.join(5)
        self.proc.stderr.close()
        return code

    def kill(self):
        """Ends the server at once if it still runs (cleanup after a failure)."""
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.port}"

    def request(self, method, path, body=None, headers=None, timeout=60):
        """One request on a fresh connection: (status, headers dict, body bytes)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            if isinstance(body, (dict, list)):
                body = json.dumps(body)
            hdrs = {"Content-Type": "application/json"} if body is not None else {}
            hdrs.update(headers or {})
            conn.request(method, path, body=body, headers=hdrs)
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
        except (ConnectionError, OSError):
            return None, {}, b""
        finally:
            conn.close()

    def post(self, path, body, headers=None, timeout=60):
        status, hdrs, data = self.request("POST", path, body, headers, timeout)
        try:
            parsed = json.loads(data) if data else None
        except ValueError:
            parsed = None
        return status, hdrs, parsed

    def metrics(self, headers=None):
        """The /metrics samples: {(name, frozenset(labels)): value}."""
        status, _, data = self.request("GET", "/metrics", headers=headers)
        if status != 200:
            raise RuntimeError(f"/metrics answered {status}")
        return parse_metrics(data.decode("utf-8"))

    def access_log(self):
        """The JSON access-log lines written so far."""
        out = []
        for line in self.stderr_lines:
            if line.startswith("{"):
                out.append(json.loads(line))
        return out


def parse_metrics(text):
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$', line)
        if not m:
            raise ValueError(f"not a Prometheus sample line: {line!r}")
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        samples[(m.group(1), labels)] = float(m.group(4))
    return samples


def metric(samples, name, **labels):
    """Sum of the samples of `name` whose labels include `labels`."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= set(ls))


def sse_events(data):
    """The `data:` payloads of a server-sent event stream."""
    events = []
    for block in data.decode("utf-8").split("\n\n"):
        if block.startswith("data: "):
            events.append(block[len("data: "):])
    return events
