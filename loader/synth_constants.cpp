// loader/synth_constants.cpp: `amk:` constant generators. Values are computed in double and
// rounded to float once, so the table is the correctly rounded value of the formula (Hugging Face
// computes in float32 and can differ by an ulp; that is below every tolerance downstream).
#include "loader/synth_constants.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>

#include "loader/names.h"

namespace amk::loader {
namespace {

Status bad(std::string message) { return Status(StatusCode::InvalidArgument, std::move(message)); }

/// Split "k=v&k=v" into a map; repeated or empty keys and missing '=' are errors.
Result<std::map<std::string, std::string>> parse_query(std::string_view query) {
  std::map<std::string, std::string> out;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    std::string_view item = query.substr(0, amp);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) return bad("argument \"" + std::string(item) + "\" is not key=value");
    std::string key(item.substr(0, eq));
    if (!out.emplace(key, std::string(item.substr(eq + 1))).second) return bad("argument \"" + key + "\" is repeated");
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return out;
}

/// A finite number spelled entirely by `text`.
Result<double> parse_number(const std::string& key, const std::string& text) {
  if (text.empty()) return bad("argument \"" + key + "\" is empty");
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(v))
    return bad("argument \"" + key + "\" = \"" + text + "\" is not a finite number");
  return v;
}

}  // namespace

bool synth_is_source(std::string_view source) { return source.substr(0, kSynthPrefix.size()) == kSynthPrefix; }

Result<RopeInvFreqSpec> rope_inv_freq_parse(std::string_view query) {
  auto args = parse_query(query);
  if (!args) return args.status();
  RopeInvFreqSpec spec;
  std::map<std::string, double> num;
  std::string rope_type = "default";
  for (const auto& [key, text] : *args) {
    if (key == "rope_type") {
      rope_type = text;
      continue;
    }
    if (key != "theta" && key != "dim" && key != "factor" && key != "low_freq_factor" && key != "high_freq_factor" &&
        key != "original_max_position_embeddings")
      return bad("unknown argument \"" + key + "\"");
    auto v = parse_number(key, text);
    if (!v) return v.status();
    num[key] = *v;
  }
  if (rope_type != "default" && rope_type != "llama3")
    return Status(StatusCode::Unsupported, "rope_type \"" + rope_type + "\" is not supported (default, llama3)");
  if (!num.count("theta") || !num.count("dim")) return bad("needs both \"theta\" and \"dim\"");
  spec.theta = num["theta"];
  const double dim = num["dim"];
  if (!(spec.theta > 0.0)) return bad("theta must be positive");
  if (dim != std::floor(dim) || dim < 2 || dim > (1 << 20) || static_cast<int64_t>(dim) % 2 != 0)
    return bad("dim must be an even integer in [2, 2^20]");
  spec.dim = static_cast<int>(dim);
  const char* llama3_keys[] = {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"};
  spec.llama3 = rope_type == "llama3";
  for (const char* k : llama3_keys) {
    if (spec.llama3 && !num.count(k)) return bad("rope_type=llama3 needs \"" + std::string(k) + "\"");
    if (!spec.llama3 && num.count(k)) return bad("argument \"" + std::string(k) + "\" needs rope_type=llama3");
  }
  if (spec.llama3) {
    spec.factor = num["factor"];
    spec.low_freq_factor = num["low_freq_factor"];
    spec.high_freq_factor = num["high_freq_factor"];
    spec.original_max_position = num["original_max_position_embeddings"];
    if (!(spec.factor > 0.0) || !(spec.low_freq_factor > 0.0) || !(spec.original_max_position > 0.0) ||
        !(spec.high_freq_factor > spec.low_freq_factor))
      return bad("llama3 scaling needs factor > 0, original_max_position_embeddings > 0 and "
                 "high_freq_factor > low_freq_factor > 0");
  }
  return spec;
}

std::vector<float> rope_inv_freq(const RopeInvFreqSpec& spec) {
  const int half = spec.dim / 2;
  std::vector<float> out(static_cast<size_t>(half));
  const double pi = std::acos(-1.0);
  for (int i = 0; i < half; ++i) {
    double inv = std::pow(spec.theta, -2.0 * i / spec.dim);
    if (spec.llama3) {
      const double low_wavelen = spec.original_max_position / spec.low_freq_factor;
      const double high_wavelen = spec.original_max_position / spec.high_freq_factor;
      const double wavelen = 2.0 * pi / inv;
      if (wavelen > low_wavelen) {
        inv = inv / spec.factor;
      } else if (!(wavelen < high_wavelen)) {  // medium band: interpolate
        const double s = (spec.original_max_position / wavelen - spec.low_freq_factor) /
                         (spec.high_freq_factor - spec.low_freq_factor);
        inv = (1.0 - s) * inv / spec.factor + s * inv;
      }
    }
    out[static_cast<size_t>(i)] = static_cast<float>(inv);
  }
  return out;
}

Result<std::vector<float>> synth_values(std::string_view source) {
  if (!synth_is_source(source)) return bad("\"" + std::string(source) + "\" is not an amk: source");
  std::string_view rest = source.substr(kSynthPrefix.size());
  const size_t q = rest.find('?');
  const std::string_view name = rest.substr(0, q);
  const std::string_view query = q == std::string_view::npos ? std::string_view() : rest.substr(q + 1);
  if (name == "rope_inv_freq") {
    auto spec = rope_inv_freq_parse(query);
    if (!spec) return spec.status();
    return rope_inv_freq(*spec);
  }
  return Status(StatusCode::NotFound, "unknown generator \"" + std::string(name) + "\" (known: rope_inv_freq)");
}

Status synth_buffer(const ir::Buffer& buffer, void* dst) {
  const std::string source = buffer.source.value_or("");
  const std::string who = buffer_name(buffer) + " (source \"" + source + "\")";
  auto values = synth_values(source);
  if (!values) return Status(values.status().code(), who + ": " + values.status().message());
  if (buffer.dtype != ir::DType::F32)
    return bad(who + ": synthesized constants are F32, but the buffer is " + std::string(ir::dtype_name(buffer.dtype)));
  if (buffer.numel() != static_cast<int64_t>(values->size()))
    return bad(who + ": the generator makes " + std::to_string(values->size()) + " values, but the buffer has shape " +
               shape_text(buffer.shape) + " (" + std::to_string(buffer.numel()) + " elements)");
  if (!values->empty()) std::memcpy(dst, values->data(), values->size() * sizeof(float));
  return Status::ok();
}

}  // namespace amk::loader
