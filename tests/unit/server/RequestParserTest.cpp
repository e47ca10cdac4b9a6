//===- RequestParserTest.cpp - request bodies to validated requests -------===//
#include "runtime/server/JsonFields.h"
#include "runtime/server/RequestParser.h"

#include <gtest/gtest.h>

namespace volt::server {
namespace {

ParseLimits limits() {
  ParseLimits l;
  l.vocabSize = 1000;
  l.maxLogprobs = 20;
  l.maxChoices = 16;
  return l;
}

template <typename T> const ApiError &errorOf(const ApiResult<T> &r) {
  EXPECT_FALSE(r.ok());
  return r.error();
}

TEST(RequestParser, CompletionDefaultsAreOpenAIs) {
  auto r = parseCompletionRequest(R"({"prompt": "hi"})", limits());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->prompts.size(), 1u);
  EXPECT_EQ(*r->prompts[0].text, "hi");
  EXPECT_EQ(r->n, 1);
  EXPECT_FALSE(r->stream);
  EXPECT_EQ(r->sampling.maxTokens, 16);
  EXPECT_FLOAT_EQ(r->sampling.temperature, 1.0f);
  EXPECT_FALSE(r->sampling.logprobs.has_value());
  EXPECT_TRUE(r->addSpecialTokens);
  EXPECT_TRUE(r->skipSpecialTokens);
  EXPECT_TRUE(r->model.empty());
}

TEST(RequestParser, MapsEverySamplingField) {
  auto r = parseCompletionRequest(
      R"({"model": "m", "prompt": "hi", "max_tokens": 7, "temperature": 0.5, "top_p": 0.9,
          "top_k": 40, "min_p": 0.05, "frequency_penalty": 0.5, "presence_penalty": -0.5,
          "repetition_penalty": 1.1, "seed": -3, "stop": ["a", "bc"], "stop_token_ids": [5],
          "include_stop_str_in_output": true, "ignore_eos": true, "min_tokens": 2,
          "logprobs": 3, "logit_bias": {"7": -100, "8": 2.5}, "n": 2, "best_of": 2,
          "echo": false, "user": "u", "skip_special_tokens": false,
          "add_special_tokens": false, "truncate_prompt_tokens": 10,
          "return_tokens_as_token_ids": true})",
      limits());
  ASSERT_TRUE(r.ok()) << r.error().message;
  const engine::SamplingParams &s = r->sampling;
  EXPECT_EQ(r->model, "m");
  EXPECT_EQ(s.maxTokens, 7);
  EXPECT_FLOAT_EQ(s.temperature, 0.5f);
  EXPECT_FLOAT_EQ(s.topP, 0.9f);
  EXPECT_EQ(s.topK, 40);
  EXPECT_FLOAT_EQ(s.minP, 0.05f);
  EXPECT_FLOAT_EQ(s.frequencyPenalty, 0.5f);
  EXPECT_FLOAT_EQ(s.presencePenalty, -0.5f);
  EXPECT_FLOAT_EQ(s.repetitionPenalty, 1.1f);
  EXPECT_EQ(s.seed, uint64_t(int64_t(-3)));
  EXPECT_EQ(s.stop, (std::vector<std::string>{"a", "bc"}));
  EXPECT_EQ(s.stopTokenIds, std::vector<int32_t>{5});
  EXPECT_TRUE(s.includeStopStrInOutput);
  EXPECT_TRUE(s.ignoreEos);
  EXPECT_EQ(s.minTokens, 2);
  EXPECT_EQ(s.logprobs, 3);
  ASSERT_EQ(s.logitBias.size(), 2u);
  EXPECT_EQ(s.logitBias[0], (std::pair<int32_t, float>{7, -100.0f}));
  EXPECT_EQ(r->n, 2);
  EXPECT_FALSE(r->skipSpecialTokens);
  EXPECT_FALSE(r->addSpecialTokens);
  EXPECT_EQ(r->truncatePromptTokens, 10);
  EXPECT_TRUE(r->returnTokensAsTokenIds);
}

