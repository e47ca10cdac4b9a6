"""A bounded load test of volt-serve on loopback: 240 concurrent streaming
requests (well past the plan's max_num_seqs of 32, so most of them queue),
of which about a third disconnect at a random point (before the first
token, mid-stream, or after the last one).

Afterwards the server must be healthy, hold no KV-cache blocks, and have
run nothing left over; every request that completed must have produced
exactly the greedy output the same request gives alone; and the metrics'
counters must add up with what the clients saw.
"""

import http.client
import json
import os
import random
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

NUM_REQUESTS = 240
WORDS = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi "
         "rho sigma tau upsilon phi chi psi omega").split()


def make_cases():
    rng = random.Random(1234)
    cases = []
    for i in range(16):
        prompt = " ".join(rng.choice(WORDS) for _ in range(rng.choice([2, 8, 40, 150])))
        cases.append({"prompt": prompt, "max_tokens": rng.choice([4, 16, 48]),
                      "temperature": 0})
    # Past EOS, so that they run long enough to be interrupted.
    cases.append({"prompt": "Hello", "max_tokens": 200, "ignore_eos": True, "temperature": 0})
    return cases


def stream_request(port, body, disconnect_after, result):
    """Streams one completion; disconnects after `disconnect_after` events
    (None: reads to the end). Fills `result`."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request("POST", "/v1/completions",
                     body=json.dumps(dict(body, stream=True,
                                          stream_options={"include_usage": True})),
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        result["status"] = resp.status
        if resp.status != 200:
            result["body"] = resp.read()
            return
        text, events, usage, finish = [], 0, None, None
        if disconnect_after == 0:
            result["disconnected"] = True
            return
        lines = []
        while True:
            line = resp.readline()
            if not line:
                break
            if line != b"\n":
                lines.append(line)
                continue
            data = b"".join(lines).decode("utf-8")
            lines = []
            assert data.startswith("data: "), data
            payload = data[len("data: "):].rstrip("\n")
            if payload == "[DONE]":
                result["done"] = True
                break
            chunk = json.loads(payload)
            if "error" in chunk:
                result["error"] = chunk["error"]
                continue
            if chunk.get("usage"):
                usage = chunk["usage"]
            for c in chunk["choices"]:
                text.append(c["text"])
                if c["finish_reason"]:
                    finish = c["finish_reason"]
            events += 1
            if disconnect_after is not None and events >= disconnect_after:
                result["disconnected"] = True
                return
        result.update(text="".join(text), usage=usage, finish=finish)
    except Exception as e:  # noqa: BLE001 - reported by the test
        result["exception"] = repr(e)
    finally:
        conn.close()


class LoadTest(unittest.TestCase):
    def test_concurrent_streams_with_disconnects(self):
        cases = make_cases()
        with harness.Server("--no-access-log") as server:
            # Each case alone, one at a time: the reference outputs.
            reference = []
            for case in cases:
                status, _, body = server.post("/v1/completions", case)
                self.assertEqual(status, 200, body)
                reference.append((body["choices"][0]["text"], body["choices"][0]["finish_reason"],
                                  body["usage"]))
            # The HTTP counters are updated after a response is sent
            # (httplib's logger): wait until the reference requests are
            # counted, or they would land in the deltas below.
            deadline = time.time() + 10
            while True:
                before = server.metrics()
                counted = harness.metric(before, "volt:http_requests_total",
                                         handler="/v1/completions", status="200")
                if counted >= len(cases) or time.time() > deadline:
                    break
                time.sleep(0.02)

            rng = random.Random(99)
            plan = []
            for i in range(NUM_REQUESTS):
                case = i % len(cases)
                r = rng.random()
                # About a third disconnect: at once, after a few events, or late.
                disconnect = None if r < 0.66 else rng.choice([0, 1, 2, 3, 5, 8, 30])
                plan.append((case, disconnect))
            results = [dict() for _ in plan]
            start = threading.Barrier(NUM_REQUESTS)

            def run(i):
                start.wait()
                case, disconnect = plan[i]
                stream_request(server.port, cases[case], disconnect, results[i])

            threads = [threading.Thread(target=run, args=(i,)) for i in range(NUM_REQUESTS)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(300)
            self.assertFalse(any(t.is_alive() for t in threads), "requests did not finish")

            for i, res in enumerate(results):
                self.assertNotIn("exception", res, (i, res))
                self.assertEqual(res.get("status"), 200, (i, res))
                self.assertNotIn("error", res, (i, res))
            completed = [i for i, r in enumerate(results) if r.get("done")]
            disconnected = [i for i, r in enumerate(results) if r.get("disconnected")]
            self.assertEqual(len(completed) + len(disconnected), NUM_REQUESTS)
            self.assertGreater(len(disconnected), 40)
            for i in completed:
                text, finish, usage = reference[plan[i][0]]
                self.assertEqual(results[i]["text"], text, f"request {i} (case {plan[i][0]})")
                self.assertEqual(results[i]["finish"], finish)
                self.assertEqual(results[i]["usage"], usage)

            # Cancellation is asynchronous (the engine thread delivers it):
            # wait, boundedly, for the server to settle.
            deadline = time.time() + 30
            while time.time() < deadline:
                after = server.metrics()
                counted = sum(
                    harness.metric(after, "volt:http_requests_total",
                                   handler="/v1/completions", status=code) -
                    harness.metric(before, "volt:http_requests_total",
                                   handler="/v1/completions", status=code)
                    for code in ("200", "499"))
                if (harness.metric(after, "volt:num_requests_running") == 0 and
                        harness.metric(after, "volt:num_requests_waiting") == 0 and
                        harness.metric(after, "volt:request_success_total") -
                        harness.metric(before, "volt:request_success_total") == NUM_REQUESTS and
                        counted >= NUM_REQUESTS and
                        harness.metric(after, "volt:kv_cache_usage_perc") == 0):
                    break
                time.sleep(0.05)
            self.assertEqual(server.request("GET", "/health")[0], 200)
            self.assertEqual(harness.metric(after, "volt:kv_cache_usage_perc"), 0)
            self.assertEqual(harness.metric(after, "volt:kv_cache_used_blocks"), 0)
            self.assertEqual(harness.metric(after, "volt:num_requests_running"), 0)
            self.assertEqual(harness.metric(after, "volt:num_requests_waiting"), 0)

            def delta(name, **labels):
                return (harness.metric(after, name, **labels) -
                        harness.metric(before, name, **labels))

            # Every request's one sequence finished exactly once.
            self.assertEqual(delta("volt:request_success_total"), NUM_REQUESTS)
            finished_normally = (delta("volt:request_success_total", finished_reason="stop") +
                                 delta("volt:request_success_total", finished_reason="length"))
            aborted = delta("volt:request_success_total", finished_reason="abort")
            self.assertGreaterEqual(finished_normally, len(completed))
            self.assertLessEqual(aborted, len(disconnected))
            self.assertGreater(aborted, 0)
            # Each HTTP request is counted once: 200, or 499 when the client left first.
            ok = delta("volt:http_requests_total", handler="/v1/completions", status="200")
            gone = delta("volt:http_requests_total", handler="/v1/completions", status="499")
            self.assertEqual(ok + gone, NUM_REQUESTS)
            self.assertGreaterEqual(ok, len(completed))
            self.assertEqual(delta("volt:requests_rejected_total"), 0)
            # Tokens: what the engine generated is what the finished sequences
            # report, and at least what the clients that stayed received.
            generated = delta("volt:generation_tokens_total")
            self.assertEqual(generated, delta("volt:request_generation_tokens_total"))
            received = sum(results[i]["usage"]["completion_tokens"] for i in completed)
            self.assertGreaterEqual(generated, received)
            prompts_completed = sum(results[i]["usage"]["prompt_tokens"] for i in completed)
            self.assertGreaterEqual(delta("volt:prompt_tokens_total"), prompts_completed)
            self.assertLessEqual(delta("volt:prompt_tokens_total"),
                                 delta("volt:request_prompt_tokens_total"))
            self.assertEqual(delta("volt:e2e_request_latency_seconds_count"), NUM_REQUESTS)
            self.assertGreaterEqual(delta("volt:time_to_first_token_seconds_count"),
                                    len(completed))
            self.assertEqual(delta("volt:time_to_first_token_seconds_count") +
                             delta("volt:inter_token_latency_seconds_count"), generated)

            # Still serving, with the same outputs.
            for case, (text, _, _) in zip(cases[:4], reference):
                status, _, body = server.post("/v1/completions", case)
                self.assertEqual((status, body["choices"][0]["text"]), (200, text))
            self.assertEqual(server.stop(), 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
