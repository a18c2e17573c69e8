// schedule/decode_preset.h: the "gpu-decode" schedule preset: the ScheduleConfig that amk-bench
// decode uses when given none, and amk-compile writes with --preset gpu-decode. Every fusion group,
// each stage's projections cut into equal tiles per SM, stage_balance, one query head per
// attention task, split-KV sized to max_seq, the combine in head tiles, the argmax split over SMs;
// optionally the attention inside o_proj (attention_in_o_proj). docs/PERFORMANCE.md has
// the measurements behind each choice and docs/SCHEDULE.md the knobs it sets.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/enums.h"
#include "ir/program.h"
#include "schedule/model_config.h"

namespace amk::schedule {

/// Whether the preset puts each layer's attention inside its o_proj tiles (docs/ATTENTION_IN_O.md:
/// the {rope, attention, o_proj, residual_add} group, FUSED ATTENTION_GEMV_ADD).
enum class AttentionInOProj {
  Auto,  ///< decode_preset_attention_in_o_proj's rule (off unless AMK_ATTENTION_IN_O=1, for now)
  On,    ///< always (to measure it; the lowering refuses what the fused form cannot do)
  Off,   ///< never: the attention stays its own stage
};

/// Cache rows up to which the auto rule puts the attention in o_proj. A guess to be measured
/// (docs/ATTENTION_IN_O.md, step 6): every o_proj tile reads the whole K / V window from L2 (at
/// 256 rows, 512 KiB a tile on the 1B shape), and that redundant read grows with max_seq while the
/// stage it saves does not.
inline constexpr int64_t kAttentionInOProjMaxSeq = 256;
/// The only head_dim the auto rule takes: at 128 (the 8B) the per-tile K / V reads double and most
/// of the saving goes (docs/ATTENTION_IN_O.md).
inline constexpr int64_t kAttentionInOProjHeadDim = 64;
/// Whether the preset folds down_proj into the gate / up tasks (docs/FOLD.md: one RMSNORM_MLP_FOLD
/// stage instead of the gate / up and down stages; F32 atomic adds, so logits are not
/// bit-reproducible run to run).
enum class MlpFold {
  Auto,  ///< decode_preset_mlp_fold's rule: where the target's HBM share per SM is small enough
  On,    ///< always (the lowering refuses what the fold cannot do)
  Off,   ///< never: gate / up and down stay two stages, and the logits bit-reproducible
};

/// The auto rule's bound on a target's HBM bandwidth per SM (its spec, GB/s): the fold gains only
/// where its chunk consumer, slower per chunk than gate / up's, keeps up with the SM's share of
/// HBM. Measured at two points: an H100 (spec 25.4 GB/s per SM, copy ~22.8) gains 2.7% (1B) and
/// 1.9% (8B) with it; an H200 (36.4, copy ~31.9) lost 2% / 3% (docs/PERFORMANCE.md rows 165, 196-197).
inline constexpr double kMlpFoldMaxGbsPerSm = 30.0;
/// The widest hidden size the auto rule folds: a streamed fold task keeps each output vector of 8
/// floats in kFoldVecsPerThread (2) registers of one of 352 compute threads (16-bit weights:
/// 2 x 352 x 8; instructions/gemv_like.h, fold_stream_chunk_bytes). Wider models would run the
/// plain fold, off the weight stream (Llama-3.1-70B's 8192). tests/instructions checks the two agree.
inline constexpr int64_t kMlpFoldAutoMaxHidden = 5632;

/// The environment variable that lets the auto rule turn the group on ("1"). The GPU kernel is not
/// measured yet, so auto stays off without it; a later change makes the shape rule alone decide.
inline constexpr const char* kAttentionInOEnv = "AMK_ATTENTION_IN_O";
/// The environment variable that overrides DecodePreset::rope_in_qkv: "0" turns rope in the q / k
/// GEMVs off, "1" on (an A/B of the group in one binary: tools/profiling/env-ab.sh); unset or any
/// other value leaves the preset's choice.
inline constexpr const char* kRopeInQkvEnv = "AMK_ROPE_IN_QKV";

/// How much faster a fast SM streamed than the median one inside the megakernel's 8B fold stage
/// (an H100: 0.91 of the median time per column, docs/PERFORMANCE.md row 210). The streaming
/// probe alone shows 1.25-1.3, but there every SM competes for HBM the same way.
inline constexpr double kDefaultFastSmRatio = 1.09;

/// The preset's choices; the defaults are the measured best (H100 / H200, Llama-3.2-1B and 8B).
struct DecodePreset {
  /// > 0: each stage's projections together (q/k/v, o, gate/up, down) cut into this many tiles per
  /// SM, in equal rows: every SM streams the same share of every stage, whatever its size (a
  /// fixed tile size leaves most SMs idle in the small stages: q/k/v in 256 KiB tiles is 48 tasks
  /// on 132 SMs). 0: use tile_kib / tiles_per_sm. With stage_balance, 1 took the 1B shape from
  /// 2.52 to 2.15 ms/token on an H100 (docs/PERFORMANCE.md, row 27).
  int64_t tiles_per_stage = 1;
  int64_t tile_kib = 256;    ///< tiles_per_stage == 0 and > 0: tiles of about this many KiB of bf16 weights
  int64_t tiles_per_sm = 1;  ///< tiles_per_stage == 0 and tile_kib == 0: tiles of each projection per SM
  /// > 0: the LM head in this many tiles per SM whatever the above say (0: as the others). One
  /// long streamed task per SM pays the per-task costs once for the largest projection (H200,
  /// Llama-3.2-1B: LM head stage 298 -> 168 us, 2.44 -> 2.31 ms/token).
  int64_t lm_head_tiles_per_sm = 1;
  /// > 0: the final argmax in this many SAMPLE_ARGMAX tiles per SM (their candidates, then one
  /// combine); 0: one task scans every logit. One SM took ~31 us over the 1B shape's 128256
  /// logits on an H200 (docs/PERFORMANCE.md, row 66).
  int64_t argmax_tiles_per_sm = 1;
  /// How tasks go to SMs (ScheduleConfig sm_assignment): stage_balance evens each stage's bytes,
  /// which is what a stage's latency depends on (docs/SCHEDULE.md).
  std::string sm_assignment = "stage_balance";
  /// > 0: split-KV partitions per head (1..8 or 16); 0: one per 2048 rows of max_seq up to 6144
  /// rows, 16 beyond for a GQA group of 4 to 8, else 8 (decode_preset_kv_partitions).
  int64_t kv_partitions = 0;
  /// > 0: query heads per attention task (clamped to [1, n_heads]); 0: 1, or 2 at 8 partitions,
  /// or the GQA group at 16 (decode_preset_heads_per_task). One head per task beat a KV head's query heads sharing a
  /// pass in the scalar attention (row 56); with the tensor-core path, two heads a task at 8
  /// partitions beat one at 4 at ctx 8192 (docs/PERFORMANCE.md, row 105).
  int64_t heads_per_task = 0;
  /// Fusion groups left out, each as its comma-separated op names in any order ("rope,kv_append"):
  /// a fusion's gain measured in the same run as the default (amk-bench --drop-fusion).
  std::vector<std::string> drop_fusion;
  /// The MLP fold (docs/FOLD.md) instead of the gate / up and down groups: one stage of
  /// RMSNORM_MLP_FOLD tasks, tiles_per_stage per SM over the intermediate columns. Its logits are
  /// not bit-reproducible run to run (F32 atomic adds): Off keeps them so. Auto since session 49:
  /// on where the target's HBM share per SM is small (decode_preset_mlp_fold).
  MlpFold mlp_fold = MlpFold::Auto;
  /// The attention inside o_proj: each o_proj tile a FUSED ATTENTION_GEMV_ADD recomputing the
  /// layer's attention, so the attention stage and its hop go (the group replaces {rope, attention}
  /// and {o_proj, residual_add}; one KV partition, every head in each task).
  AttentionInOProj attention_in_o_proj = AttentionInOProj::Auto;
  /// Rope in the q / k GEMVs (docs/ROPE_IN_GEMV.md: the {rmsnorm, q_proj, k_proj, v_proj, rope,
  /// kv_append} group instead of the qkv, rope-append and rope-attention groups): the attention
  /// tasks start without a rope prologue and the append tasks go. AMK_ROPE_IN_QKV=0 / 1 overrides
  /// it. Not with the attention in o_proj (which rotates q itself): that one wins. On by default
  /// since session 47: H200, two rounds each, 1B -1.2%, 8B -1.0%, max_seq-8192 program -1.9%
  /// against the schedule without it (docs/PERFORMANCE.md rows 191-192).
  bool rope_in_qkv = true;
  /// > 0: this many SMs stream fast_sm_ratio times as fast as the rest (measured on the device:
  /// gpu::measure_sm_speeds, docs/SM_BALANCE.md). The single-projection stages (o_proj, the
  /// fold's or down_proj's, lm_head) then get fast_sms x tiles_per_stage tiles that much wider
  /// (tiling "wide_tiles" / "wide_N_tile") and stage_balance weighs SMs [0, fast_sms) so: the
  /// wide tiles land on the same queues in every stage, which the runtime runs on the fast SMs.
  /// 0 (the default): all tiles equal. Only with tiles_per_stage > 0 and stage_balance.
  int64_t fast_sms = 0;
  double fast_sm_ratio = kDefaultFastSmRatio;
  /// A wide tile stays within this many weight bytes where the equal tile does: the CUDA weight
  /// stream carries a task of at most instructions::kStreamMaxTaskBytes (4 MiB) through the ring
  /// and loads a larger one itself, slower. The 1B's lm_head at ratio 1.09 made 12 wide tiles of
  /// 1048 rows (4.1 MiB) where the equal ones have 972 (3.8 MiB): an H100 ran the 1B 5.9% slower
  /// (docs/PERFORMANCE.md row 212). 0: no bound.
  int64_t wide_tile_max_bytes = int64_t{4} << 20;
};

/// One single-projection stage's tiles with fast SMs (DecodePreset::fast_sms): `wide_tiles` of
/// `wide_n_tile` rows first, then tiles of `n_tile`.
struct WideTiles {
  int64_t n_tile = 1, wide_n_tile = 1, wide_tiles = 0;
};

/// The tiles for `n` output rows on `sms` SMs, `per_sm` tiles each, of which `fast_sms` stream
/// `ratio` times as fast: fast_sms x per_sm wide tiles, about `ratio` times as wide as the rest,
/// together covering n in at most sms x per_sm tiles, with the widths (whole rows) that end the
/// stage first (8B fold, 132 SMs, 24 fast at 1.09: 116 and 107 rows, where equal tiles are 109).
/// Where whole rows leave nothing to gain (the 1B's o_proj: 16-row tiles) the tiles stay equal:
/// wide_n_tile == n_tile, wide_tiles 0. `max_wide_rows` > 0 bounds the wide tiles where the equal
/// tiles are within it (DecodePreset::wide_tile_max_bytes in rows).
WideTiles wide_tiles_for(int64_t n, int64_t sms, int64_t fast_sms, double ratio, int64_t per_sm,
                         int64_t max_wide_rows = 0);

/// Whether the preset puts the rope into the q / k GEMVs: rope_in_qkv unless AMK_ROPE_IN_QKV says
/// "0" or "1" (read now), and never with the attention in o_proj or a dropped qkv group.
bool decode_preset_rope_in_qkv(const DecodePreset& preset, const ModelConfig& model, int64_t max_seq,
                               ir::DType dtype = ir::DType::BF16);

/// The targets the auto rule folds on: NVIDIA sm_90 or newer (the weight stream's fold; AMD and
/// older NVIDIA targets would run the plain fold) with a known HBM bandwidth of at most
/// kMlpFoldMaxGbsPerSm per SM.
bool mlp_fold_target_ok(const ir::GpuTarget& target);

/// The shapes the auto rule folds: bf16 / f16 and hidden_size <= kMlpFoldAutoMaxHidden.
bool mlp_fold_shape_ok(const ModelConfig& model, ir::DType dtype);

/// Whether the preset folds `model`'s MLP on `target`. On: yes; Off: no; Auto: when target and
/// shape qualify, the attention is not in o_proj and neither MLP group nor {o_proj, residual_add}
/// (which the fold needs) is dropped.
bool decode_preset_mlp_fold(const DecodePreset& preset, const ModelConfig& model, const ir::GpuTarget& target,
                            int64_t max_seq, ir::DType dtype = ir::DType::BF16);

/// "auto" | "on" | "off" -> the knob; nullopt for anything else.
std::optional<MlpFold> mlp_fold_from_name(std::string_view name);
/// The knob's name ("auto").
std::string mlp_fold_name(MlpFold mode);

/// "auto" | "on" | "off" -> the knob; nullopt for anything else.
std::optional<AttentionInOProj> attention_in_o_proj_from_name(std::string_view name);
/// The knob's name ("auto").
std::string attention_in_o_proj_name(AttentionInOProj mode);

/// The shapes the auto rule takes: head_dim kAttentionInOProjHeadDim, bf16 or f16 KV caches and
/// max_seq <= kAttentionInOProjMaxSeq.
bool attention_in_o_proj_shape_ok(const ModelConfig& model, int64_t max_seq, ir::DType dtype);

/// Whether the preset lowers `model`'s attention inside o_proj. On: yes; Off: no; Auto: when the
/// shape qualifies, AMK_ATTENTION_IN_O=1 is set (read now), and the preset leaves what the group
/// replaces alone (no MLP fold, neither replaced group dropped, no split-KV or head tiling asked for).
bool decode_preset_attention_in_o_proj(const DecodePreset& preset, const ModelConfig& model, int64_t max_seq,
                                       ir::DType dtype = ir::DType::BF16);

/// Whether `text` ("rope,kv_append", any order) names one of fusion_all_groups().
bool is_builtin_fusion_group(const std::string& text);

/// The split-KV partitions per head the preset gives `model`'s KV cache of `max_seq` rows (with
/// the attention in o_proj 1, unless the preset gives them).
int64_t decode_preset_kv_partitions(const DecodePreset& preset, const ModelConfig& model, int64_t max_seq,
                                    ir::DType dtype = ir::DType::BF16);

/// The query heads per attention task the preset gives `model` (with the attention in o_proj
/// all of them, unless the preset gives them).
int64_t decode_preset_heads_per_task(const DecodePreset& preset, const ModelConfig& model, int64_t max_seq,
                                     ir::DType dtype = ir::DType::BF16);

/// The preset as ScheduleConfig JSON (docs/SCHEDULE.md) for `model` on `target` (its SM count,
/// taken as >= 1, cuts the tiles; its bandwidth and arch decide the auto fold), a KV cache of
/// `max_seq` rows and activations / KV caches of `dtype` (the lowering's).
std::string decode_preset_json(const ModelConfig& model, const ir::GpuTarget& target, int64_t max_seq,
                               const DecodePreset& preset, ir::DType dtype = ir::DType::BF16);

}  // namespace amk::schedule