TEST(RequestParser, NullMeansUnset) {
  auto r = parseCompletionRequest(
      R"({"prompt": "hi", "temperature": null, "max_tokens": null, "stop": null, "seed": null,
          "suffix": null, "logprobs": null, "stream_options": null})",
      limits());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FLOAT_EQ(r->sampling.temperature, 1.0f);
  EXPECT_EQ(r->sampling.maxTokens, 16);
  EXPECT_FALSE(r->sampling.seed);
}

TEST(RequestParser, PromptShapes) {
  auto strings = parseCompletionRequest(R"({"prompt": ["a", "b"], "n": 3})", limits());
  ASSERT_TRUE(strings.ok());
  EXPECT_EQ(strings->prompts.size(), 2u);
  auto ids = parseCompletionRequest(R"({"prompt": [1, 2, 3]})", limits());
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(ids->prompts[0].tokenIds, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_FALSE(ids->prompts[0].text);
  auto batch = parseCompletionRequest(R"({"prompt": [[1], [2, 3]]})", limits());
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ(batch->prompts[1].tokenIds, (std::vector<int32_t>{2, 3}));

  EXPECT_EQ(errorOf(parseCompletionRequest(R"({"prompt": [1, 1000]})", limits())).param,
            "prompt[1]");
  EXPECT_EQ(errorOf(parseCompletionRequest(R"({"prompt": [[1], []]})", limits())).param, "prompt");
  EXPECT_EQ(errorOf(parseCompletionRequest(R"({"prompt": []})", limits())).param, "prompt");
  EXPECT_EQ(errorOf(parseCompletionRequest(R"({"prompt": {}})", limits())).param, "prompt");
  EXPECT_EQ(errorOf(parseCompletionRequest(R"({"prompt": [1.5]})", limits())).param, "prompt[0]");
  // 2 prompts x n 9 = 18 choices > 16.
  EXPECT_EQ(errorOf(parseCompletionRequest(R"({"prompt": ["a", "b"], "n": 9})", limits())).param,
            "n");
}

// An 8 MB unknown field name: no suggestion search, and the error (message
// and param) quotes only its start.
TEST(RequestParser, AHugeUnknownFieldIsClippedInTheError) {
  const std::string name(8u << 20, 'q');
  const std::string body = R"({"prompt": "x", ")" + name + R"(": 1})";
  ApiError e = errorOf(parseCompletionRequest(body, limits()));
  EXPECT_EQ(e.status, 400);
  EXPECT_NE(e.message.find("unrecognized request argument supplied: qqqq"), std::string::npos);
  EXPECT_NE(e.message.find("(8388608 bytes)"), std::string::npos);
  EXPECT_LT(e.message.size(), 200u);
  EXPECT_LT(e.param.size(), 100u);
  EXPECT_EQ(e.message.find("did you mean"), std::string::npos);
  EXPECT_LT(e.body().size(), 400u);
}

// vLLM's default for unknown fields: ignored, their paths noted (at most
// 16, each clipped) for the server's warning; strict again afterwards.
TEST(RequestParser, ALenientPolicyIgnoresUnknownFieldsAndNotesThem) {
  UnknownFieldPolicy &policy = unknownFieldPolicy();
  policy.strict = false;
  policy.ignored.clear();
  auto parsed = parseCompletionRequest(
      R"({"prompt": "x", "temprature": 1, "stream": true,
          "stream_options": {"include_usage": true, "x": 1}})",
      limits());
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->stream, true);
  EXPECT_EQ(policy.ignored, (std::vector<std::string>{"temprature", "stream_options.x"}));
  policy.ignored.clear();
  std::string body = R"({"messages": [{"role": "user", "content": "x"}])";
  for (int i = 0; i < 40; ++i)
    body += ", \"f" + std::to_string(i) + "\": 1";
  body += ", \"" + std::string(5000, 'z') + "\": 1}";
  ASSERT_TRUE(parseChatRequest(body, limits()).ok());
  EXPECT_EQ(policy.ignored.size(), 16u);
  for (const std::string &name : policy.ignored)
    EXPECT_LT(name.size(), 100u);
  policy.strict = true;
  policy.ignored.clear();
  EXPECT_EQ(errorOf(parseCompletionRequest(R"({"prompt": "x", "foo": 1})", limits())).param,
            "foo");
}

