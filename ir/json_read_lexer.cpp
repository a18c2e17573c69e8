// ir/json_read_lexer.cpp: json_tokenize, a strict RFC 8259 tokenizer feeding a JsonEvents sink.
// Iterative with an explicit container stack; strings without escapes are passed as views into the
// text, so the common case copies nothing. UTF-8 is validated (RFC 3629) and \u escapes decoded
// with surrogate pairs, like nlohmann's lexer, whose accept() it is tested against. One deliberate
// difference: a NUL byte after the value is trailing garbage here; nlohmann stops reading at it.
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/json_read_internal.h"

namespace amk::ir::json_detail {

std::string Scalar::text() const {
  switch (kind) {
    case Kind::Null: return "null";
    case Kind::Bool: return b ? "true" : "false";
    case Kind::Int: return std::to_string(i);
    case Kind::Uint: return std::to_string(u);
    case Kind::Float: return std::string(s);
    case Kind::String: return json_quoted(s);
  }
  return "?";
}

bool Scalar::as_int64(int64_t& out) const {
  if (kind == Kind::Int) {
    out = i;
    return true;
  }
  return false;  // Uint is only produced above INT64_MAX
}

std::string json_quoted(std::string_view s) {
  constexpr size_t kMax = 64;
  std::string q = nlohmann::json(std::string(s.substr(0, kMax)))
                      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (s.size() > kMax) q.insert(q.size() - 1, "...");
  return q;
}

bool json_path_identifier(std::string_view k) {
  if (k.empty() || (k[0] >= '0' && k[0] <= '9')) return false;
  for (char c : k)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

std::string json_path_key(const std::string& path, std::string_view key) {
  if (!json_path_identifier(key)) return path + "[" + json_quoted(key) + "]";
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

namespace {

class Tokenizer {
 public:
  Tokenizer(std::string_view text, JsonEvents& sink)
      : begin_(text.data()), p_(text.data()), end_(text.data() + text.size()), sink_(sink) {}

  bool run();

 private:
  enum class Next { Value, AfterValue, Key };

  void skip_ws() {
    constexpr uint64_t kEightSpaces = 0x2020202020202020ull;
    while (p_ < end_) {
      // Indentation comes in runs of spaces: step over eight at a time.
      uint64_t word = 0;
      while (end_ - p_ >= 8 && (std::memcpy(&word, p_, 8), word == kEightSpaces)) p_ += 8;
      // The eight-space steps can end exactly at the end of the text (found by fuzz_validate:
      // tests/fuzz/regressions/validate-ws_at_end.json); never read *end_.
      if (p_ == end_) return;
      const char c = *p_;
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return;
      ++p_;
    }
  }
  bool error(const char* at, const std::string& what);
  std::string found() const;  // the character at p_, for messages
  bool literal(std::string_view word, Scalar& v);
  bool number(Scalar& v);
  bool string(std::string_view& out);
  bool string_slow(const char* start, std::string_view& out);
  bool utf8_sequence();  // validates one multi-byte sequence at p_ and advances past it
  bool escape();         // decodes one escape at p_ (just after the '\\') into scratch_

  const char* begin_;
  const char* p_;
  const char* end_;
  JsonEvents& sink_;
  std::vector<char> stack_;  // '{' or '[' per open container
  std::string scratch_;
};

bool Tokenizer::error(const char* at, const std::string& what) {
  int64_t line = 1;
  const char* line_start = begin_;
  for (const char* q = begin_; q < at; ++q) {
    if (*q == '\n') {
      ++line;
      line_start = q + 1;
    }
  }
  sink_.on_syntax_error(line, (at - line_start) + 1, what);
  return false;
}

std::string Tokenizer::found() const {
  if (p_ >= end_) return "end of input";
  const auto c = static_cast<unsigned char>(*p_);
  if (c >= 0x20 && c < 0x7f) return std::string("'") + static_cast<char>(c) + "'";
  char buf[16];
  std::snprintf(buf, sizeof buf, "byte 0x%02X", c);
  return buf;
}

bool Tokenizer::literal(std::string_view word, Scalar& v) {
  if (static_cast<size_t>(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word)
    return error(p_, "invalid literal: expected '" + std::string(word) + "'");
  p_ += word.size();
  v.kind = word == "null" ? Scalar::Kind::Null : Scalar::Kind::Bool;
  v.b = word == "true";
  return true;
}

bool Tokenizer::number(Scalar& v) {
  const char* start = p_;
  const bool negative = *p_ == '-';
  if (negative) ++p_;
  auto digit = [&] { return p_ < end_ && *p_ >= '0' && *p_ <= '9'; };
  if (!digit()) return error(p_, "invalid number: expected a digit, got " + found());
  bool is_int = true;
  uint64_t mag = 0;
  bool overflow = false;
  if (*p_ == '0') {
    ++p_;
    if (digit()) return error(p_, "invalid number: leading zeros are not allowed");
  } else {
    constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
    while (digit()) {
      const uint64_t d = static_cast<uint64_t>(*p_ - '0');
      // Compare with constants: a division per digit here was a quarter of the tokenizer's time.
      if (mag > kMax / 10 || (mag == kMax / 10 && d > kMax % 10)) overflow = true;
      else mag = mag * 10 + d;
      ++p_;
    }
  }
  if (p_ < end_ && *p_ == '.') {
    is_int = false;
    ++p_;
    if (!digit()) return error(p_, "invalid number: expected a digit after '.', got " + found());
    while (digit()) ++p_;
  }
  if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
    is_int = false;
    ++p_;
    if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
    if (!digit()) return error(p_, "invalid number: expected a digit in the exponent, got " + found());
    while (digit()) ++p_;
  }
  v.s = std::string_view(start, static_cast<size_t>(p_ - start));
  constexpr uint64_t kMaxI64 = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (is_int && !overflow) {
    if (!negative && mag <= kMaxI64) {
      v.kind = Scalar::Kind::Int;
      v.i = static_cast<int64_t>(mag);
      return true;
    }
    if (!negative) {
      v.kind = Scalar::Kind::Uint;
      v.u = mag;
      return true;
    }
    if (mag <= kMaxI64 + 1) {
      v.kind = Scalar::Kind::Int;
      v.i = mag == kMaxI64 + 1 ? std::numeric_limits<int64_t>::min() : -static_cast<int64_t>(mag);
      return true;
    }
  }
  // A real, or an integer beyond 64 bits (read as a real, as nlohmann and Python's float() do).
  v.kind = Scalar::Kind::Float;
  const auto r = std::from_chars(start, p_, v.d);
  if (r.ec == std::errc::result_out_of_range) {
    // Overflow gives +-inf (the sink rejects it by name); underflow needs strtod's denormal or 0.
    const std::string copy(start, p_);
    v.d = std::strtod(copy.c_str(), nullptr);
  } else if (r.ec != std::errc() || r.ptr != p_) {
    return error(start, "invalid number");
  }
  return true;
}

bool Tokenizer::utf8_sequence() {
  const auto c = static_cast<unsigned char>(*p_);
  int n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // range of the first continuation byte
  if (c >= 0xC2 && c <= 0xDF) n = 1;
  else if (c == 0xE0) n = 2, lo = 0xA0;
  else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) n = 2;
  else if (c == 0xED) n = 2, hi = 0x9F;
  else if (c == 0xF0) n = 3, lo = 0x90;
  else if (c >= 0xF1 && c <= 0xF3) n = 3;
  else if (c == 0xF4) n = 3, hi = 0x8F;
  else return error(p_, "invalid string: ill-formed UTF-8 byte 0x" + std::string(1, "0123456789ABCDEF"[c >> 4]) +
                            "0123456789ABCDEF"[c & 15]);
  const char* q = p_ + 1;
  for (int k = 0; k < n; ++k, ++q) {
    const auto cc = q < end_ ? static_cast<unsigned char>(*q) : 0;
    const unsigned char l = k == 0 ? lo : 0x80, h = k == 0 ? hi : 0xBF;
    if (cc < l || cc > h) return error(q, "invalid string: ill-formed UTF-8 sequence");
  }
  p_ = q;
  return true;
}

bool Tokenizer::escape() {
  if (p_ >= end_) return error(p_, "invalid string: unexpected end of input in an escape");
  const char c = *p_++;
  switch (c) {
    case '"': scratch_.push_back('"'); return true;
    case '\\': scratch_.push_back('\\'); return true;
    case '/': scratch_.push_back('/'); return true;
    case 'b': scratch_.push_back('\b'); return true;
    case 'f': scratch_.push_back('\f'); return true;
    case 'n': scratch_.push_back('\n'); return true;
    case 'r': scratch_.push_back('\r'); return true;
    case 't': scratch_.push_back('\t'); return true;
    case 'u': break;
    default: --p_; return error(p_, "invalid string: unknown escape '\\" + std::string(1, c) + "'");
  }
  auto hex4 = [&](uint32_t& out) {
    if (end_ - p_ < 4) return false;
    out = 0;
    for (int k = 0; k < 4; ++k) {
      const char h = *p_++;
      const int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
      if (d < 0) return false;
      out = out * 16 + static_cast<uint32_t>(d);
    }
    return true;
  };
  const char* at = p_ - 2;
  uint32_t cp = 0;
  if (!hex4(cp)) return error(at, "invalid string: '\\u' must be followed by 4 hex digits");
  if (cp >= 0xDC00 && cp <= 0xDFFF) return error(at, "invalid string: lone low surrogate in a \\u escape");
  if (cp >= 0xD800 && cp <= 0xDBFF) {
    uint32_t lo = 0;
    if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u' || (p_ += 2, !hex4(lo)) || lo < 0xDC00 || lo > 0xDFFF)
      return error(at, "invalid string: a high surrogate must be followed by a \\u low surrogate");
    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
  }
  if (cp < 0x80) {
    scratch_.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    scratch_.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    scratch_.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    scratch_.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    scratch_.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    scratch_.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    scratch_.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    scratch_.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    scratch_.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    scratch_.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
  return true;
}

// p_ is just after the opening quote.
bool Tokenizer::string(std::string_view& out) {
  const char* start = p_;
  for (;;) {
    while (p_ < end_) {  // the fast path: plain ASCII
      const auto c = static_cast<unsigned char>(*p_);
      if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\') break;
      ++p_;
    }
    if (p_ >= end_) return error(p_, "invalid string: unexpected end of input (missing closing '\"')");
    const auto c = static_cast<unsigned char>(*p_);
    if (c == '"') {
      out = std::string_view(start, static_cast<size_t>(p_ - start));
      ++p_;
      return true;
    }
    if (c == '\\') return string_slow(start, out);
    if (c < 0x20) return error(p_, "invalid string: control character " + found() + " must be escaped");
    if (!utf8_sequence()) return false;
  }
}

// Escapes present: decode from `start` into scratch_.
bool Tokenizer::string_slow(const char* start, std::string_view& out) {
  scratch_.assign(start, p_);
  for (;;) {
    if (p_ >= end_) return error(p_, "invalid string: unexpected end of input (missing closing '\"')");
    const auto c = static_cast<unsigned char>(*p_);
    if (c == '"') {
      ++p_;
      out = scratch_;
      return true;
    }
    if (c == '\\') {
      ++p_;
      if (!escape()) return false;
    } else if (c < 0x20) {
      return error(p_, "invalid string: control character " + found() + " must be escaped");
    } else if (c >= 0x80) {
      const char* seq = p_;
      if (!utf8_sequence()) return false;
      scratch_.append(seq, p_);
    } else {
      scratch_.push_back(static_cast<char>(c));
      ++p_;
    }
  }
}

bool Tokenizer::run() {
  if (end_ - p_ >= 3 && std::string_view(p_, 3) == "\xEF\xBB\xBF") p_ += 3;  // a UTF-8 BOM, as nlohmann allows
  skip_ws();
  if (p_ >= end_) return error(p_, "empty input: expected a JSON value");
  Next next = Next::Value;
  Scalar v;
  for (;;) {
    skip_ws();
    switch (next) {
      case Next::Value: {
        if (p_ >= end_) return error(p_, "unexpected end of input: expected a value");
        const char c = *p_;
        if (c == '{' || c == '[') {
          ++p_;
          if (!sink_.on_open(c == '[', static_cast<size_t>(p_ - 1 - begin_))) return false;
          stack_.push_back(c);
          skip_ws();
          if (p_ < end_ && *p_ == (c == '{' ? '}' : ']')) {
            ++p_;
            stack_.pop_back();
            if (!sink_.on_close()) return false;
            next = Next::AfterValue;
          } else {
            next = c == '{' ? Next::Key : Next::Value;
          }
          continue;
        }
        v = Scalar();
        if (c == '"') {
          ++p_;
          v.kind = Scalar::Kind::String;
          if (!string(v.s)) return false;
        } else if (c == 't') {
          if (!literal("true", v)) return false;
        } else if (c == 'f') {
          if (!literal("false", v)) return false;
        } else if (c == 'n') {
          if (!literal("null", v)) return false;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
          if (!number(v)) return false;
        } else {
          return error(p_, "expected a value, got " + found());
        }
        if (!sink_.on_scalar(v)) return false;
        next = Next::AfterValue;
        continue;
      }
      case Next::Key: {
        if (p_ >= end_ || *p_ != '"')
          return error(p_, "expected an object key (a string), got " + found());
        ++p_;
        std::string_view key;
        if (!string(key)) return false;
        if (!sink_.on_key(key)) return false;
        skip_ws();
        if (p_ >= end_ || *p_ != ':') return error(p_, "expected ':' after an object key, got " + found());
        ++p_;
        next = Next::Value;
        continue;
      }
      case Next::AfterValue: {
        if (stack_.empty()) {
          if (p_ < end_) return error(p_, "unexpected " + found() + " after the JSON value: expected end of input");
          return true;
        }
        const char open = stack_.back();
        const char close = open == '{' ? '}' : ']';
        if (p_ < end_ && *p_ == ',') {
          ++p_;
          next = open == '{' ? Next::Key : Next::Value;
        } else if (p_ < end_ && *p_ == close) {
          ++p_;
          stack_.pop_back();
          if (!sink_.on_close()) return false;
        } else {
          return error(p_, std::string("expected ',' or '") + close + "', got " + found());
        }
        continue;
      }
    }
  }
}

}  // namespace

bool json_tokenize(std::string_view text, JsonEvents& sink) {
  Tokenizer t(text, sink);
  return t.run();
}

}  // namespace amk::ir::json_detail
