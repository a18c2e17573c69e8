// ir/program.h: the MegakernelProgram data model (IR spec section 1).
// Plain data: every field is what the JSON says, unchecked. validate() is what proves a Program
// safe; nothing here assumes ids are in range or dense.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/enums.h"
#include "ir/params.h"

namespace amk::ir {

/// A distinct integer id type per entity, so a BufferId can never be passed as a TaskId.
template <typename Tag>
struct Id {
  int32_t value = -1;
  constexpr Id() = default;
  constexpr explicit Id(int32_t v) : value(v) {}
  constexpr bool operator==(Id o) const { return value == o.value; }
  constexpr bool operator!=(Id o) const { return value != o.value; }
  constexpr bool operator<(Id o) const { return value < o.value; }
};
using TaskId = Id<struct TaskTag>;
using BufferId = Id<struct BufferTag>;
using CounterId = Id<struct CounterTag>;
using PageId = Id<struct PageTag>;

inline constexpr const char* kIrVersion = "0.2.0";
inline constexpr const char* kAbiVersion = "0.2";

/// One part of a stacked WEIGHT/CONST buffer (docs/FOLD.md, "Stacked weight sources"): the rank-2
/// state-dict tensor `source`, transposed first when `transpose` is set.
struct StackPart {
  std::string source;
  bool transpose = false;
  bool operator==(const StackPart& o) const { return source == o.source && transpose == o.transpose; }
};

/// A named tensor (spec 1.2). `source` is the state-dict key for WEIGHT/CONST buffers; a stacked
/// one has `stack` instead: shape [N, P, K] with P = stack.size() and buf[n, p, :] = row n of
/// part p (after its transpose). At most one of the two is set (validate(): source.stack).
/// `rope_pairs` = hd permutes the rows of a rank-2 `source` per head of hd rows, so that
/// rotate-half pairs (i, i + hd/2) become adjacent rows (2i, 2i + 1) (docs/JSON.md "rope_pairs";
/// validate(): source.rope_pairs).
struct Buffer {
  BufferId id;
  std::string name;
  BufferKind kind = BufferKind::Activation;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  MemSpace space = MemSpace::Hbm;
  std::optional<std::string> source;
  /// Empty = not stacked. The `= {}` keeps aggregate inits that stop at `source` free of
  /// -Wmissing-field-initializers.
  std::vector<StackPart> stack = {};
  /// 0 = rows as in the file; else the head_dim hd: stored row b*hd + 2i is source row b*hd + i,
  /// row b*hd + 2i + 1 is source row b*hd + i + hd/2 (i < hd/2). `= 0` for the same reason as above.
  int64_t rope_pairs = 0;

  /// True when the buffer is built from stacked parts.
  bool stacked() const { return !stack.empty(); }
  /// True when the rows are permuted into rope-pair order at load.
  bool rope_permuted() const { return rope_pairs != 0; }

  /// Product of the shape (1 for rank 0); -1 if any dimension is negative or it overflows.
  int64_t numel() const;
  /// Bytes of numel() elements of dtype; -1 when numel() is.
  int64_t nbytes() const;
  /// Row-major element strides.
  std::vector<int64_t> contiguous_strides() const;
};

/// "Do not start until counters[counter] >= threshold" (spec 1.4).
struct Wait {
  CounterId counter;
  int64_t threshold = 0;
  bool operator==(const Wait& o) const { return counter == o.counter && threshold == o.threshold; }
};

/// A DAG node: one instruction on one SM (spec 1.3).
struct Task {
  TaskId id;
  Opcode op = Opcode::Nop;
  std::vector<BufferId> inputs;
  std::vector<BufferId> outputs;
  CounterId out_counter;
  std::vector<Wait> waits;
  Params params;
  std::optional<int32_t> sm;  ///< nullopt = unassigned (any worker)
  int64_t est_bytes = 0;
  int64_t est_flops = 0;
  std::string label;
};

/// A monotonic uint32 counter; init must be 0 (DESIGN.md: amk is stricter than the spec).
struct Counter {
  CounterId id;
  int64_t init = 0;
  std::string note;
};

/// A physical scratch slot shared by activations with disjoint live ranges (spec 4).
struct Page {
  PageId id;
  MemSpace space = MemSpace::GlobalScratch;
  int64_t nbytes = 0;
  int64_t live_start = -1;
  int64_t live_end = -1;
};

/// Buffer -> page binding; every bound buffer starts at byte 0 of its page.
struct PageAllocation {
  std::vector<std::pair<BufferId, PageId>> buffer_to_page;  ///< in file order
  std::vector<Page> pages;
  int64_t total_scratch_bytes() const;
};

/// A GPU described as data (spec 5.1).
struct GpuTarget {
  std::string name;
  int64_t sm_arch = 0;
  int64_t num_sms = 0;
  int64_t smem_bytes_per_sm = 0;
  int64_t smem_bytes_per_block_optin = 0;
  int64_t regs_per_sm = 0;
  int64_t max_threads_per_sm = 0;
  int64_t max_regs_per_thread = 0;
  int64_t l2_bytes = 0;
  int64_t hbm_bytes = 0;
  double hbm_bandwidth_gbs = 0.0;
  double fp16_tflops = 0.0;
  double clock_ghz = 0.0;
  bool supports_cooperative = true;
  bool wddm_tdr = false;
  std::string note;

  /// The single-stream decode floor: weight_bytes / bandwidth, in microseconds.
  double bandwidth_bound_us(int64_t weight_bytes) const;
};

/// The schedule search point that produced a lowering (spec 5).
struct ScheduleConfig {
  std::map<std::string, std::map<std::string, int64_t>> tiling;
  std::vector<std::vector<std::string>> fusion_grouping;
  /// "round_robin" | "load_balance" | "stage_balance" (amk) | explicit task id -> sm map.
  std::variant<std::string, std::map<int64_t, int64_t>> sm_assignment = std::string("load_balance");
  /// amk: "stage_balance" counts SMs [0, fast_sms) as fast_sm_ratio times as fast as the rest, so
  /// a stage's wide tiles (tiling "wide_tiles") land on the same SMs in every stage; the runtime
  /// runs those queues on the SMs it measured fastest (docs/SM_BALANCE.md). 0 = all SMs equal.
  int64_t fast_sms = 0;
  double fast_sm_ratio = 1.0;
  int64_t pipelining_depth = 2;
  std::string page_allocation = "graph_color";
  int64_t threads_per_block = 256;
  int64_t smem_bytes_per_block = 0;
};

/// A complete megakernel schedule (spec 1). Unknown top-level JSON keys are not kept.
struct Program {
  std::string ir_version = kIrVersion;
  std::string abi_version = kAbiVersion;
  nlohmann::ordered_json meta = nlohmann::ordered_json::object();
  std::optional<GpuTarget> target;
  std::vector<Buffer> buffers;
  std::vector<Counter> counters;
  std::vector<Task> tasks;
  std::optional<PageAllocation> pages;
  std::optional<ScheduleConfig> config;
  /// amk extension: which params advance with the decode position (issue 4); kept verbatim.
  nlohmann::ordered_json decode = nullptr;

  /// Sum of WEIGHT and CONST buffer bytes (what a decode step must read once).
  int64_t total_weight_bytes() const;
};

}  // namespace amk::ir

template <typename Tag>
struct std::hash<amk::ir::Id<Tag>> {
  size_t operator()(amk::ir::Id<Tag> id) const noexcept { return std::hash<int32_t>()(id.value); }
};
