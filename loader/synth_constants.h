// loader/synth_constants.h: CONST buffers the loader computes instead of reading (docs/OPCODES.md,
// "Constants the loader synthesizes"). A source `amk:<name>?k=v&k=v` names a generator and its
// arguments; every argument is checked, and an unknown generator or key is an error.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/program.h"
#include "ir/status.h"

namespace amk::loader {

/// Sources with this prefix are synthesized.
inline constexpr std::string_view kSynthPrefix = "amk:";

/// True when `source` starts with "amk:".
bool synth_is_source(std::string_view source);

/// Rotary inverse frequencies (`amk:rope_inv_freq`), default or Llama-3 scaled.
struct RopeInvFreqSpec {
  double theta = 10000.0;
  int dim = 0;                      ///< head_dim (even); the table has dim / 2 entries
  bool llama3 = false;              ///< rope_type=llama3
  double factor = 1.0;              ///< llama3: the long-context scaling factor F
  double low_freq_factor = 1.0;     ///< llama3: L
  double high_freq_factor = 4.0;    ///< llama3: H
  double original_max_position = 8192.0;  ///< llama3: O
};

/// Parse the query part of `amk:rope_inv_freq?...`. InvalidArgument naming the key otherwise.
Result<RopeInvFreqSpec> rope_inv_freq_parse(std::string_view query);

/// inv[i] = theta^(-2i/dim), computed in double and rounded once to float; with llama3 scaling
/// (Hugging Face `_compute_llama3_parameters`): wavelength w = 2*pi/inv; w > O/L -> inv/F;
/// w < O/H -> inv; otherwise s = (O/w - L)/(H - L) and (1-s)*inv/F + s*inv.
std::vector<float> rope_inv_freq(const RopeInvFreqSpec& spec);

/// The values for an `amk:` source. InvalidArgument for an unknown generator or bad arguments.
Result<std::vector<float>> synth_values(std::string_view source);

/// Synthesize `buffer` (its source must be an `amk:` source) into `dst`, which holds
/// buffer.nbytes() bytes. The buffer must be F32 with exactly as many elements as the generator
/// makes; errors name the buffer and the source.
Status synth_buffer(const ir::Buffer& buffer, void* dst);

}  // namespace amk::loader
