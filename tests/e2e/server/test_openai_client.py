"""volt-serve against the official `openai` Python client.

Written against openai 3.57.0 (PyPI). The package is not part of Debian; it
is installed with pip by scripts/install-deps.sh. Without it this test
fails (it does not skip), saying so.

Each check compares with volt-run on the same tiny plan: greedy outputs of
the server, streamed or not, completions or chat, must be exactly what
volt-run generates for the same prompt.
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

try:
    import openai
except ImportError:
    openai = None

PROMPTS = ["Hello world, this is a test", "The capital of France is", "1 2 3 4 5"]


class OpenAIClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if openai is None:
            raise RuntimeError(
                "the 'openai' Python package is missing: pip install openai "
                "(scripts/install-deps.sh installs it); this test needs the official client")
        cls.server = harness.Server("--api-key", "sk-test-key")
        cls.server.start()
        cls.client = openai.OpenAI(base_url=cls.server.base_url + "/v1", api_key="sk-test-key",
                                   max_retries=0, timeout=60)
        cls.model = "model"

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, "server", None) and cls.server.proc:
            code = cls.server.stop()
            cls.server.kill()
            assert code == 0, f"volt-serve exited with {code}"

    def test_models(self):
        models = self.client.models.list()
        self.assertEqual([m.id for m in models.data], [self.model])
        self.assertEqual(self.client.models.retrieve(self.model).id, self.model)

    def test_completion_greedy_equals_volt_run(self):
        for prompt in PROMPTS:
            text, ids = harness.volt_run(prompt=prompt, max_tokens=16)
            r = self.client.completions.create(model=self.model, prompt=prompt, max_tokens=16,
                                               temperature=0)
            self.assertEqual(r.object, "text_completion")
            self.assertEqual(len(r.choices), 1)
            self.assertEqual(r.choices[0].text, text, prompt)
            self.assertEqual(r.usage.completion_tokens, len(ids))
            self.assertEqual(r.usage.total_tokens,
                             r.usage.prompt_tokens + r.usage.completion_tokens)
            self.assertEqual(r.choices[0].finish_reason,
                             "length" if len(ids) == 16 else "stop")

    def test_completion_token_ids_equal_volt_run(self):
        prompt = PROMPTS[1]
        _, ids = harness.volt_run(prompt=prompt, max_tokens=12)
        r = self.client.completions.create(
            model=self.model, prompt=prompt, max_tokens=12, temperature=0, logprobs=2,
            extra_body={"return_tokens_as_token_ids": True})
        tokens = [int(t.split(":")[1]) for t in r.choices[0].logprobs.tokens]
        self.assertEqual(tokens, ids)
        for lp, top in zip(r.choices[0].logprobs.token_logprobs,
                           r.choices[0].logprobs.top_logprobs):
            self.assertLessEqual(lp, 0.0)
            # Greedy: the chosen token is the most likely one.
            self.assertAlmostEqual(lp, max(top.values()), places=5)
            self.assertLessEqual(len(top), 3)

    def test_completion_streaming_equals_volt_run(self):
        for prompt in PROMPTS:
            text, ids = harness.volt_run(prompt=prompt, max_tokens=16)
            stream = self.client.completions.create(
                model=self.model, prompt=prompt, max_tokens=16, temperature=0, stream=True,
                stream_options={"include_usage": True})
            pieces, finish, usage = [], None, None
            for chunk in stream:
                if chunk.usage is not None:
                    usage = chunk.usage
                    self.assertEqual(chunk.choices, [])
                for c in chunk.choices:
                    pieces.append(c.text)
                    if c.finish_reason:
                        finish = c.finish_reason
            self.assertEqual("".join(pieces), text)
            self.assertIn(finish, ("stop", "length"))
            self.assertIsNotNone(usage)
            self.assertEqual(usage.completion_tokens, len(ids))

    def test_prompt_as_token_ids(self):
        status, _, body = self.server.post("/tokenize", {"prompt": PROMPTS[0]},
                                           headers={"Authorization": "Bearer sk-test-key"})
        self.assertEqual(status, 200)
        text, _ = harness.volt_run(prompt_ids=body["tokens"], max_tokens=10)
        r = self.client.completions.create(model=self.model, prompt=body["tokens"],
                                           max_tokens=10, temperature=0)
        self.assertEqual(r.choices[0].text, text)

    def test_chat_greedy_equals_volt_run(self):
        text, ids = harness.volt_run(chat="Hi there", max_tokens=12)
        r = self.client.chat.completions.create(
            model=self.model, messages=[{"role": "user", "content": "Hi there"}], max_tokens=12,
            temperature=0)
        self.assertEqual(r.object, "chat.completion")
        self.assertEqual(r.choices[0].message.role, "assistant")
        self.assertEqual(r.choices[0].message.content, text)
        self.assertEqual(r.usage.completion_tokens, len(ids))

    def test_chat_streaming_equals_volt_run(self):
        text, ids = harness.volt_run(chat="Tell me a story", max_tokens=20)
        stream = self.client.chat.completions.create(
            model=self.model, messages=[{"role": "user", "content": "Tell me a story"}],
            max_completion_tokens=20, temperature=0, stream=True,
            stream_options={"include_usage": True})
        content, roles, finish, usage = [], [], None, None
        for chunk in stream:
            self.assertEqual(chunk.object, "chat.completion.chunk")
            if chunk.usage is not None:
                usage = chunk.usage
            for c in chunk.choices:
                if c.delta.role:
                    roles.append(c.delta.role)
                if c.delta.content:
                    content.append(c.delta.content)
                if c.finish_reason:
                    finish = c.finish_reason
        self.assertEqual(roles, ["assistant"])
        self.assertEqual("".join(content), text)
        self.assertIn(finish, ("stop", "length"))
        self.assertEqual(usage.completion_tokens, len(ids))

    def test_chat_content_parts_and_logprobs(self):
        r = self.client.chat.completions.create(
            model=self.model,
            messages=[{"role": "user", "content": [{"type": "text", "text": "Hi there"}]}],
            max_tokens=5, temperature=0, logprobs=True, top_logprobs=3)
        text, _ = harness.volt_run(chat="Hi there", max_tokens=5)
        self.assertEqual(r.choices[0].message.content, text)
        content = r.choices[0].logprobs.content
        self.assertEqual(len(content), 5)
        for entry in content:
            self.assertEqual(len(entry.top_logprobs), 3)
            self.assertAlmostEqual(entry.logprob, entry.top_logprobs[0].logprob, places=5)
            self.assertEqual(bytes(entry.bytes), entry.token.encode("utf-8"))

    def test_n_and_seed(self):
        r = self.client.completions.create(model=self.model, prompt=PROMPTS[0], max_tokens=8,
                                           n=3, temperature=1.0, seed=1234)
        self.assertEqual([c.index for c in r.choices], [0, 1, 2])
        again = self.client.completions.create(model=self.model, prompt=PROMPTS[0],
                                               max_tokens=8, n=3, temperature=1.0, seed=1234)
        self.assertEqual([c.text for c in r.choices], [c.text for c in again.choices])
        self.assertGreaterEqual(r.usage.completion_tokens, 3)
        self.assertLessEqual(r.usage.completion_tokens, 3 * 8)
        # seed + i per choice: choice 1 of seed s is choice 0 of seed s + 1.
        shifted = self.client.completions.create(model=self.model, prompt=PROMPTS[0],
                                                 max_tokens=8, temperature=1.0, seed=1235)
        self.assertEqual(shifted.choices[0].text, r.choices[1].text)

    def test_stop_string(self):
        text, _ = harness.volt_run(prompt=PROMPTS[0], max_tokens=16)
        # Stop at a piece of the greedy output: the text ends right before it.
        stop = text[4:7]
        self.assertTrue(stop)
        r = self.client.completions.create(model=self.model, prompt=PROMPTS[0], max_tokens=16,
                                           temperature=0, stop=[stop])
        self.assertEqual(r.choices[0].finish_reason, "stop")
        self.assertEqual(r.choices[0].text, text[:text.index(stop)])

    def test_errors_raise_the_matching_exceptions(self):
        with self.assertRaises(openai.NotFoundError) as e:
            self.client.completions.create(model="no-such-model", prompt="x", max_tokens=1)
        self.assertIn("no-such-model", str(e.exception))
        with self.assertRaises(openai.BadRequestError) as e:
            self.client.completions.create(model=self.model, prompt="x", max_tokens=1,
                                           top_p=2.0)
        self.assertIn("top_p", str(e.exception))
        with self.assertRaises(openai.BadRequestError):
            self.client.completions.create(model=self.model, prompt="x", max_tokens=100000)
        bad = openai.OpenAI(base_url=self.server.base_url + "/v1", api_key="wrong",
                            max_retries=0)
        with self.assertRaises(openai.AuthenticationError):
            bad.models.list()


WEATHER = [{"type": "function", "function": {
    "name": "get_weather", "description": "the weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
# The prompt ends inside an open <think>, as Qwen3.5's template writes it
# with thinking on: here by continuing an assistant turn that opens it.
THINKING = {"messages": [{"role": "user", "content": "Weather in Paris?"},
                         {"role": "assistant", "content": "<think>\n"}],
            "extra_body": {"continue_final_message": True, "add_generation_prompt": False}}


class ToolsAndReasoningTest(unittest.TestCase):
    """--reasoning-parser qwen3 and --tool-call-parser qwen3_coder through the client.
    The random tiny model is steered with logit_bias: one token repeated."""

    @classmethod
    def setUpClass(cls):
        if openai is None:
            raise RuntimeError("the 'openai' Python package is missing (scripts/install-deps.sh)")
        cls.server = harness.Server("--reasoning-parser", "qwen3", "--enable-auto-tool-choice",
                                    "--tool-call-parser", "qwen3_coder")
        cls.server.start()
        cls.client = openai.OpenAI(base_url=cls.server.base_url + "/v1", api_key="none",
                                   max_retries=0, timeout=60)

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, "server", None) and cls.server.proc:
            code = cls.server.stop()
            cls.server.kill()
            assert code == 0, f"volt-serve exited with {code}"

    def token(self, text):
        status, _, body = self.server.post("/tokenize", {"prompt": text, "add_special_tokens": False})
        self.assertEqual(status, 200)
        ids = body["tokens"]
        self.assertEqual(len(ids), 1, text)
        return ids[0]

    def chat(self, **kw):
        kw.setdefault("messages", [{"role": "user", "content": "Weather in Paris?"}])
        return self.client.chat.completions.create(model="model", temperature=0, **kw)

    def test_named_tool_choice_gives_a_call_streamed_or_not(self):
        newline = {str(self.token("\n")): 100}
        choice = {"type": "function", "function": {"name": "get_weather"}}
        r = self.chat(tools=WEATHER, tool_choice=choice, logit_bias=newline, max_tokens=4)
        calls = r.choices[0].message.tool_calls
        self.assertEqual(len(calls), 1)
        self.assertEqual(calls[0].type, "function")
        self.assertEqual(calls[0].function.name, "get_weather")
        self.assertEqual(calls[0].function.arguments, "{}")
        self.assertTrue(calls[0].id.startswith("chatcmpl-tool-"))
        self.assertIsNone(r.choices[0].message.content)
        self.assertEqual(r.choices[0].finish_reason, "length")
        names, args, content = [], "", ""
        for chunk in self.chat(tools=WEATHER, tool_choice=choice, logit_bias=newline,
                               max_tokens=4, stream=True):
            for c in chunk.choices:
                content += c.delta.content or ""
                for t in c.delta.tool_calls or []:
                    self.assertEqual(t.index, 0)
                    names.append(t.function.name)
                    args += t.function.arguments
        self.assertEqual(names, ["get_weather"])
        self.assertEqual(args, "{}")
        self.assertEqual(content, "")

    def test_reasoning_content_when_the_prompt_opens_thinking(self):
        a = {str(self.token("a")): 100}
        r = self.chat(logit_bias=a, max_tokens=5, **THINKING)
        m = r.choices[0].message
        self.assertEqual(m.reasoning_content, "aaaaa")
        self.assertIsNone(m.content)
        streamed = ""
        for chunk in self.chat(logit_bias=a, max_tokens=5, stream=True, **THINKING):
            for c in chunk.choices:
                self.assertFalse(c.delta.content)
                streamed += getattr(c.delta, "reasoning_content", None) or ""
        self.assertEqual(streamed, "aaaaa")
        # Without an open <think>: content, no reasoning.
        r = self.chat(logit_bias=a, max_tokens=5)
        self.assertEqual(r.choices[0].message.content, "aaaaa")
        self.assertIsNone(r.choices[0].message.reasoning_content)

    def test_auto_and_required_on_random_output_never_fail(self):
        for choice in ("auto", "required"):
            r = self.chat(tools=WEATHER, tool_choice=choice, max_tokens=12)
            self.assertIn(r.choices[0].finish_reason, ("length", "stop", "tool_calls"))
        with self.assertRaises(openai.BadRequestError) as e:
            self.chat(tools=WEATHER, tool_choice={"type": "function",
                                                  "function": {"name": "nope"}}, max_tokens=2)
        self.assertIn("not among the request's tools", str(e.exception))

    def test_auto_needs_the_flags(self):
        plain = harness.Server()
        plain.start()
        try:
            client = openai.OpenAI(base_url=plain.base_url + "/v1", api_key="none", max_retries=0)
            with self.assertRaises(openai.BadRequestError) as e:
                client.chat.completions.create(model="model", tools=WEATHER, max_tokens=2,
                                               messages=[{"role": "user", "content": "hi"}])
            self.assertIn("--enable-auto-tool-choice", str(e.exception))
            r = client.chat.completions.create(model="model", tools=WEATHER, tool_choice="none",
                                               max_tokens=2,
                                               messages=[{"role": "user", "content": "hi"}])
            self.assertEqual(r.choices[0].message.tool_calls, [])
        finally:
            self.assertEqual(plain.stop(), 0)
            plain.kill()


if __name__ == "__main__":
    unittest.main(verbosity=2)
