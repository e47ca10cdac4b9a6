//===- TinyTokenizer.cpp - a small byte-level BPE for synthetic models ---===//
//
// Synthetic models need a tokenizer that Hugging Face `tokenizers` and volt
// both load: this trains a byte-level BPE (the Qwen2 layout: NFC, the Qwen2
// split regex, ByteLevel mapping, ChatML special tokens) on a built-in text,
// deterministically, to exactly the vocabulary size of the model.
//
//===----------------------------------------------------------------------===//
#include "compiler/mkmodel/MkModel.h"

#include <algorithm>
#include <map>

namespace volt::mkmodel {
namespace {

using nlohmann::json;

const char *kTrainingText =
    "The quick brown fox jumps over the lazy dog. A language model reads text as tokens, "
    "and a tokenizer turns the text into those tokens and back again. The model predicts the "
    "next token from the tokens before it; the server streams each token to the client as "
    "soon as it is ready. Mixture-of-experts models route every token to a few experts out "
    "of many, so that only a small part of the weights is read for each token. On a GPU the "
    "time of a decode step is the time it takes to read those weights from memory. Four-bit "
    "weights with a scale for every sixteen values keep the model small and the reads "
    "short. The compiler plans every buffer before the server starts, so the memory that the "
    "cache of keys and values needs is known in advance. Hello, world! How are you today? "
    "I am fine, thank you. What is the capital of France? The capital of France is Paris. "
    "One, two, three, four, five, six, seven, eight, nine, ten. 0 1 2 3 4 5 6 7 8 9 10 100 "
    "2024 3.14 #include <stdio.h> int main(void) { return 0; } def main(): print(\"hi\") "
    "for i in range(10): x = x + i  # comment\n\nThe end of the story is near, and the "
    "reader is happy. Questions and answers, requests and responses, prompts and completions.";

/// GPT-2's reversible map from bytes to printable code points.
std::vector<uint32_t> byteToCodepoint() {
  std::vector<uint32_t> map(256, 0);
  std::vector<bool> direct(256, false);
  for (int b = '!'; b <= '~'; ++b)
    direct[b] = true;
  for (int b = 0xA1; b <= 0xAC; ++b)
    direct[b] = true;
  for (int b = 0xAE; b <= 0xFF; ++b)
    direct[b] = true;
  uint32_t next = 256;
  for (int b = 0; b < 256; ++b)
    map[b] = direct[b] ? static_cast<uint32_t>(b) : next++;
  return map;
}

std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

bool isLetter(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/// Words as the Qwen2 regex would roughly split ASCII text: an optional
/// space followed by letters, single digits, punctuation runs.
std::vector<std::string> words(const std::string &text) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    if (text[i] == ' ' && i + 1 < text.size() && isLetter(text[i + 1]))
      ++i;
    if (isLetter(text[i])) {
      while (i < text.size() && isLetter(text[i]))
        ++i;
    } else {
      ++i;
    }
    out.push_back(text.substr(start, i - start));
  }
  return out;
}

} // namespace

nlohmann::json tinyTokenizer(int64_t vocabSize) {
  const std::vector<std::string> specials = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  const int64_t target = vocabSize - static_cast<int64_t>(specials.size());
  std::vector<uint32_t> b2c = byteToCodepoint();

  json vocab = json::object();
  std::vector<std::string> idToToken;
  for (int b = 0; b < 256; ++b) {
    std::string tok = utf8(b2c[b]);
    vocab[tok] = idToToken.size();
    idToToken.push_back(tok);
  }

  // Word frequencies, each word as a sequence of byte-level symbols.
  std::map<std::vector<std::string>, int64_t> corpus;
  for (const std::string &w : words(kTrainingText)) {
    std::vector<std::string> symbols;
    for (unsigned char c : w)
      symbols.push_back(utf8(b2c[c]));
    ++corpus[symbols];
  }

  json merges = json::array();
  while (static_cast<int64_t>(idToToken.size()) < target) {
    std::map<std::pair<std::string, std::string>, int64_t> pairs;
    for (const auto &[symbols, freq] : corpus)
      for (size_t i = 0; i + 1 < symbols.size(); ++i)
        pairs[{symbols[i], symbols[i + 1]}] += freq;
    if (pairs.empty())
      break;
    // The most frequent pair; ties go to the smallest pair (std::map order),
    // which keeps training deterministic.
    auto best = pairs.begin();
    for (auto it = pairs.begin(); it != pairs.end(); ++it)
      if (it->second > best->second)
        best = it;
    const auto [left, right] = best->first;
    std::string merged = left + right;
    merges.push_back(left + " " + right);
    if (!vocab.contains(merged)) {
      vocab[merged] = idToToken.size();
      idToToken.push_back(merged);
    }
    std::map<std::vector<std::string>, int64_t> next;
    for (const auto &[symbols, freq] : corpus) {
      std::vector<std::string> out;
      for (size_t i = 0; i < symbols.size(); ++i) {
        if (i + 1 < symbols.size() && symbols[i] == left && symbols[i + 1] == right) {
          out.push_back(merged);
          ++i;
        } else {
          out.push_back(symbols[i]);
        }
      }
      next[out] += freq;
    }
    corpus = std::move(next);
  }
  // Pad with unused single-use tokens if the text ran out of pairs, so that
  // the tokenizer covers exactly vocabSize ids.
  for (int i = 0; static_cast<int64_t>(idToToken.size()) < target; ++i) {
    std::string tok = "<|reserved_" + std::to_string(i) + "|>";
    vocab[tok] = idToToken.size();
    idToToken.push_back(tok);
  }

  json added = json::array();
  for (size_t i = 0; i < specials.size(); ++i)
    added.push_back({{"id", target + static_cast<int64_t>(i)},
                     {"content", specials[i]},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  for (size_t i = 0; i < specials.size(); ++i)
    vocab[specials[i]] = target + static_cast<int64_t>(i);

  json byteLevel = {{"type", "ByteLevel"},
                    {"add_prefix_space", false},
                    {"trim_offsets", false},
                    {"use_regex", false}};
  const char *qwen2Split = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
                           "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added},
          {"normalizer", {{"type", "NFC"}}},
          {"pre_tokenizer",
           {{"type", "Sequence"},
            {"pretokenizers",
             {{{"type", "Split"},
               {"pattern", {{"Regex", qwen2Split}}},
               {"behavior", "Isolated"},
               {"invert", false}},
              byteLevel}}}},
          {"post_processor", byteLevel},
          {"decoder", byteLevel},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", nullptr},
            {"continuing_subword_prefix", ""},
            {"end_of_word_suffix", ""},
            {"fuse_unk", false},
            {"byte_fallback", false},
            {"ignore_merges", false},
            {"vocab", vocab},
            {"merges", merges}}}};
}

} // namespace volt::mkmodel
