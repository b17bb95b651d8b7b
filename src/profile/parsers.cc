#include "kforge/profile/parsers.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "csv.h"

namespace kforge::profile {
namespace {

using nlohmann::json;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// The factor from an ncu unit to KForge's base units (ns, bytes, bytes/s); 1 for counts, cycles
// and percentages.
double UnitScale(std::string_view unit) {
  static const std::map<std::string, double, std::less<>> kTime = {
      {"nsecond", 1.0}, {"usecond", 1e3}, {"msecond", 1e6}, {"second", 1e9}};
  if (auto it = kTime.find(unit); it != kTime.end()) return it->second;
  auto prefix = [](char c) {
    switch (c) {
      case 'K': return 1e3;
      case 'M': return 1e6;
      case 'G': return 1e9;
      case 'T': return 1e12;
      default: return 1.0;
    }
  };
  // "Kbyte", "Mbyte/second", "Gbyte/second", "byte" (binary "Kibyte" too).
  const std::size_t byte = unit.find("byte");
  if (byte != std::string_view::npos && byte > 0) {
    double f = prefix(unit[0]);
    if (byte == 2 && unit[1] == 'i') f = std::pow(1024.0, std::log10(f) / 3.0);
    if (unit.ends_with("/usecond")) f *= 1e6;
    if (unit.ends_with("/msecond")) f *= 1e3;
    return f;
  }
  return 1.0;
}

// Kernel names from C++ templates are long; the records keep them whole, the reducer shortens.
void SplitHeader(const std::vector<CsvRow>& rows, std::size_t* first_data, const char* tool) {
  *first_data = 1;
  (void)tool;
  if (rows.size() > 1 && !rows[1].empty() && rows[1][0].empty()) *first_data = 2;  // units row
}

std::string Cell(const CsvRow& row, std::optional<std::size_t> col) {
  return col && *col < row.size() ? row[*col] : std::string();
}

std::optional<double> NumberCell(const CsvRow& row, std::optional<std::size_t> col) {
  return col ? ParseNumber(Cell(row, col)) : std::nullopt;
}

// ncu prints text before the CSV (its "==PROF==" lines, the program's output when not logged to a
// file): the CSV starts at the first line beginning with "\"ID\"".
std::string_view SkipToHeader(std::string_view text, std::string_view first_cell) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::string_view line = text.substr(pos);
    if (StartsWith(line, first_cell)) return line;
    const std::size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  return text;
}

}  // namespace

std::string ToolName(Tool tool) {
  switch (tool) {
    case Tool::kNcu: return "ncu";
    case Tool::kTorch: return "torch";
    case Tool::kOpenCl: return "opencl";
    case Tool::kNsys: return "nsys";
    case Tool::kRocprof: return "rocprofv3";
    case Tool::kUnitrace: return "unitrace";
    case Tool::kXctrace: return "xctrace";
    case Tool::kImage: return "image";
  }
  return "unknown";
}

std::optional<Tool> ParseToolName(std::string_view name) {
  for (Tool t : {Tool::kNcu, Tool::kTorch, Tool::kOpenCl, Tool::kNsys, Tool::kRocprof,
                 Tool::kUnitrace, Tool::kXctrace, Tool::kImage}) {
    if (ToolName(t) == name) return t;
  }
  if (name == "rocprof") return Tool::kRocprof;
  return std::nullopt;
}

double TotalKernelNs(const Profile& p) {
  double total = 0;
  for (const auto& k : p.kernels) total += k.duration_ns;
  return total;
}

