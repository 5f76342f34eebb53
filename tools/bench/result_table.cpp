#include "bench/result_table.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace mogserve::bench {
namespace {

using nlohmann::json;

bool IsNumber(const Cell& cell) {
  return std::holds_alternative<int64_t>(cell) || std::holds_alternative<double>(cell);
}

double AsDouble(const Cell& cell) {
  if (const int64_t* i = std::get_if<int64_t>(&cell)) return static_cast<double>(*i);
  return std::get<double>(cell);
}

std::string Join(const std::vector<std::string>& parts, const char* separator) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : separator) + p;
  return out;
}

// Markdown: numbers scaled and rounded, strings with '|' made harmless, empty as "-".
std::string Show(const Cell& cell, int decimals, double scale, const std::string& suffix,
                 bool zero_as_dash) {
  if (std::holds_alternative<std::monostate>(cell)) return "-";
  if (const bool* b = std::get_if<bool>(&cell)) return *b ? "yes" : "no";
  if (const auto* list = std::get_if<std::vector<std::string>>(&cell)) return Join(*list, ", ");
  if (const std::string* s = std::get_if<std::string>(&cell)) {
    std::string out = *s;
    for (char& c : out) {
      if (c == '|') c = '/';
    }
    return out;
  }
  const double v = AsDouble(cell);
  if (zero_as_dash && v == 0) return "-";
  char text[64];
  if (std::holds_alternative<int64_t>(cell) && scale == 1) {
    std::snprintf(text, sizeof(text), "%lld", static_cast<long long>(std::get<int64_t>(cell)));
  } else {
    std::snprintf(text, sizeof(text), "%.*f", decimals, v * scale);
  }
  std::string shown(text);
  shown += suffix;
  return shown;
}

json ToJsonValue(const Cell& cell) {
  if (const int64_t* i = std::get_if<int64_t>(&cell)) return *i;
  if (const double* d = std::get_if<double>(&cell)) return *d;
  if (const std::string* s = std::get_if<std::string>(&cell)) return *s;
  if (const auto* list = std::get_if<std::vector<std::string>>(&cell)) return *list;
  return std::get<bool>(cell);
}

// The object at `key` (dotted = nested objects) in `object`, created when missing.
json& Dotted(json& object, const std::string& key) {
  json* at = &object;
  size_t begin = 0;
  for (size_t dot = key.find('.'); dot != std::string::npos; dot = key.find('.', begin)) {
    at = &(*at)[key.substr(begin, dot - begin)];
    begin = dot + 1;
  }
  return (*at)[key.substr(begin)];
}

// Adds `from`'s keys to `into`, merging objects present in both (tables may share a parent key).
void MergeInto(json& into, const json& from) {
  for (auto it = from.begin(); it != from.end(); ++it) {
    if (it->is_object() && into.contains(it.key()) && into[it.key()].is_object()) {
      MergeInto(into[it.key()], *it);
    } else {
      into[it.key()] = *it;
    }
  }
}

// Sets `key` (dotted = nested objects) in `object`.
void SetDotted(json& object, const std::string& key, json value) {
  Dotted(object, key) = std::move(value);
}

// The row's cells of columns [begin, end) that JSON shows, as one object.
json RowObject(const ResultTable& t, const std::vector<Cell>& row, size_t begin, size_t end) {
  json r = json::object();
  for (size_t c = begin; c < end; ++c) {
    if ((t.columns[c].shown & kInJson) && !std::holds_alternative<std::monostate>(row[c])) {
      SetDotted(r, t.columns[c].key, ToJsonValue(row[c]));
    }
  }
  return r;
}

json RowsJson(const ResultTable& t) {
  json rows = json::array();
  const size_t group = std::min(t.group_columns, t.columns.size());
  for (size_t i = 0; i < t.rows.size(); ++i) {
    const std::vector<Cell>& row = t.rows[i];
    if (group == 0) {
      rows.push_back(RowObject(t, row, 0, t.columns.size()));
      continue;
    }
    const bool same_group =
        i > 0 && std::equal(row.begin(), row.begin() + group, t.rows[i - 1].begin());
    if (!same_group) {
      rows.push_back(RowObject(t, row, 0, group));
      rows.back()[t.nest_key] = json::array();
    }
    rows.back()[t.nest_key].push_back(RowObject(t, row, group, t.columns.size()));
  }
  return rows;
}

json TableJson(const ResultTable& t) {
  json j = json::object();
  for (const Field& f : t.fields) {
    if ((f.shown & kInJson) && !std::holds_alternative<std::monostate>(f.value)) {
      SetDotted(j, f.key, ToJsonValue(f.value));
    }
  }
  if (!t.rows_key.empty()) SetDotted(j, t.rows_key, RowsJson(t));
  return j;
}