// Whatever a message holds, a response echoes at most 2 KiB of it.
TEST(RequestParser, ErrorBodiesAreBounded) {
  ApiError e = badRequest(std::string(1000, 'p'), std::string(100000, 'm'));
  const std::string body = e.body();
  EXPECT_LT(body.size(), ApiError::kMaxMessageBytes + ApiError::kMaxParamBytes + 200);
}

TEST(RequestParser, ErrorsNameTheField) {
  struct Case {
    const char *body;
    const char *param;
    const char *message; // a piece of it
  };
  const Case cases[] = {
      {R"({"prompt": "x", "temprature": 1})", "temprature", "did you mean temperature?"},
      {R"({"prompt": "x", "top_p": 1.5})", "top_p", "top_p: expected a value in (0, 1], found 1.5"},
      {R"({"prompt": "x", "temperature": -1})", "temperature", "non-negative"},
      {R"({"prompt": "x", "top_k": -2})", "top_k", "found -2"},
      {R"({"prompt": "x", "max_tokens": 0})", "max_tokens", "[1, 2147483647], found 0"},
      {R"({"prompt": "x", "max_tokens": "3"})", "max_tokens", "found a string"},
      {R"({"prompt": "x", "max_tokens": 3.5})", "max_tokens", "expected an integer, found 3.5"},
      {R"({"prompt": "x", "logprobs": 21})", "logprobs", "[0, 20]"},
      {R"({"prompt": "x", "stop": [""]})", "stop", "non-empty"},
      {R"({"prompt": "x", "stop": [1]})", "stop", "stop[0]: expected a string"},
      {R"({"prompt": "x", "logit_bias": {"x": 1}})", "logit_bias", "token ids as keys"},
      {R"({"prompt": "x", "logit_bias": {"1": 101}})", "logit_bias", "[-100, 100]"},
      {R"({"prompt": "x", "logit_bias": {"5000": 1}})", "logit_bias", "outside the vocabulary"},
      {R"({"prompt": "x", "min_tokens": 20, "max_tokens": 10})", "min_tokens", "at most"},
      {R"({"prompt": "x", "stream_options": {"include_usage": true}})", "stream_options",
       "only allowed when stream is true"},
      {R"({"prompt": "x", "stream": true, "stream_options": {"usage": true}})",
       "stream_options.usage", "unrecognized request argument supplied: stream_options.usage"},
      {R"({"prompt": "x", "best_of": 2})", "best_of", "equal to n"},
      {R"({"prompt": "x", "suffix": "y"})", "suffix", "not supported"},
      {R"({"prompt": "x", "use_beam_search": true})", "use_beam_search", "not supported"},
      {R"({"prompt": "x", "echo": true, "logprobs": 0})", "echo", "logprobs"},
      {R"({"prompt": "x", "truncate_prompt_tokens": 0})", "truncate_prompt_tokens", "found 0"},
      {R"({"prompt": "x", "seed": 1e30})", "seed", "expected an integer"},
      {R"({"max_tokens": 1})", "prompt", "prompt: required"},
  };
  for (const Case &c : cases) {
    auto r = parseCompletionRequest(c.body, limits());
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_EQ(r.error().status, 400) << c.body;
    EXPECT_EQ(r.error().param, c.param) << c.body << ": " << r.error().message;
    EXPECT_NE(r.error().message.find(c.message), std::string::npos)
        << c.body << ": " << r.error().message;
  }
}

TEST(RequestParser, MalformedBodies) {
  for (const char *body : {"", "{", "[]", "\"x\"", "{\"a\": 1,}", "{\"prompt\": \"\xff\"}"}) {
    auto r = parseCompletionRequest(body, limits());
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_EQ(r.error().status, 400);
    EXPECT_TRUE(r.error().param.empty());
  }
  EXPECT_NE(errorOf(parseCompletionRequest("{", limits())).message.find("line 1, column 2"),
            std::string::npos);
}