Result<Profile> ParseNcuRawCsv(std::string_view csv) {
  const auto rows = ReadCsv(SkipToHeader(csv, "\"ID\""));
  if (rows.empty()) return ParseError("ncu raw CSV: no rows (was ncu run with --csv --page raw?)");
  const CsvRow& header = rows[0];
  const auto id_col = ColumnOf(header, "ID");
  const auto name_col = ColumnOf(header, "Kernel Name");
  if (!id_col || !name_col) {
    return ParseError("ncu raw CSV: the header lacks \"ID\" or \"Kernel Name\" (expected the "
                      "output of ncu --csv --page raw)");
  }
  std::size_t first = 1;
  SplitHeader(rows, &first, "ncu");
  const CsvRow units = first == 2 ? rows[1] : CsvRow();
  // The identifying columns of every row; metric columns are those whose name has "__".
  Profile p;
  p.tool = Tool::kNcu;
  const auto grid_col = ColumnOf(header, "Grid Size");
  const auto block_col = ColumnOf(header, "Block Size");
  std::set<std::string> bad;
  for (std::size_t r = first; r < rows.size(); ++r) {
    const CsvRow& row = rows[r];
    if (row.size() < 2) continue;
    KernelRecord k;
    k.name = Cell(row, name_col);
    k.grid = Cell(row, grid_col);
    k.block = Cell(row, block_col);
    for (std::size_t c = 0; c < header.size() && c < row.size(); ++c) {
      const std::string& metric = header[c];
      if (metric.find("__") == std::string::npos) continue;
      if (metric == "device__attribute_display_name") {
        if (p.device.empty()) p.device = row[c];
        continue;
      }
      auto value = ParseNumber(row[c]);
      if (!value) {
        if (!row[c].empty() && row[c] != "n/a" && !std::isalpha(static_cast<unsigned char>(row[c][0]))) {
          bad.insert(metric);
        }
        continue;
      }
      k.metrics[metric] = *value * UnitScale(c < units.size() ? units[c] : "");
    }
    if (auto d = k.metrics.find("gpu__time_duration.sum"); d != k.metrics.end()) {
      k.duration_ns = d->second;
    } else {
      bad.insert("gpu__time_duration.sum (missing)");
    }
    k.metrics["kforge.ncu_id"] = ParseNumber(Cell(row, id_col)).value_or(-1);
    p.kernels.push_back(std::move(k));
  }
  if (p.kernels.empty()) return ParseError("ncu raw CSV: a header but no kernel rows (no kernel was profiled)");
  for (const auto& m : bad) p.notes.push_back("ncu: unreadable values for " + m);
  return p;
}

Status AddNcuDetailsCsv(std::string_view csv, Profile* profile) {
  const auto rows = ReadCsv(SkipToHeader(csv, "\"ID\""));
  if (rows.empty()) return ParseError("ncu details CSV: no rows");
  const CsvRow& header = rows[0];
  const auto id_col = ColumnOf(header, "ID");
  const auto name_col = ColumnOf(header, "Kernel Name");
  const auto metric_col = ColumnOf(header, "Metric Name");
  const auto unit_col = ColumnOf(header, "Metric Unit");
  const auto value_col = ColumnOf(header, "Metric Value");
  const auto rule_col = ColumnOf(header, "Rule Name");
  const auto desc_col = ColumnOf(header, "Rule Description");
  const auto type_col = ColumnOf(header, "Rule Type");
  const auto speedup_col = ColumnOf(header, "Estimated Speedup");
  if (!id_col || (!metric_col && !rule_col)) {
    return ParseError("ncu details CSV: the header lacks \"ID\" and \"Metric Name\" or \"Rule "
                      "Name\" (expected ncu --csv --page details --print-details all)");
  }
  std::set<std::pair<std::string, std::string>> seen;
  for (std::size_t r = 1; r < rows.size(); ++r) {
    const CsvRow& row = rows[r];
    const std::string id = Cell(row, id_col);
    const std::string rule = Cell(row, rule_col);
    if (!rule.empty()) {
      if (Lower(Cell(row, type_col)) == "inf" && Cell(row, speedup_col).empty()) continue;
      if (!seen.insert({id, rule}).second) continue;
      ToolHint h;
      h.kernel = Cell(row, name_col);
      h.rule = rule;
      h.message = Cell(row, desc_col);
      h.estimated_speedup_pct = NumberCell(row, speedup_col);
      profile->hints.push_back(std::move(h));
      continue;
    }
    const std::string metric = Cell(row, metric_col);
    auto value = NumberCell(row, value_col);
    if (metric.empty() || !value) continue;
    const auto id_number = ParseNumber(id);
    for (auto& k : profile->kernels) {
      auto kid = k.metrics.find("kforge.ncu_id");
      if (id_number && kid != k.metrics.end() && kid->second == *id_number) {
        // The details page names metrics for people ("Duration"); keep them beside the raw ones.
        k.metrics.try_emplace("details." + metric, *value * UnitScale(Cell(row, unit_col)));
      }
    }
  }
  return Ok();
}

