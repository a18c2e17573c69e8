// ir/dot.cpp: DOT rendering of a program (ir/dot.h). Tasks are named by position ("t<pos>"), not
// id, so programs with duplicate or missing ids (which validate() rejects) still draw.
#include "ir/dot.h"

#include <map>
#include <set>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "ir/enums.h"

namespace amk::ir {
namespace {

// One distinct, light fill per opcode code (0..19), readable under black text.
constexpr const char* kPalette[kOpcodeCount] = {
    "#e0e0e0", "#b3cde3", "#ccebc5", "#fed9a6", "#fddaec", "#decbe4", "#f2f2a0", "#a6d8f0",
    "#c2e699", "#fbb4ae", "#e5d8bd", "#d9f0d3", "#bebada", "#ffffb3", "#80cdc1", "#f4cae4",
    "#c7eae5", "#fdcdac", "#cbd5e8", "#e6f5c9"};
static_assert(kOpcodeCount == 20, "a new opcode needs a fill color in kPalette");

/// A DOT double-quoted string: quotes and backslashes escaped, newlines as DOT's "\n".
std::string dot_string(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      q += '\\';
      q += c;
    } else if (c == '\n') {
      q += "\\n";
    } else if (static_cast<unsigned char>(c) >= 0x20) {
      q += c;
    }
  }
  return q + "\"";
}

std::string node_name(size_t pos) { return "t" + std::to_string(pos); }

/// What the errors name, by id, and the messages to show on each task.
struct Highlight {
  std::set<int32_t> task_ids;
  std::set<int32_t> counter_ids;
  std::map<int32_t, std::vector<std::string>> task_notes;  // id -> "rule: message"
};

Highlight collect_highlight(const ValidationResult* verdict) {
  Highlight h;
  if (verdict == nullptr) return h;
  for (const Diagnostic& d : verdict->errors) {
    for (TaskId t : d.tasks) {
      h.task_ids.insert(t.value);
      auto& notes = h.task_notes[t.value];
      if (notes.size() < 4) notes.push_back(d.rule + ": " + d.message);
    }
    for (CounterId c : d.counters) h.counter_ids.insert(c.value);
  }
  return h;
}

void write_node(std::ostream& os, const Program& p, size_t pos, const Highlight& h) {
  const Task& t = p.tasks[pos];
  std::string label = std::to_string(t.id.value) + ": " + (t.label.empty() ? "(no label)" : t.label) + "\n" +
                      std::string(opcode_name(t.op));
  os << "    " << node_name(pos) << " [label=" << dot_string(label) << ", fillcolor=" << dot_string(dot_opcode_color(t.op));
  auto bad = h.task_notes.find(t.id.value);
  if (bad != h.task_notes.end()) {
    std::string tip;
    for (const std::string& n : bad->second) tip += (tip.empty() ? "" : "\n") + n;
    os << ", color=red, penwidth=3, fontcolor=red, tooltip=" << dot_string(tip);
  }
  os << "];\n";
}

/// Tasks per cluster key: the SM, or -1 for unassigned (drawn last).
std::map<int32_t, std::vector<size_t>> tasks_by_sm(const Program& p) {
  std::map<int32_t, std::vector<size_t>> by_sm;
  for (size_t i = 0; i < p.tasks.size(); ++i) by_sm[p.tasks[i].sm.value_or(-1)].push_back(i);
  return by_sm;
}

void write_clusters(std::ostream& os, const Program& p, const Highlight& h) {
  for (const auto& [sm, positions] : tasks_by_sm(p)) {
    const std::string name = sm >= 0 ? "cluster_sm_" + std::to_string(sm) : "cluster_unassigned";
    os << "  subgraph " << name << " {\n";
    os << "    label=" << dot_string(sm >= 0 ? "SM " + std::to_string(sm) : "unassigned") << "; style=rounded; color=gray60;\n";
    for (size_t pos : positions) write_node(os, p, pos, h);
    os << "  }\n";
  }
}

