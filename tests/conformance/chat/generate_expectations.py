#!/usr/bin/python3
"""Renders the chat templates in templates/ over the conversations in
conversations.json with Python's jinja2, set up exactly as Hugging Face
transformers sets it up in `_compile_jinja_template`, and writes the outputs
(or the errors) to expectations.json. volt's conformance test
(tests/unit/chat/ConformanceTest.cpp) renders the same cases and compares byte
for byte.

Run with Debian's interpreter and its python3-jinja2 (3.1.2 for the
committed file); no other package is needed:

    /usr/bin/python3 tests/conformance/chat/generate_expectations.py

`strftime_now` is fixed to 2025-03-14 09:26:53 (a Friday), the same time the
C++ test gives `ChatTemplate::setFixedTime`, so that templates that print
today's date render reproducibly.
"""
import datetime
import json
import os
import sys

import jinja2
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
FIXED_NOW = datetime.datetime(2025, 3, 14, 9, 26, 53)

# Special tokens as each model's tokenizer_config.json sets them; HF passes
# the non-null ones (`special_tokens_map`) to the template.
TEMPLATES = {
    "Qwen-Qwen2.5-7B-Instruct.jinja": {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
    "Qwen-Qwen3-0.6B.jinja": {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
    "meta-llama-Llama-3.1-8B-Instruct.jinja": {"bos_token": "<|begin_of_text|>",
                                               "eos_token": "<|eot_id|>"},
    "meta-llama-Llama-3.2-3B-Instruct.jinja": {"bos_token": "<|begin_of_text|>",
                                               "eos_token": "<|eot_id|>"},
    "mistralai-Mistral-7B-Instruct-v0.3.jinja": {"bos_token": "<s>", "eos_token": "</s>",
                                                 "unk_token": "<unk>"},
    "mistralai-Mixtral-8x7B-Instruct-v0.1.jinja": {"bos_token": "<s>", "eos_token": "</s>",
                                                   "unk_token": "<unk>"},
    "NousResearch-Hermes-3-Llama-3.1-70B-tool_use.jinja": {"bos_token": "<|begin_of_text|>",
                                                           "eos_token": "<|im_end|>"},
    "meetkai-functionary-medium-v3.2.jinja": {"bos_token": "<|begin_of_text|>",
                                              "eos_token": "<|eot_id|>"},
}

# Extra template variables some cases pass (apply_chat_template's **kwargs).
VARIANTS = {
    "Qwen-Qwen3-0.6B.jinja": [{}, {"enable_thinking": False}, {"enable_thinking": True}],
    "meta-llama-Llama-3.1-8B-Instruct.jinja": [{}, {"date_string": "01 Jan 2025"},
                                               {"tools_in_user_message": False}],
    "meta-llama-Llama-3.2-3B-Instruct.jinja": [{}, {"tools_in_user_message": False}],
}


class AssistantTracker(Extension):
    """transformers' {% generation %} tag; it only marks a span, so for
    rendering text it renders its body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    @jinja2.pass_eval_context
    def _generation_support(self, context, caller):
        return caller()


def make_environment():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(format):
        return FIXED_NOW.strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[AssistantTracker, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render(template, conversation, add_generation_prompt, special_tokens, extra):
    kwargs = dict(special_tokens)
    kwargs.update(extra)
    try:
        text = template.render(messages=conversation["messages"], tools=conversation.get("tools"),
                               documents=None, add_generation_prompt=add_generation_prompt,
                               **kwargs)
        return {"output": text}
    except jinja2.exceptions.TemplateError as e:
        # raise_exception raises TemplateError itself; jinja2's own errors
        # are subclasses.
        raised = type(e) is jinja2.exceptions.TemplateError
        return {"error": str(e), "raised": raised}
    except Exception as e:  # TypeError and the like, from Python operators
        return {"error": f"{type(e).__name__}: {e}", "raised": False}


def main():
    with open(os.path.join(HERE, "conversations.json"), encoding="utf-8") as f:
        conversations = json.load(f)
    env = make_environment()
    cases = []
    for name, special_tokens in TEMPLATES.items():
        with open(os.path.join(HERE, "templates", name), encoding="utf-8") as f:
            template = env.from_string(f.read())
        for conv_name, conversation in conversations.items():
            for extra in VARIANTS.get(name, [{}]):
                for add_generation_prompt in (True, False):
                    case = {"template": name, "conversation": conv_name,
                            "add_generation_prompt": add_generation_prompt,
                            "extra": {**special_tokens, **extra}}
                    case.update(render(template, conversation, add_generation_prompt,
                                       special_tokens, extra))
                    cases.append(case)
    out = {
        "generator": "tests/conformance/chat/generate_expectations.py",
        "jinja2": jinja2.__version__,
        "python": sys.version.split()[0],
        "fixed_now": FIXED_NOW.isoformat(),
        "cases": cases,
    }
    with open(os.path.join(HERE, "expectations.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    errors = sum(1 for c in cases if "error" in c)
    print(f"{len(cases)} cases ({errors} errors) over {len(conversations)} conversations "
          f"and {len(TEMPLATES)} templates")


if __name__ == "__main__":
    main()
