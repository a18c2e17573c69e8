// loader/loader.h: resolve a validated ir::Program plus safetensors weights into host memory and
// the amk_program_t tables a VM executes (one image per program; backends copy it to devices).
// It refuses any program validate() rejects; the only way around that is the explicitly named
// test hook in LoadOptions, which exists so watchdog tests can run a deliberately stuck program.
// Table indices are entity ids: buffers_[b.id], instructions_[t.id], counters_[c.id]. Each
// instruction's `sm` is the worker that runs it (task.sm % workers, or round-robin when unassigned).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/program.h"
#include "ir/status.h"
#include "vm/abi.h"

namespace amk::loader {

class SafetensorsFile;

struct LoadOptions {
  /// safetensors file with every WEIGHT/CONST `source`; empty with random_weights_seed set is fine.
  std::string weights_path;
  /// Fill WEIGHT (and non-`amk:` CONST) buffers with seeded random values instead of reading a
  /// file: normal(0, 1/sqrt(last_dim)) for matrices, 1 + 0.1 * normal for 1-D (norm) weights.
  /// `amk:` constants are still synthesized. No file is opened. A stacked buffer's parts get the
  /// values of the program's unstacked buffer of the same source (random_weights.h).
  std::optional<uint64_t> random_weights_seed;
  /// Workers (virtual SMs) to build queues for; 0 = the program's SM count (max sm + 1), or 1.
  int workers = 0;
  /// TEST ONLY: load without validate(). Exists for watchdog tests of deliberately stuck programs.
  /// Structural checks (ids, references, caps) still run, so loading never reads out of bounds.
  bool unsafe_skip_validation_for_tests = false;
  /// Called after each WEIGHT/CONST buffer is bound with (bytes bound so far, total bytes), e.g.
  /// for a progress bar; may be empty. Runs on the loading thread.
  std::function<void(int64_t done_bytes, int64_t total_bytes)> on_weight_progress;
};

/// The decode interface of a program (its `decode` section), resolved to buffer indices.
struct DecodeBindings {
  int32_t token_input = -1;  ///< IO_INPUT I32 buffer the host writes each step
  int32_t logits = -1;       ///< buffer read back as logits (-1 = none)
  int32_t next_token = -1;   ///< I32 buffer holding the sampled token (-1 = none)
  int32_t max_seq = 0;       ///< KV cache rows: the last valid position is max_seq - 1
  int32_t vocab = 0;         ///< logits length
};

/// Host memory image of a program. Owns every allocation the amk_program_t view points into.
class ProgramImage {
 public:
  ProgramImage();
  ~ProgramImage();
  ProgramImage(const ProgramImage&) = delete;
  ProgramImage& operator=(const ProgramImage&) = delete;

  const ir::Program& program() const { return program_; }
  /// Pointers into this image's tables; valid while the image lives.
  amk_program_t& view() { return view_; }
  const amk_program_t& view() const { return view_; }
  const DecodeBindings& decode() const { return decode_; }
  /// Index of the buffer named `name`, or -1.
  int32_t buffer_index(const std::string& name) const;
  /// Zero every KV cache, activation (page), IO buffer and counter, clear the error slot and the
  /// abort flag, and reset the step to {pos 0, epoch 1} (Session::reset).
  void clear_state();
  /// Workers the queues were built for.
  int workers() const { return view_.n_sms; }
  /// The mapped weights file, or nullptr when none was opened. Zero-copy WEIGHT/CONST buffers point
  /// into it (read-only memory: a store through such a pointer faults).
  const SafetensorsFile* weights() const;
  /// Bytes a buffer's allocation holds for it (numel * itemsize; a paged buffer's own size).
  int64_t buffer_bytes(int32_t index) const;

  // Filled by load_program(); public so backends can mirror the tables.
  ir::Program program_;
  std::vector<amk_buffer_t> buffers_;
  std::vector<amk_instruction_t> instructions_;
  std::vector<amk_counter_t> counters_;
  std::vector<uint32_t> counter_producers_;
  std::vector<int32_t> queue_offsets_;  ///< workers + 1 entries
  std::vector<int32_t> queue_;          ///< instruction indices, worker by worker
  amk_step_t step_{};
  amk_error_slot_t error_{};
  int32_t abort_flag_ = 0;
  DecodeBindings decode_;
  struct Storage;
  std::unique_ptr<Storage> storage_;  ///< the weights mapping, host allocations, name index
  amk_program_t view_{};
};

/// Validate, bind weights, allocate activations (honouring `pages`), KV caches and IO buffers,
/// marshal instructions and build per-worker queues. The first problem is returned, naming the
/// buffer, tensor or task: ValidationFailed (validate() rejected it), NotFound (a tensor is not in
/// the weights file), InvalidArgument (shape/dtype mismatch, bad decode section or options),
/// ParseError/IoError (the weights file), Internal (out of host memory).
Result<std::unique_ptr<ProgramImage>> load_program(const ir::Program& program, const LoadOptions& options);

}  // namespace amk::loader