std::string CsvQuoted(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string CsvCell(const Cell& cell) {
  if (std::holds_alternative<std::monostate>(cell)) return "";
  if (const std::string* s = std::get_if<std::string>(&cell)) return CsvQuoted(*s);
  if (const auto* list = std::get_if<std::vector<std::string>>(&cell)) {
    return CsvQuoted(Join(*list, ";"));
  }
  return ToJsonValue(cell).dump();  // shortest round-trip numbers, true / false
}

}  // namespace

ResultTable& ResultTable::AddColumn(Column column) {
  columns.push_back(std::move(column));
  return *this;
}

ResultTable& ResultTable::AddField(Field field) {
  fields.push_back(std::move(field));
  return *this;
}

void ResultTable::AddRow(std::vector<Cell> row) {
  if (row.size() != columns.size()) {
    throw std::logic_error("ResultTable '" + title + "': a row of " + std::to_string(row.size()) +
                           " cells for " + std::to_string(columns.size()) + " columns");
  }
  rows.push_back(std::move(row));
}

std::string ToMarkdown(const ResultTable& t) {
  std::string md;
  if (!t.title.empty()) md += "## " + t.title + "\n\n";
  if (!t.intro.empty()) md += t.intro + "\n\n";
  bool any_field = false;
  for (const Field& f : t.fields) {
    if (!(f.shown & kInMarkdown) || f.label.empty()) continue;
    md += "- " + f.label + ": ";
    md += Show(f.value, f.decimals, 1, "", false);
    md += '\n';
    any_field = true;
  }
  if (any_field) md += "\n";
  std::vector<size_t> shown;
  for (size_t c = 0; c < t.columns.size(); ++c) {
    if (t.columns[c].shown & kInMarkdown) shown.push_back(c);
  }
  if (!shown.empty() && !t.rows.empty()) {
    std::string header = "|", rule = "|";
    for (size_t c : shown) {
      const Column& col = t.columns[c];
      header += ' ';
      header += col.header.empty() ? col.key : col.header;
      header += " |";
      // Right-aligned when the column holds numbers.
      bool numbers = false;
      for (const std::vector<Cell>& row : t.rows) numbers = numbers || IsNumber(row[c]);
      rule += numbers ? "---:|" : "---|";
    }
    md += header + "\n" + rule + "\n";
    for (const std::vector<Cell>& row : t.rows) {
      md += "|";
      for (size_t c : shown) {
        const Column& col = t.columns[c];
        md += ' ';
        md += Show(row[c], col.decimals, col.scale, col.suffix, col.zero_as_dash);
        md += " |";
      }
      md += "\n";
    }
    md += "\n";
  }
  for (const std::string& note : t.notes) md += note + "\n\n";
  return md;
}

std::string ToJson(const ResultTable& t) {
  return TableJson(t).dump(2) + "\n";
}

std::string ToCsv(const ResultTable& t) {
  std::string csv;
  bool first = true;
  for (const Column& col : t.columns) {
    if (!(col.shown & kInCsv)) continue;
    if (!first) csv += ',';
    csv += CsvQuoted(col.key);
    first = false;
  }
  csv += '\n';
  for (const std::vector<Cell>& row : t.rows) {
    first = true;
    for (size_t c = 0; c < t.columns.size(); ++c) {
      if (!(t.columns[c].shown & kInCsv)) continue;
      if (!first) csv += ',';
      csv += CsvCell(row[c]);
      first = false;
    }
    csv += '\n';
  }
  return csv;
}

StatusOr<Format> ParseFormat(const std::string& name) {
  if (name == "md" || name == "markdown") return Format::kMarkdown;
  if (name == "json") return Format::kJson;
  if (name == "csv") return Format::kCsv;
  return InvalidArgument("format '" + name + "': expected md, json or csv");
}

std::string Print(const std::vector<ResultTable>& tables, Format format) {
  std::string out;
  if (format == Format::kJson) {
    json merged = json::object();
    for (const ResultTable& t : tables) {
      json j = TableJson(t);
      MergeInto(t.json_key.empty() ? merged : Dotted(merged, t.json_key), j);
    }
    return merged.dump(2) + "\n";
  }
  for (const ResultTable& t : tables) {
    if (format == Format::kMarkdown) {
      out += ToMarkdown(t);
    } else if (!t.rows.empty()) {
      if (!out.empty()) out += "\n";
      if (!t.title.empty()) out += "# " + t.title + "\n";
      out += ToCsv(t);
    }
  }
  return out;
}

}  // namespace mogserve::bench
