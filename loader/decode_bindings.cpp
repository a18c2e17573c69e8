// loader/decode_bindings.cpp: `decode` section checks. Buffer ids are dense (check_structure).
#include "loader/decode_bindings.h"

#include <limits>

#include "loader/names.h"

namespace amk::loader {
namespace {

using Json = nlohmann::ordered_json;

Status bad(const std::string& field, const std::string& what) {
  return Status(StatusCode::InvalidArgument, "decode." + field + ": " + what);
}

/// An optional non-negative int32 field; absent or null leaves *out unchanged.
Status get_int(const Json& d, const std::string& field, int32_t* out) {
  auto it = d.find(field);
  if (it == d.end() || it->is_null()) return Status::ok();
  if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > std::numeric_limits<int32_t>::max() ||
      (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())))
    return bad(field, "expected a non-negative int32, got " + it->dump());
  *out = static_cast<int32_t>(it->get<int64_t>());
  return Status::ok();
}

std::string describe(const ir::Buffer& b) {
  return buffer_name(b) + " is " + std::string(ir::buffer_kind_name(b.kind)) + " " + std::string(ir::dtype_name(b.dtype)) +
         " " + shape_text(b.shape);
}

}  // namespace

Result<DecodeBindings> decode_bindings(const ir::Program& program) {
  DecodeBindings out;
  const Json& d = program.decode;
  if (d.is_null()) return out;
  if (!d.is_object()) return Status(StatusCode::InvalidArgument, "decode: expected an object, got " + d.dump());
  std::vector<const ir::Buffer*> by_id(program.buffers.size());
  for (const ir::Buffer& b : program.buffers) by_id[b.id.value] = &b;

  for (const char* field : {"token_input", "logits", "next_token", "max_seq", "vocab"}) {
    int32_t v = -1;
    if (Status s = get_int(d, field, &v); !s) return s;
    if (v < 0) continue;
    const std::string f = field;
    if (f == "max_seq") {
      out.max_seq = v;
    } else if (f == "vocab") {
      out.vocab = v;
    } else if (static_cast<size_t>(v) >= by_id.size()) {
      return bad(f, "buffer " + std::to_string(v) + " does not exist");
    } else {
      (f == "token_input" ? out.token_input : f == "logits" ? out.logits : out.next_token) = v;
    }
  }
  if (out.token_input >= 0) {
    const ir::Buffer& b = *by_id[out.token_input];
    if (b.kind != ir::BufferKind::IoInput || b.dtype != ir::DType::I32)
      return bad("token_input", describe(b) + "; expected an IO_INPUT I32 buffer");
  }
  if (out.next_token >= 0) {
    const ir::Buffer& b = *by_id[out.next_token];
    if (b.dtype != ir::DType::I32 || b.numel() < 1) return bad("next_token", describe(b) + "; expected an I32 buffer");
  }
  if (out.logits >= 0) {
    const ir::Buffer& b = *by_id[out.logits];
    if (b.dtype != ir::DType::F32 && b.dtype != ir::DType::BF16 && b.dtype != ir::DType::F16)
      return bad("logits", describe(b) + "; expected F32, BF16 or F16");
    if (out.vocab == 0 && b.numel() <= std::numeric_limits<int32_t>::max()) out.vocab = static_cast<int32_t>(b.numel());
    if (b.numel() != out.vocab)
      return bad("logits", describe(b) + " (" + std::to_string(b.numel()) + " elements), but decode.vocab is " +
                               std::to_string(out.vocab));
  }
  if (out.max_seq > 0) {
    for (const ir::Buffer& b : program.buffers) {
      if (b.kind != ir::BufferKind::KvCache) continue;
      if (b.shape.empty() || b.shape[0] < out.max_seq)
        return bad("max_seq", std::to_string(out.max_seq) + " exceeds the rows of KV cache " + describe(b));
    }
  }
  return out;
}

}  // namespace amk::loader