namespace {

// Union length of [start, end) intervals.
double UnionLength(std::vector<std::pair<double, double>> iv) {
  std::sort(iv.begin(), iv.end());
  double total = 0;
  double cur_s = 0;
  double cur_e = -1;
  bool open = false;
  for (const auto& [s, e] : iv) {
    if (!open || s > cur_e) {
      if (open) total += cur_e - cur_s;
      cur_s = s;
      cur_e = e;
      open = true;
    } else {
      cur_e = std::max(cur_e, e);
    }
  }
  if (open) total += cur_e - cur_s;
  return total;
}

// Per call: span from the first start to the last end, gap = span - busy.
void AddCallSpans(Profile& p, const std::vector<std::vector<const KernelRecord*>>& per_call) {
  for (const auto& call : per_call) {
    if (call.empty()) continue;
    std::vector<std::pair<double, double>> iv;
    for (const KernelRecord* k : call) {
      if (k->start_ns && k->end_ns) iv.emplace_back(*k->start_ns, *k->end_ns);
    }
    if (iv.empty()) continue;
    double lo = iv[0].first;
    double hi = iv[0].second;
    for (const auto& [s, e] : iv) {
      lo = std::min(lo, s);
      hi = std::max(hi, e);
    }
    const double busy = UnionLength(iv);
    p.call_span_ns.push_back(hi - lo);
    p.call_gap_ns.push_back(std::max(0.0, hi - lo - busy));
  }
}

struct TraceEvent {
  std::string name;
  std::string cat;
  double ts_us = 0;
  double dur_us = 0;
  long long tid = 0;
  long long pid = 0;
  std::optional<long long> correlation;
};

long long IdOf(const json& v) {
  if (v.is_number_integer()) return v.get<long long>();
  if (v.is_string()) return static_cast<long long>(std::hash<std::string>{}(v.get<std::string>()));
  return 0;
}

}  // namespace

