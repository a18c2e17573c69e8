// tools/bench/tune_space.h: what `amk-bench tune` searches: axes over the gpu-decode preset's knobs
// (schedule/decode_preset.h), each with the values to try. A space comes from a JSON file (one
// object, axis name -> array of values, searched in the file's order) or is the built-in one for a
// model and KV cache size. Host code; no GPU needed.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/status.h"
#include "schedule/decode_preset.h"
#include "schedule/model_config.h"

namespace amk::bench {

/// One axis: a DecodePreset field and the values to try. Integer axes hold integers, sm_assignment
/// strings, drop_fusion arrays of fusion groups ("rope,kv_append"; [] = every fusion on),
/// rope_in_qkv true / false, mlp_fold "auto" / "on" / "off".
struct TuneAxis {
  std::string name;
  std::vector<nlohmann::json> values;
};

struct TuneSpace {
  std::vector<TuneAxis> axes;
};

/// The axis names a space may use, in the built-in space's order.
const std::vector<std::string>& tune_axis_names();

/// The values an integer knob of the preset takes, [lo, hi]: the one range both a tune space and
/// amk-bench decode's flag of the same name (--tiles-per-stage for tiles_per_stage) check against.
/// {0, -1} (empty) for a name that is not an integer knob.
struct KnobRange {
  int64_t lo, hi;
};
KnobRange preset_knob_range(const std::string& name);

/// `preset` with axis `name` set to `value`. The value must be valid for the axis (checked by
/// tune_space_from_json; an unchecked bad value is Internal).
[[nodiscard]] Result<schedule::DecodePreset> tune_apply(schedule::DecodePreset preset, const std::string& name,
                                                       const nlohmann::json& value);

/// A space from a JSON object. Refusals are InvalidArgument naming `origin` and the element:
/// an unknown axis ("tiles_per_stag" lists the known ones), an axis that is not a non-empty array,
/// a value of the wrong type or out of the knob's range ("kv_partitions[2]: 9 is not in [0, 8]"),
/// an unknown fusion group, a value given twice, an empty object.
[[nodiscard]] Result<TuneSpace> tune_space_from_json(const nlohmann::ordered_json& j, const std::string& origin);
/// Read and parse a space file (IoError when unreadable, ParseError when not JSON).
[[nodiscard]] Result<TuneSpace> tune_space_load(const std::string& path);

/// The built-in space for `model` with a KV cache of `max_seq` rows: tile counts per stage and for
/// the LM head, the argmax split, split-KV partitions that fit the cache, query heads per attention
/// task up to the GQA group, every sm_assignment policy, each fusion group left out in turn, the
/// rope in the q / k GEMVs or in the attention tasks, and the MLP fold auto / on / off.
TuneSpace default_tune_space(const schedule::ModelConfig& model, int64_t max_seq);

/// The knobs where `preset` differs from the default DecodePreset, as "name=value" joined by
/// spaces ("tiles_per_stage=2 drop_fusion=rope,attention"), or "default".
std::string tune_label(const schedule::DecodePreset& preset);

/// The preset's knobs as a JSON object (every DecodePreset field).
nlohmann::ordered_json tune_preset_json(const schedule::DecodePreset& preset);

}  // namespace amk::bench