/// A dashed red edge between tasks an error names together but no dependency connects (a race:
/// the missing order is the problem, so there is no edge to color).
void write_missing_orders(std::ostream& os, const Program& p, const ValidationResult* verdict,
                          std::set<std::pair<size_t, size_t>>& drawn) {
  if (verdict == nullptr) return;
  std::unordered_map<int32_t, size_t> pos_of;
  for (size_t i = 0; i < p.tasks.size(); ++i) pos_of.emplace(p.tasks[i].id.value, i);
  for (const Diagnostic& d : verdict->errors) {
    for (size_t i = 0; i + 1 < d.tasks.size(); ++i) {
      auto a = pos_of.find(d.tasks[i].value), b = pos_of.find(d.tasks[i + 1].value);
      if (a == pos_of.end() || b == pos_of.end() || a->second == b->second) continue;
      if (drawn.count({a->second, b->second}) != 0 || drawn.count({b->second, a->second}) != 0) continue;
      drawn.insert({a->second, b->second});
      os << "  " << node_name(a->second) << " -> " << node_name(b->second) << " [label=" << dot_string(d.rule)
         << ", style=dashed, dir=none, color=red, fontcolor=red, constraint=false];\n";
    }
  }
}

void write_edges(std::ostream& os, const Program& p, const Highlight& h, const ValidationResult* verdict) {
  std::unordered_map<int32_t, std::vector<size_t>> producers;  // counter id -> producer positions
  for (size_t i = 0; i < p.tasks.size(); ++i) producers[p.tasks[i].out_counter.value].push_back(i);
  std::set<std::pair<size_t, size_t>> drawn;  // one edge per pair even with several shared counters
  for (size_t w = 0; w < p.tasks.size(); ++w) {
    const Task& waiter = p.tasks[w];
    for (const Wait& wt : waiter.waits) {
      auto it = producers.find(wt.counter.value);
      if (it == producers.end()) continue;  // a dangling counter: validate() reports it
      for (size_t prod : it->second) {
        if (!drawn.insert({prod, w}).second) continue;
        const bool red = h.counter_ids.count(wt.counter.value) != 0 ||
                         (h.task_ids.count(p.tasks[prod].id.value) != 0 && h.task_ids.count(waiter.id.value) != 0);
        os << "  " << node_name(prod) << " -> " << node_name(w) << " [label=" << dot_string("c" + std::to_string(wt.counter.value));
        if (red) os << ", color=red, fontcolor=red, penwidth=2.5";
        os << "];\n";
      }
    }
  }
  write_missing_orders(os, p, verdict, drawn);
}

void write_legend(std::ostream& os, const Program& p) {
  std::set<int32_t> used;
  for (const Task& t : p.tasks) used.insert(static_cast<int32_t>(t.op));
  if (used.empty()) return;
  os << "  subgraph cluster_legend {\n    label=\"opcodes\"; style=dashed; color=gray70;\n";
  for (int32_t code : used) {
    const auto op = static_cast<Opcode>(code);
    os << "    legend_" << code << " [label=" << dot_string(std::string(opcode_name(op)))
       << ", fillcolor=" << dot_string(dot_opcode_color(op)) << "];\n";
  }
  os << "  }\n";
}

void write_diagnostics(std::ostream& os, const ValidationResult& v, size_t max_listed) {
  if (v.errors.empty()) return;
  std::string text = "REJECTED: " + std::to_string(v.errors.size()) + " error(s)";
  for (size_t i = 0; i < v.errors.size() && i < max_listed; ++i)
    text += "\n[" + v.errors[i].rule + "] " + v.errors[i].message;
  if (v.errors.size() > max_listed) text += "\n... and " + std::to_string(v.errors.size() - max_listed) + " more";
  os << "  diagnostics [shape=note, style=filled, fillcolor=\"#fff0f0\", color=red, fontcolor=red, labeljust=l, label="
     << dot_string(text) << "];\n";
}

}  // namespace

std::string dot_opcode_color(Opcode op) {
  const int code = static_cast<int>(op);
  return code >= 0 && code < kOpcodeCount ? kPalette[code] : "#ffffff";
}

std::string program_to_dot(const Program& program, const ValidationResult* verdict, const DotOptions& options) {
  const Highlight h = collect_highlight(verdict);
  std::ostringstream os;
  os << "digraph amk {\n";
  std::string title = options.title;
  if (verdict != nullptr) title += std::string(title.empty() ? "" : ": ") + (verdict->ok ? "ACCEPTED" : "REJECTED");
  title += (title.empty() ? "" : ", ") + std::to_string(program.tasks.size()) + " tasks";
  os << "  graph [rankdir=TB, fontname=\"Helvetica\", labelloc=t, label=" << dot_string(title) << "];\n";
  os << "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n";
  os << "  edge [fontname=\"Helvetica\", fontsize=8, color=gray40];\n";
  write_clusters(os, program, h);
  write_edges(os, program, h, verdict);
  write_legend(os, program);
  if (verdict != nullptr) write_diagnostics(os, *verdict, options.max_listed_errors);
  os << "}\n";
  return os.str();
}

}  // namespace amk::ir