Result<Profile> ParseTorchChromeTrace(std::string_view text, std::string_view call_annotation) {
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded()) return ParseError("torch profiler trace: not valid JSON");
  const json* events = nullptr;
  if (doc.is_object() && doc.contains("traceEvents") && doc["traceEvents"].is_array()) {
    events = &doc["traceEvents"];
  } else if (doc.is_array()) {
    events = &doc;
  } else {
    return ParseError("torch profiler trace: no \"traceEvents\" array (expected the file "
                      "torch.profiler's export_chrome_trace writes)");
  }
  std::vector<TraceEvent> all;
  for (const json& e : *events) {
    if (!e.is_object() || e.value("ph", "") != "X") continue;
    TraceEvent t;
    t.name = e.value("name", "");
    t.cat = Lower(e.value("cat", ""));
    // torch builds without Kineto (CPU-only wheels) write events without a category: operators
    // and record_function ranges alike.
    if (t.cat.empty()) t.cat = t.name == call_annotation ? "user_annotation" : "cpu_op";
    if (!e.contains("ts") || !e["ts"].is_number()) continue;
    t.ts_us = e["ts"].get<double>();
    t.dur_us = e.contains("dur") && e["dur"].is_number() ? e["dur"].get<double>() : 0.0;
    if (e.contains("tid")) t.tid = IdOf(e["tid"]);
    if (e.contains("pid")) t.pid = IdOf(e["pid"]);
    if (e.contains("args") && e["args"].is_object()) {
      const json& a = e["args"];
      for (const char* key : {"correlation", "External id"}) {
        if (a.contains(key) && a[key].is_number_integer()) {
          t.correlation = a[key].get<long long>();
          break;
        }
      }
    }
    all.push_back(std::move(t));
  }
  Profile p;
  p.tool = Tool::kTorch;
  if (doc.is_object() && doc.contains("deviceProperties") && doc["deviceProperties"].is_array() &&
      !doc["deviceProperties"].empty() && doc["deviceProperties"][0].is_object()) {
    p.device = doc["deviceProperties"][0].value("name", "");
  }
  std::vector<const TraceEvent*> calls;
  std::vector<const TraceEvent*> gpu;
  std::vector<const TraceEvent*> cpu_ops;
  std::map<long long, double> launch_ts;  // correlation -> host launch time
  for (const auto& t : all) {
    if (t.cat == "user_annotation" && t.name == call_annotation) calls.push_back(&t);
    else if (t.cat == "kernel" || t.cat == "gpu_memcpy" || t.cat == "gpu_memset") gpu.push_back(&t);
    else if (t.cat == "cpu_op") cpu_ops.push_back(&t);
    else if ((t.cat == "cuda_runtime" || t.cat == "cuda_driver") && t.correlation) {
      launch_ts[*t.correlation] = t.ts_us;
    }
  }
  std::sort(calls.begin(), calls.end(), [](auto* a, auto* b) { return a->ts_us < b->ts_us; });
  auto call_of = [&](double ts) -> int {
    for (std::size_t i = 0; i < calls.size(); ++i) {
      if (ts >= calls[i]->ts_us && ts <= calls[i]->ts_us + calls[i]->dur_us) return static_cast<int>(i);
    }
    return -1;
  };
  std::vector<const TraceEvent*> records;
  std::vector<int> record_call;
  if (!gpu.empty()) {
    for (const TraceEvent* k : gpu) {
      double when = k->ts_us;
      if (k->correlation) {
        if (auto it = launch_ts.find(*k->correlation); it != launch_ts.end()) when = it->second;
      }
      const int c = calls.empty() ? 0 : call_of(when);
      if (c < 0) continue;  // outside the profiled calls (input copies, warm-up)
      records.push_back(k);
      record_call.push_back(c);
    }
  } else {
    // CPU device: top-level operators (not nested in another operator of the same thread).
    std::sort(cpu_ops.begin(), cpu_ops.end(), [](auto* a, auto* b) {
      return a->ts_us != b->ts_us ? a->ts_us < b->ts_us : a->dur_us > b->dur_us;
    });
    std::map<std::pair<long long, long long>, double> open_until;  // (pid, tid) -> end
    for (const TraceEvent* op : cpu_ops) {
      auto& until = open_until[{op->pid, op->tid}];
      if (op->ts_us < until) continue;
      until = op->ts_us + op->dur_us;
      const int c = calls.empty() ? 0 : call_of(op->ts_us);
      if (c < 0) continue;
      records.push_back(op);
      record_call.push_back(c);
    }
  }
  p.calls = calls.empty() ? 1 : static_cast<int>(calls.size());
  if (calls.empty()) p.notes.push_back("torch trace: no call annotations; records cover the whole trace as one call");
  std::vector<std::vector<const KernelRecord*>> per_call(static_cast<std::size_t>(p.calls));
  p.kernels.reserve(records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    KernelRecord k;
    k.name = records[i]->name;
    if (records[i]->cat == "gpu_memcpy" || records[i]->cat == "gpu_memset") {
      k.name = "[" + records[i]->cat.substr(4) + "] " + k.name;
    }
    k.duration_ns = records[i]->dur_us * 1e3;
    k.start_ns = records[i]->ts_us * 1e3;
    k.end_ns = (records[i]->ts_us + records[i]->dur_us) * 1e3;
    p.kernels.push_back(std::move(k));
  }
  for (std::size_t i = 0; i < p.kernels.size(); ++i) {
    per_call[static_cast<std::size_t>(record_call[i])].push_back(&p.kernels[i]);
  }
  AddCallSpans(p, per_call);
  for (const TraceEvent* c : calls) p.call_wall_ns.push_back(c->dur_us * 1e3);
  return p;
}