TEST(RequestParser, ChatRequest) {
  auto r = parseChatRequest(
      R"({"messages": [{"role": "system", "content": "s"},
                       {"role": "user", "content": [{"type": "text", "text": "a"},
                                                    {"type": "text", "text": "b"}]}],
          "max_tokens": 5, "max_completion_tokens": 9, "logprobs": true, "top_logprobs": 2,
          "tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "none",
          "chat_template_kwargs": {"enable_thinking": false}, "stream": true,
          "stream_options": {"include_usage": true}, "parallel_tool_calls": true,
          "store": false, "metadata": {"k": "v"}})",
      limits());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->messages[1]["content"], "a\nb");
  EXPECT_EQ(r->sampling.maxTokens, 9); // max_completion_tokens wins
  EXPECT_TRUE(r->logprobs);
  EXPECT_EQ(r->sampling.logprobs, 2);
  EXPECT_EQ(r->tools.size(), 1u);
  EXPECT_EQ(r->templateKwargs["enable_thinking"], false);
  EXPECT_TRUE(r->includeUsage);
  EXPECT_FALSE(r->addSpecialTokens);
  EXPECT_TRUE(r->addGenerationPrompt);

  auto defaults = parseChatRequest(R"({"messages": [{"role": "user", "content": "x"}]})", limits());
  ASSERT_TRUE(defaults.ok());
  EXPECT_FALSE(defaults->sampling.maxTokens); // up to max_model_len
  EXPECT_FALSE(defaults->sampling.logprobs);
}

TEST(RequestParser, ChatErrors) {
  struct Case {
    const char *body;
    const char *param;
  };
  const Case cases[] = {
      {R"({})", "messages"},
      {R"({"messages": []})", "messages"},
      {R"({"messages": [1]})", "messages"},
      {R"({"messages": [{"content": "x"}]})", "messages"},
      {R"({"messages": [{"role": "", "content": "x"}]})", "messages"},
      {R"({"messages": [{"role": "user", "content": 1}]})", "messages[0].content"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})",
       "messages[0].content"},
      {R"({"messages": [{"role": "user", "content": [{"type": "text"}]}]})", "messages[0].content"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "auto"})", "tool_choice"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 1})", "top_logprobs"},
      {R"({"messages": [{"role": "user", "content": "x"}], "echo": true})", "echo"},
      {R"({"messages": [{"role": "user", "content": "x"}], "functions": [{}]})", "functions"},
      {R"({"messages": [{"role": "user", "content": "x"}], "continue_final_message": true})",
       "continue_final_message"},
      {R"({"messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": 1})",
       "chat_template_kwargs"},
      {R"({"messages": [{"role": "user", "content": "x"}], "suffix": "y"})", "suffix"},
  };
  for (const Case &c : cases) {
    auto r = parseChatRequest(c.body, limits());
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_EQ(r.error().param, c.param) << c.body << ": " << r.error().message;
  }
}

TEST(RequestParser, TokenizeAndDetokenize) {
  auto prompt = parseTokenizeRequest(R"({"prompt": "x", "return_token_strs": true})", limits());
  ASSERT_TRUE(prompt.ok());
  EXPECT_TRUE(prompt->addSpecialTokens);
  EXPECT_TRUE(prompt->returnTokenStrs);
  auto chat = parseTokenizeRequest(R"({"messages": [{"role": "user", "content": "x"}]})", limits());
  ASSERT_TRUE(chat.ok());
  EXPECT_FALSE(chat->addSpecialTokens);
  EXPECT_FALSE(chat->prompt);
  EXPECT_EQ(errorOf(parseTokenizeRequest(R"({})", limits())).param, "prompt");
  EXPECT_EQ(errorOf(parseTokenizeRequest(R"({"prompt": "x", "messages": []})", limits())).param,
            "prompt");
  EXPECT_EQ(
      errorOf(parseTokenizeRequest(R"({"prompt": "x", "add_generation_prompt": true})", limits()))
          .param,
      "add_generation_prompt");

  auto de = parseDetokenizeRequest(R"({"tokens": [1, 2]})", limits());
  ASSERT_TRUE(de.ok());
  EXPECT_EQ(de->tokens, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(errorOf(parseDetokenizeRequest(R"({"tokens": [1, -1]})", limits())).param, "tokens[1]");
  EXPECT_EQ(errorOf(parseDetokenizeRequest(R"({})", limits())).param, "tokens");
}

} // namespace
} // namespace volt::server
