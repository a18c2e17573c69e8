// vm/trace_export.cpp: Chrome trace event JSON from LaunchTrace records (docs/TRACING.md).
// Complete events ("ph": "X") only, so a viewer needs no begin/end matching; per worker the wait
// slice ends exactly where the run slice begins, so the slices on one track never overlap.
#include "vm/trace_export.h"

#include <algorithm>
#include <limits>

#include "ir/enums.h"
#include "ir/json.h"

namespace amk::vm {
namespace {

using Json = nlohmann::ordered_json;
constexpr int kPid = 1;

Json metadata(const char* name, int tid, const Json& args) {
  Json e;
  e["ph"] = "M";
  e["name"] = name;
  e["pid"] = kPid;
  e["tid"] = tid;
  e["args"] = args;
  return e;
}

Json slice(const std::string& name, const std::string& cat, int tid, double ts_us, double dur_us, Json args) {
  Json e;
  e["ph"] = "X";
  e["name"] = name;
  e["cat"] = cat;
  e["pid"] = kPid;
  e["tid"] = tid;
  e["ts"] = ts_us;
  e["dur"] = dur_us;
  e["args"] = std::move(args);
  return e;
}

Json waits_json(const ir::Task& t) {
  Json waits = Json::array();
  for (const ir::Wait& w : t.waits) waits.push_back({{"counter", w.counter.value}, {"threshold", w.threshold}});
  return waits;
}

std::string task_title(const ir::Task& t) {
  return t.label.empty() ? "task " + std::to_string(t.id.value) : t.label;
}

/// The earliest timestamp of all launches: trace times start at 0 there.
uint64_t trace_origin(const std::vector<LaunchTrace>& launches) {
  uint64_t origin = std::numeric_limits<uint64_t>::max();
  for (const LaunchTrace& l : launches) {
    if (l.t_launch_begin != 0) origin = std::min(origin, l.t_launch_begin);
    for (const TaskTiming& r : l.records)
      if (r.t_end != 0) origin = std::min(origin, r.t_wait_begin);
    for (const ChunkTiming& c : l.chunks)  // the loader issues chunks before the first task waits
      if (c.t_done != 0) origin = std::min(origin, c.t_issue);
  }
  return origin == std::numeric_limits<uint64_t>::max() ? 0 : origin;
}

int chunk_track(int workers, int w) { return workers + 1 + w; }

/// One "chunk" slice per consumed weight-stream chunk, from when it was seen landed to when it was
/// consumed, on its SM's weight-stream track (docs/TRACING.md).
template <class Us, class DurUs>
void append_chunks(const ir::Program& program, const LaunchTrace& l, size_t step, int workers, const Us& us,
                   const DurUs& dur_us, Json* events) {
  if (l.chunks_per_worker <= 0) return;
  for (size_t i = 0; i < l.chunks.size(); ++i) {
    const ChunkTiming& c = l.chunks[i];
    const int w = static_cast<int>(i / static_cast<size_t>(l.chunks_per_worker));
    if (c.t_done == 0 || w >= workers || c.queue_slot < 0 || static_cast<size_t>(c.queue_slot) >= l.records.size())
      continue;
    const int32_t task = l.records[static_cast<size_t>(c.queue_slot)].task;
    if (task < 0 || static_cast<size_t>(task) >= program.tasks.size()) continue;
    Json args;
    args["task"] = task;
    args["label"] = program.tasks[static_cast<size_t>(task)].label;
    const size_t n = i % static_cast<size_t>(l.chunks_per_worker);
    args["n"] = n;
    args["ring_slot"] = l.ring_slots > 0 ? n % static_cast<size_t>(l.ring_slots) : 0;
    args["bytes"] = c.bytes;
    args["step"] = step;
    args["issue"] = us(c.t_issue);
    args["wait_us"] = dur_us(c.t_wait, c.t_ready);
    args["issue_to_ready_us"] = dur_us(c.t_issue, c.t_ready);
    events->push_back(slice("chunk", "chunk", chunk_track(workers, w), us(c.t_ready), dur_us(c.t_ready, c.t_done),
                            std::move(args)));
  }
}

}  // namespace

Json trace_to_chrome_json(const ir::Program& program, const std::vector<LaunchTrace>& launches, const TraceInfo& info) {
  const uint64_t origin = trace_origin(launches);
  auto us = [origin](uint64_t ns) { return static_cast<double>(ns - origin) / 1e3; };
  // Durations from the integer difference, so they carry no rounding noise of their own.
  auto dur_us = [](uint64_t begin, uint64_t end) { return end > begin ? static_cast<double>(end - begin) / 1e3 : 0.0; };
  const bool gpu = info.backend != "cpu";
  const int launch_track = info.workers;  // after the workers, so it sorts last

  Json events = Json::array();
  events.push_back(metadata("process_name", 0, {{"name", "amk " + info.backend + ": " + info.program}}));
  for (int w = 0; w < info.workers; ++w) {
    events.push_back(metadata("thread_name", w, {{"name", (gpu ? "SM " : "worker ") + std::to_string(w)}}));
    events.push_back(metadata("thread_sort_index", w, {{"sort_index", w}}));
  }
  events.push_back(metadata("thread_name", launch_track, {{"name", "launches"}}));
  events.push_back(metadata("thread_sort_index", launch_track, {{"sort_index", launch_track}}));
  const bool any_chunks =
      std::any_of(launches.begin(), launches.end(), [](const LaunchTrace& l) { return !l.chunks.empty(); });
  for (int w = 0; any_chunks && w < info.workers; ++w) {  // a weight-stream track per SM, after "launches"
    const int tid = chunk_track(info.workers, w);
    events.push_back(metadata("thread_name", tid, {{"name", "SM " + std::to_string(w) + " weight stream"}}));
    events.push_back(metadata("thread_sort_index", tid, {{"sort_index", tid}}));
  }

  for (size_t step = 0; step < launches.size(); ++step) {
    const LaunchTrace& l = launches[step];
    if (l.t_launch_end > l.t_launch_begin && l.t_launch_begin >= origin) {
      Json largs = {{"step", step}, {"pos", l.pos}};
      if (!l.worker_sm.empty()) largs["worker_sm"] = l.worker_sm;  // the launch's placement, worker by worker
      events.push_back(slice("step " + std::to_string(step) + " (pos " + std::to_string(l.pos) + ")", "launch",
                             launch_track, us(l.t_launch_begin), dur_us(l.t_launch_begin, l.t_launch_end),
                             std::move(largs)));
    }
    for (const TaskTiming& r : l.records) {
      if (r.t_end == 0 || r.task < 0 || static_cast<size_t>(r.task) >= program.tasks.size()) continue;
      const ir::Task& t = program.tasks[static_cast<size_t>(r.task)];
      const std::string opcode(ir::opcode_name(t.op));
      if (!t.waits.empty()) {
        events.push_back(slice("wait", "wait", r.worker, us(r.t_wait_begin), dur_us(r.t_wait_begin, r.t_run_begin),
                               {{"task", r.task}, {"label", t.label}, {"step", step}, {"waits", waits_json(t)}}));
      }
      Json args;
      args["task"] = r.task;
      args["id"] = t.id.value;
      args["label"] = t.label;
      args["opcode"] = opcode;
      args["sm"] = r.worker;
      if (r.worker >= 0 && static_cast<size_t>(r.worker) < l.worker_sm.size()) args["hw_sm"] = l.worker_sm[r.worker];
      args["step"] = step;
      args["pos"] = l.pos;
      args["waits"] = waits_json(t);
      args["wait_us"] = dur_us(r.t_wait_begin, r.t_run_begin);
      events.push_back(slice(task_title(t) + " " + opcode, opcode, r.worker, us(r.t_run_begin),
                             dur_us(r.t_run_begin, r.t_end), std::move(args)));
    }
    append_chunks(program, l, step, info.workers, us, dur_us, &events);
  }

  Json doc;
  doc["traceEvents"] = std::move(events);
  doc["displayTimeUnit"] = "ns";
  doc["otherData"] = {{"tool", "amk"},
                      {"program", info.program},
                      {"backend", info.backend},
                      {"workers", info.workers},
                      {"launches", launches.size()},
                      {"ring_slots", launches.empty() ? 0 : launches.front().ring_slots},
                      {"clock", launches.empty() ? std::string() : launches.front().clock}};
  return doc;
}

Status trace_save_chrome(const std::string& path, const ir::Program& program, const std::vector<LaunchTrace>& launches,
                         const TraceInfo& info) {
  std::string text;
  try {
    text = trace_to_chrome_json(program, launches, info).dump(-1, ' ', false, Json::error_handler_t::replace);
  } catch (const std::exception& e) {  // allocation failure on a huge trace
    return Status(StatusCode::Internal, path + ": cannot build the trace: " + e.what());
  }
  text.push_back('\n');
  return ir::text_save_atomic(path, text);
}

}  // namespace amk::vm