Result<Profile> ParseOpenClEvents(std::string_view text) {
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("calls") || !doc["calls"].is_array()) {
    return ParseError("OpenCL events: expected a JSON object with a \"calls\" array (the runner's "
                      "profile phase output)");
  }
  Profile p;
  p.tool = Tool::kOpenCl;
  p.device = doc.value("device", "");
  p.calls = static_cast<int>(doc["calls"].size());
  std::vector<std::vector<std::size_t>> idx;
  for (const json& call : doc["calls"]) {
    if (!call.is_object() || !call.contains("kernels") || !call["kernels"].is_array()) {
      return ParseError("OpenCL events: a call without a \"kernels\" array");
    }
    if (call.contains("wall_ns") && call["wall_ns"].is_number()) {
      p.call_wall_ns.push_back(call["wall_ns"].get<double>());
    }
    idx.emplace_back();
    for (const json& k : call["kernels"]) {
      if (!k.is_object() || !k.contains("start") || !k.contains("end") ||
          !k["start"].is_number() || !k["end"].is_number()) {
        return ParseError("OpenCL events: a kernel record lacks numeric \"start\" and \"end\"");
      }
      KernelRecord r;
      r.name = k.value("name", "kernel");
      r.start_ns = k["start"].get<double>();
      r.end_ns = k["end"].get<double>();
      r.duration_ns = *r.end_ns - *r.start_ns;
      if (k.contains("queued") && k["queued"].is_number()) {
        r.metrics["opencl.queued_to_start_ns"] = *r.start_ns - k["queued"].get<double>();
      }
      if (k.contains("global_size") && k["global_size"].is_array()) r.grid = k["global_size"].dump();
      if (k.contains("local_size") && k["local_size"].is_array()) r.block = k["local_size"].dump();
      idx.back().push_back(p.kernels.size());
      p.kernels.push_back(std::move(r));
    }
  }
  std::vector<std::vector<const KernelRecord*>> per_call;
  for (const auto& call : idx) {
    per_call.emplace_back();
    for (std::size_t i : call) per_call.back().push_back(&p.kernels[i]);
  }
  AddCallSpans(p, per_call);
  return p;
}

Result<Profile> ParseNsysKernelSumCsv(std::string_view csv) {
  auto rows = ReadCsv(csv);
  // nsys prints a title line before the table in some versions: find the header.
  std::size_t h = 0;
  while (h < rows.size() && !ColumnOf(rows[h], "Name")) ++h;
  if (h == rows.size()) {
    return ParseError("nsys kernel summary CSV: no header with \"Name\" (expected nsys stats "
                      "--report cuda_gpu_kern_sum --format csv)");
  }
  const CsvRow& header = rows[h];
  const auto name = ColumnOf(header, "Name");
  auto total = ColumnOf(header, "Total Time (ns)");
  auto count = ColumnOf(header, "Instances");
  if (!count) count = ColumnOf(header, "Calls");
  if (!total || !count) {
    return ParseError("nsys kernel summary CSV: missing \"Total Time (ns)\" or \"Instances\"");
  }
  Profile p;
  p.tool = Tool::kNsys;
  for (std::size_t r = h + 1; r < rows.size(); ++r) {
    auto t = NumberCell(rows[r], total);
    auto n = NumberCell(rows[r], count);
    if (!t || !n) {
      p.notes.push_back(fmt::format("nsys: row {} unreadable", r));
      continue;
    }
    KernelRecord k;
    k.name = Cell(rows[r], name);
    k.duration_ns = *t;
    k.launches = static_cast<int>(*n);
    p.kernels.push_back(std::move(k));
  }
  if (p.kernels.empty()) return ParseError("nsys kernel summary CSV: no kernel rows");
  p.notes.push_back("nsys summary: totals over the whole capture; no per-call spans");
  return p;
}

