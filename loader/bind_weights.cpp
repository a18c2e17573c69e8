// loader/bind_weights.cpp: WEIGHT/CONST binding by `source`: from the mapped safetensors file,
// synthesized (`amk:`), or seeded random; stacked buffers are built by stack_weights.cpp, and the
// rows of rope_pairs buffers permuted by rope_pairs.cpp. Every error names the buffer (id and
// name) and the tensor.
#include "loader/bind_weights.h"

#include <algorithm>
#include <cstring>

#include "loader/names.h"
#include "loader/random_weights.h"
#include "loader/rope_pairs.h"
#include "loader/stack_weights.h"
#include "loader/synth_constants.h"

namespace amk::loader {
namespace {

bool is_bound_kind(const ir::Buffer& b) { return b.kind == ir::BufferKind::Weight || b.kind == ir::BufferKind::Const; }
bool is_synth(const ir::Buffer& b) { return b.source && synth_is_source(*b.source); }

std::string tensor_text(const TensorInfo& t) {
  return "tensor \"" + t.name + "\" is " + std::string(st_dtype_name(t.dtype)) + " " + shape_text(t.shape);
}

Status out_of_memory(const ir::Buffer& b) {
  return Status(StatusCode::Internal, buffer_name(b) + ": out of host memory for " + std::to_string(b.nbytes()) + " bytes");
}

/// Point `b` at its tensor in the file (or at a copy when the tensor is misaligned, or at the
/// permuted copy of a rope_pairs buffer: the same checks, so the same errors, as a plain buffer).
Status bind_from_file(const ir::Buffer& b, ProgramImage::Storage& storage, void** ptr) {
  const SafetensorsFile& file = *storage.weights;
  const std::string who = buffer_name(b) + " (source \"" + *b.source + "\")";
  const TensorInfo* t = file.find(*b.source);
  if (t == nullptr) return Status(StatusCode::NotFound, who + ": tensor not found in " + file.path());
  const auto ir_dtype = st_dtype_to_ir(t->dtype);
  if (!ir_dtype || *ir_dtype != b.dtype)
    return Status(StatusCode::InvalidArgument, who + ": dtype mismatch: the buffer is " +
                                                   std::string(ir::dtype_name(b.dtype)) + " " + shape_text(b.shape) +
                                                   ", but " + tensor_text(*t) + " in " + file.path());
  if (!shapes_match_squeezed(b.shape, t->shape))
    return Status(StatusCode::InvalidArgument, who + ": shape mismatch: the buffer is " +
                                                   std::string(ir::dtype_name(b.dtype)) + " " + shape_text(b.shape) +
                                                   ", but " + tensor_text(*t) + " in " + file.path());
  const void* data = file.data(*t);
  if (b.rope_permuted()) {
    void* copy = storage.allocate(static_cast<uint64_t>(b.nbytes()));
    if (copy == nullptr) return out_of_memory(b);
    rope_pairs_permute(b, data, copy);  // same dtype and element count: checked above
    *ptr = copy;
    return Status::ok();
  }
  const auto item = static_cast<uintptr_t>(st_dtype_itemsize(t->dtype));
  if (t->nbytes() > 0 && reinterpret_cast<uintptr_t>(data) % item == 0) {
    // Zero-copy: the mapping is PROT_READ; WEIGHT/CONST buffers are never written (validate()).
    *ptr = const_cast<void*>(data);
    return Status::ok();
  }
  void* copy = storage.allocate(t->nbytes());
  if (copy == nullptr) return out_of_memory(b);
  if (t->nbytes() > 0) std::memcpy(copy, data, t->nbytes());
  *ptr = copy;
  return Status::ok();
}

/// The first buffer that needs the weights file, or nullptr.
const ir::Buffer* first_file_buffer(const ir::Program& program, const LoadOptions& options) {
  if (options.random_weights_seed) return nullptr;
  for (const ir::Buffer& b : program.buffers)
    if (is_bound_kind(b) && !is_synth(b)) return &b;
  return nullptr;
}

}  // namespace

bool shapes_match_squeezed(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && a[i] == 1) ++i;
  while (j < b.size() && b[j] == 1) ++j;
  return a.size() - i == b.size() - j && std::equal(a.begin() + static_cast<std::ptrdiff_t>(i), a.end(),
                                                     b.begin() + static_cast<std::ptrdiff_t>(j));
}

Status bind_weights(const ir::Program& program, const LoadOptions& options, ProgramImage::Storage& storage) {
  if (const ir::Buffer* first = first_file_buffer(program, options)) {
    if (options.weights_path.empty())
      return Status(StatusCode::InvalidArgument,
                    buffer_name(*first) + " (" + source_text(*first) +
                        ") needs a weights file: set LoadOptions.weights_path or random_weights_seed");
    auto file = SafetensorsFile::open(options.weights_path);
    if (!file) return file.status();
    storage.weights.emplace(std::move(file).value());
  }
  int64_t total_bytes = 0, done_bytes = 0;
  for (const ir::Buffer& b : program.buffers)
    if (is_bound_kind(b)) total_bytes += b.nbytes();
  for (const ir::Buffer& b : program.buffers) {
    if (!is_bound_kind(b)) continue;
    void* ptr = nullptr;
    // Before any branch: a bad rope_pairs must not be silently dropped (a stack, an amk: source).
    if (b.rope_permuted()) {
      if (Status s = rope_pairs_check(b); !s) return s;
    }
    if (b.stacked()) {
      ptr = storage.allocate(static_cast<uint64_t>(b.nbytes()));
      if (ptr == nullptr) return out_of_memory(b);
      const Status s = options.random_weights_seed ? stack_random(program, b, *options.random_weights_seed, ptr)
                                                   : stack_from_file(b, *storage.weights, ptr);
      if (!s) return s;
    } else if (b.rope_permuted() && options.random_weights_seed) {
      ptr = storage.allocate(static_cast<uint64_t>(b.nbytes()));
      if (ptr == nullptr) return out_of_memory(b);
      if (Status s = rope_pairs_random(program, b, *options.random_weights_seed, ptr); !s) return s;
    } else if (is_synth(b) || options.random_weights_seed) {
      ptr = storage.allocate(static_cast<uint64_t>(b.nbytes()));
      if (ptr == nullptr) return out_of_memory(b);
      if (is_synth(b)) {
        if (Status s = synth_buffer(b, ptr); !s) return s;
      } else {
        random_fill(b, *options.random_weights_seed, ptr);
      }
    } else if (!b.source || b.source->empty()) {
      return Status(StatusCode::InvalidArgument,
                    buffer_name(b) + ": " + std::string(ir::buffer_kind_name(b.kind)) + " buffer has no source");
    } else if (Status s = bind_from_file(b, storage, &ptr); !s) {
      return s;
    }
    storage.ptrs[b.id.value] = ptr;
    storage.bytes[b.id.value] = b.nbytes();
    done_bytes += b.nbytes();
    if (options.on_weight_progress) options.on_weight_progress(done_bytes, total_bytes);
  }
  return Status::ok();
}

}  // namespace amk::loader
