// Text helpers shared by the rules (rules.cpp, shapes.cpp).
#pragma once

#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <string_view>

namespace cuwrap::gen::text {

/// Return `s` in lower case (ASCII).
inline std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

/// Return whether `c` can be part of a C identifier.
inline bool is_word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

/// Return whether `text` contains `word` as a whole word.
inline bool has_word(std::string_view text, std::string_view word) {
  for (std::size_t at = text.find(word); at != std::string_view::npos;
       at = text.find(word, at + 1)) {
    const bool starts = at == 0 || !is_word_char(text[at - 1]);
    const bool ends = at + word.size() == text.size() || !is_word_char(text[at + word.size()]);
    if (starts && ends) {
      return true;
    }
  }
  return false;
}

/// Return whether `type` spells a C integer type.
inline bool is_integer(const std::string& type) {
  static const std::set<std::string> kIntegers = {"int",
                                                  "unsigned int",
                                                  "unsigned",
                                                  "long",
                                                  "unsigned long",
                                                  "long long",
                                                  "unsigned long long",
                                                  "size_t",
                                                  "uint32_t",
                                                  "uint64_t",
                                                  "int32_t",
                                                  "int64_t",
                                                  "cuuint32_t",
                                                  "cuuint64_t",
                                                  "std::size_t"};
  return kIntegers.count(type) != 0;
}

}  // namespace cuwrap::gen::text