Result<Profile> ParseRocprofKernelTraceCsv(std::string_view csv) {
  auto rows = ReadCsv(csv);
  if (rows.empty()) return ParseError("rocprofv3 kernel trace: empty");
  const CsvRow& header = rows[0];
  const auto name = ColumnOf(header, "Kernel_Name");
  const auto start = ColumnOf(header, "Start_Timestamp");
  const auto end = ColumnOf(header, "End_Timestamp");
  if (!name || !start || !end) {
    return ParseError("rocprofv3 kernel trace: missing \"Kernel_Name\", \"Start_Timestamp\" or "
                      "\"End_Timestamp\" (expected rocprofv3 --kernel-trace --output-format csv)");
  }
  auto dims = [&](const CsvRow& row, const char* prefix) {
    std::string out = "(";
    for (const char* axis : {"X", "Y", "Z"}) {
      if (out.size() > 1) out += ", ";
      out += Cell(row, ColumnOf(header, fmt::format("{}_{}", prefix, axis)));
    }
    return out + ")";
  };
  Profile p;
  p.tool = Tool::kRocprof;
  std::vector<const KernelRecord*> call;
  for (std::size_t r = 1; r < rows.size(); ++r) {
    auto s = NumberCell(rows[r], start);
    auto e = NumberCell(rows[r], end);
    if (!s || !e) continue;
    KernelRecord k;
    k.name = Cell(rows[r], name);
    k.start_ns = *s;
    k.end_ns = *e;
    k.duration_ns = *e - *s;
    k.grid = dims(rows[r], "Grid_Size");
    k.block = dims(rows[r], "Workgroup_Size");
    for (const auto& [col, metric] :
         std::vector<std::pair<const char*, const char*>>{{"VGPR_Count", "rocprof.vgpr_count"},
                                                          {"SGPR_Count", "rocprof.sgpr_count"},
                                                          {"LDS_Block_Size", "rocprof.lds_bytes"},
                                                          {"Group_Segment_Size", "rocprof.group_segment_bytes"},
                                                          {"Scratch_Size", "rocprof.scratch_bytes"},
                                                          {"Private_Segment_Size", "rocprof.private_segment_bytes"}}) {
      if (auto v = NumberCell(rows[r], ColumnOf(header, col))) k.metrics[metric] = *v;
    }
    p.kernels.push_back(std::move(k));
  }
  if (p.kernels.empty()) return ParseError("rocprofv3 kernel trace: no kernel rows");
  for (const auto& k : p.kernels) call.push_back(&k);
  AddCallSpans(p, {call});
  return p;
}

Result<Profile> ParseUnitraceDeviceSummary(std::string_view text) {
  Profile p;
  p.tool = Tool::kUnitrace;
  std::size_t pos = 0;
  CsvRow header;
  bool in_table = false;
  while (pos <= text.size()) {
    std::size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    auto cells = ReadCsv(line);
    if (cells.empty()) {
      in_table = false;
      continue;
    }
    const CsvRow& row = cells[0];
    if (!row.empty() && row[0] == "Kernel" && ColumnOf(row, "Calls") && ColumnOf(row, "Time (ns)")) {
      header = row;
      in_table = true;
      continue;
    }
    if (!in_table) continue;
    auto t = NumberCell(row, ColumnOf(header, "Time (ns)"));
    auto n = NumberCell(row, ColumnOf(header, "Calls"));
    if (!t || !n) {
      in_table = false;
      continue;
    }
    KernelRecord k;
    k.name = row[0];
    k.duration_ns = *t;
    k.launches = static_cast<int>(*n);
    p.kernels.push_back(std::move(k));
  }
  if (p.kernels.empty()) {
    return ParseError("unitrace: no device timing table (a header \"Kernel, Calls, Time (ns), ...\"; "
                      "expected the output of unitrace -d)");
  }
  p.notes.push_back("unitrace summary: totals over the whole run; no per-call spans");
  return p;
}

namespace {

// Minimal XML scanning for xctrace's flat export: elements with attributes and text.
struct XmlElement {
  std::string tag;
  std::map<std::string, std::string> attrs;
  std::string text;
  bool self_closing = false;
};

// The next element starting at or after `pos` whose tag is `tag` (any when empty); for a
// non-self-closing element, `text` holds everything up to its end tag.
std::optional<XmlElement> NextElement(std::string_view xml, std::size_t& pos, std::string_view tag) {
  while (true) {
    std::size_t lt = xml.find('<', pos);
    if (lt == std::string_view::npos) return std::nullopt;
    std::size_t gt = xml.find('>', lt);
    if (gt == std::string_view::npos) return std::nullopt;
    std::string_view inner = xml.substr(lt + 1, gt - lt - 1);
    pos = gt + 1;
    if (inner.empty() || inner[0] == '/' || inner[0] == '?' || inner[0] == '!') continue;
    XmlElement e;
    e.self_closing = inner.back() == '/';
    if (e.self_closing) inner.remove_suffix(1);
    std::size_t sp = inner.find_first_of(" \t\n");
    e.tag = std::string(inner.substr(0, sp));
    if (!tag.empty() && e.tag != tag) continue;
    std::string_view rest = sp == std::string_view::npos ? std::string_view() : inner.substr(sp);
    while (true) {
      std::size_t eq = rest.find('=');
      if (eq == std::string_view::npos) break;
      std::string_view key = rest.substr(0, eq);
      while (!key.empty() && std::isspace(static_cast<unsigned char>(key.front()))) key.remove_prefix(1);
      while (!key.empty() && std::isspace(static_cast<unsigned char>(key.back()))) key.remove_suffix(1);
      if (eq + 1 >= rest.size()) break;
      const char q = rest[eq + 1];
      std::size_t close = rest.find(q, eq + 2);
      if (close == std::string_view::npos) break;
      e.attrs[std::string(key)] = std::string(rest.substr(eq + 2, close - eq - 2));
      rest = rest.substr(close + 1);
    }
    if (!e.self_closing) {
      const std::string end = "</" + e.tag + ">";
      std::size_t close = xml.find(end, pos);
      if (close == std::string_view::npos) return std::nullopt;
      e.text = std::string(xml.substr(pos, close - pos));
      pos = close + end.size();
    }
    return e;
  }
}

std::string StripTags(std::string_view s) {
  std::string out;
  bool in_tag = false;
  for (char c : s) {
    if (c == '<') in_tag = true;
    else if (c == '>') in_tag = false;
    else if (!in_tag) out += c;
  }
  return out;
}

}  // namespace

