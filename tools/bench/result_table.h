// ResultTable: one record type for every benchmark's results, and its printers (Markdown, JSON,
// CSV), as llama-bench has one result record and several printers. A bench fills tables (a
// title, summary fields, typed columns with units, rows of cells, notes); how a number is shown
// is the column's business, not the bench's.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "mogserve/status.h"

namespace mogserve::bench {

// Empty (printed "-" in Markdown, left out of JSON, nothing in CSV), an integer, a number, a
// string, a flag, or a list of strings (", "-joined in Markdown, an array in JSON, ";"-joined in
// CSV).
using Cell =
    std::variant<std::monostate, int64_t, double, std::string, bool, std::vector<std::string>>;

// Which printers show a column or a field.
enum Shown : unsigned { kInMarkdown = 1, kInJson = 2, kInCsv = 4, kEverywhere = 7 };

struct Column {
  Column(std::string key_, std::string header_ = "", int decimals_ = 1, double scale_ = 1,
         std::string suffix_ = "", bool zero_as_dash_ = false, unsigned shown_ = kEverywhere)
      : key(std::move(key_)),
        header(std::move(header_)),
        decimals(decimals_),
        scale(scale_),
        suffix(std::move(suffix_)),
        zero_as_dash(zero_as_dash_),
        shown(shown_) {}

  // The JSON and CSV name; a dotted key ("latency.p99_ms") nests in JSON and stays flat in CSV.
  std::string key;
  std::string header;  // the Markdown header; empty = key
  // Markdown only: a number is multiplied by `scale`, printed with `decimals` and followed by
  // `suffix` ("%", "x"); zero_as_dash prints 0 as "-" (not measured).
  int decimals = 1;
  double scale = 1;
  std::string suffix;
  bool zero_as_dash = false;
  unsigned shown = kEverywhere;
};

// A summary value above the table: "Label: value" in Markdown, a key of the JSON object.
struct Field {
  Field(std::string key_, std::string label_, Cell value_, int decimals_ = 1,
        unsigned shown_ = kInMarkdown | kInJson)
      : key(std::move(key_)),
        label(std::move(label_)),
        value(std::move(value_)),
        decimals(decimals_),
        shown(shown_) {}

  std::string key;    // dotted keys nest, as for columns
  std::string label;  // Markdown; empty = not printed there
  Cell value;
  int decimals = 1;
  unsigned shown = kInMarkdown | kInJson;
};

struct ResultTable {
  std::string title;  // Markdown heading; empty = none
  std::string intro;  // Markdown paragraph before the fields
  std::vector<Field> fields;
  std::vector<Column> columns;
  std::vector<std::vector<Cell>> rows;  // one cell per column, in column order
  std::vector<std::string> notes;       // Markdown paragraphs after the table
  std::string rows_key = "rows";        // the JSON key of the row array; empty = no rows in JSON
  // rows_key may be dotted, as keys are. JSON: when > 0, consecutive rows with the same first
  // `group_columns` cells are one object of those cells and nest_key: [ {the other columns} ]
  // ("searches": [{"scheduler", "points":
  // [...]}]).
  size_t group_columns = 0;
  std::string nest_key;
  // Print(): where this table's JSON object goes in the merged one (dotted keys nest); empty =
  // merged at the top level.
  std::string json_key;

  ResultTable& AddColumn(Column column);
  ResultTable& AddField(Field field);
  // Checks the row has one cell per column.
  void AddRow(std::vector<Cell> row);
};

// "## title", intro, "- label: value" fields, the table (right-aligned numbers), the notes.
std::string ToMarkdown(const ResultTable& table);
// One object: the fields, then rows_key: [ {column key: cell} ]; dotted keys nest.
std::string ToJson(const ResultTable& table);
// A header line of column keys, then one line per row (RFC 4180 quoting).
std::string ToCsv(const ResultTable& table);

// A bench's output format: Markdown, JSON or CSV.
enum class Format { kMarkdown, kJson, kCsv };
// "md" / "markdown", "json", "csv"; InvalidArgument naming the accepted values otherwise.
StatusOr<Format> ParseFormat(const std::string& name);
// Several tables in one format: Markdown one after another; JSON the tables' objects merged
// into one (see json_key); CSV one block per table,
// separated by a blank line.
std::string Print(const std::vector<ResultTable>& tables, Format format);

}  // namespace mogserve::bench