Result<Profile> ParseXctraceXml(std::string_view xml) {
  if (xml.find("<trace-query-result") == std::string_view::npos) {
    return ParseError("xctrace export: no <trace-query-result> (expected xctrace export --xpath output)");
  }
  // Schema columns, in order: their mnemonics say what each row child is.
  std::vector<std::string> columns;
  std::size_t pos = 0;
  if (auto schema = NextElement(xml, pos, "schema")) {
    std::size_t sp = 0;
    while (auto col = NextElement(schema->text, sp, "col")) {
      std::size_t cp = 0;
      auto mnemonic = NextElement(col->text, cp, "mnemonic");
      columns.push_back(mnemonic ? StripTags(mnemonic->text) : std::string());
    }
  }
  auto find_col = [&](std::initializer_list<const char*> names) -> std::optional<std::size_t> {
    for (const char* n : names) {
      for (std::size_t i = 0; i < columns.size(); ++i) {
        if (columns[i] == n) return i;
      }
    }
    return std::nullopt;
  };
  const auto start_col = find_col({"start", "start-time", "timestamp"});
  const auto dur_col = find_col({"duration"});
  const auto name_col = find_col({"label", "name", "kernel", "function", "encoder-label",
                                  "command-buffer-label", "channel-name", "channel"});
  if (!start_col || !dur_col) {
    return ParseError("xctrace export: the schema has no start and duration columns");
  }
  Profile p;
  p.tool = Tool::kXctrace;
  std::map<std::string, std::string> by_id;  // id -> text, for ref="id"
  std::size_t rp = pos;
  while (auto row = NextElement(xml, rp, "row")) {
    std::vector<std::string> values;
    std::size_t cp = 0;
    while (auto cell = NextElement(row->text, cp, "")) {
      std::string value = StripTags(cell->text);
      if (auto ref = cell->attrs.find("ref"); ref != cell->attrs.end()) value = by_id[ref->second];
      if (auto id = cell->attrs.find("id"); id != cell->attrs.end()) by_id[id->second] = value;
      values.push_back(value);
    }
    auto at = [&](std::optional<std::size_t> c) { return c && *c < values.size() ? values[*c] : std::string(); };
    auto s = ParseNumber(at(start_col));
    auto d = ParseNumber(at(dur_col));
    if (!s || !d) continue;
    KernelRecord k;
    k.name = name_col ? at(name_col) : "gpu interval";
    if (k.name.empty()) k.name = "gpu interval";
    k.start_ns = *s;
    k.duration_ns = *d;
    k.end_ns = *s + *d;
    p.kernels.push_back(std::move(k));
  }
  if (p.kernels.empty()) return ParseError("xctrace export: no rows with a start and a duration");
  std::vector<const KernelRecord*> call;
  for (const auto& k : p.kernels) call.push_back(&k);
  AddCallSpans(p, {call});
  return p;
}

}  // namespace kforge::profile
