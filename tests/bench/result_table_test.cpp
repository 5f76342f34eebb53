// ResultTable's three printers on one hand-filled table.
#include "bench/result_table.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <stdexcept>

namespace mogserve::bench {
namespace {

ResultTable Sample() {
  ResultTable t;
  t.title = "Pipeline";
  t.AddField({"engine", "Engine", std::string("ssd on cpu")});
  t.AddField({"targets.ratio", "Ratio", 0.955, 3});
  t.AddColumn({"policy", "policy"})
      .AddColumn({"throughput_per_s", "images/s", 1})
      .AddColumn({"busy_ratio", "busy", 0, 100, "%"})
      .AddColumn({"reference.speedup", "× ref", 2, 1, "x"})
      .AddColumn({"who", "clients", 0, 1, "", false, kInMarkdown})
      .AddColumn({"rejected", "rejected"});
  t.AddRow({std::string("naive"), 20.25, 0.4, Cell{}, std::string("16"), int64_t{0}});
  t.AddRow({std::string("a|b, \"c\""), 61.0, 0.9, 1.5, std::string("50%"), int64_t{3}});
  t.notes = {"Ratios are new / old."};
  return t;
}

TEST(ResultTable, MarkdownScalesNumbersAndRightAlignsThem) {
  const std::string md = ToMarkdown(Sample());
  EXPECT_NE(md.find("## Pipeline\n"), std::string::npos) << md;
  EXPECT_NE(md.find("- Engine: ssd on cpu\n- Ratio: 0.955\n"), std::string::npos) << md;
  EXPECT_NE(md.find("| policy | images/s | busy | × ref | clients | rejected |\n"
                    "|---|---:|---:|---:|---|---:|\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| naive | 20.2 | 40% | - | 16 | 0 |\n"), std::string::npos) << md;
  EXPECT_NE(md.find("| a/b, \"c\" | 61.0 | 90% | 1.50x | 50% | 3 |\n"), std::string::npos) << md;
  EXPECT_NE(md.find("Ratios are new / old.\n"), std::string::npos) << md;
}

TEST(ResultTable, JsonNestsDottedKeysAndLeavesOutEmptyCells) {
  const nlohmann::json j = nlohmann::json::parse(ToJson(Sample()));
  EXPECT_EQ(j.at("engine"), "ssd on cpu");
  EXPECT_DOUBLE_EQ(j.at("targets").at("ratio").get<double>(), 0.955);
  ASSERT_EQ(j.at("rows").size(), 2u);
  EXPECT_FALSE(j["rows"][0].contains("reference")) << j.dump();
  EXPECT_FALSE(j["rows"][0].contains("who")) << "a Markdown-only column";
  EXPECT_DOUBLE_EQ(j["rows"][1].at("reference").at("speedup").get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(j["rows"][0].at("busy_ratio").get<double>(), 0.4) << "not scaled";
  EXPECT_EQ(j["rows"][1].at("rejected").get<int64_t>(), 3);
}

TEST(ResultTable, CsvQuotesWhatNeedsIt) {
  EXPECT_EQ(ToCsv(Sample()),
            "policy,throughput_per_s,busy_ratio,reference.speedup,rejected\n"
            "naive,20.25,0.4,,0\n"
            "\"a|b, \"\"c\"\"\",61.0,0.9,1.5,3\n");
}

TEST(ResultTable, PrintMergesTablesByFormat) {
  ResultTable second;
  second.title = "Guide";
  second.json_key = "guide";
  second.rows_key = "claims";
  second.AddColumn({"claim"});
  second.AddRow({std::string("faster")});
  const std::vector<ResultTable> tables = {Sample(), second};
  const nlohmann::json j = nlohmann::json::parse(Print(tables, Format::kJson));
  EXPECT_EQ(j.at("rows").size(), 2u);
  EXPECT_EQ(j.at("guide").at("claims")[0].at("claim"), "faster");
  const std::string csv = Print(tables, Format::kCsv);
  EXPECT_NE(csv.find("# Pipeline\npolicy,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\n\n# Guide\nclaim\nfaster\n"), std::string::npos) << csv;
  const std::string md = Print(tables, Format::kMarkdown);
  EXPECT_LT(md.find("## Pipeline"), md.find("## Guide"));
}

TEST(ResultTable, GroupedRowsNestInJson) {
  ResultTable t;
  t.rows_key = "searches";
  t.group_columns = 2;
  t.nest_key = "points";
  t.AddColumn({"scheduler"}).AddColumn({"max"}).AddColumn({"streams"});
  t.AddRow({std::string("naive"), int64_t{1}, int64_t{1}});
  t.AddRow({std::string("naive"), int64_t{1}, int64_t{2}});
  t.AddRow({std::string("continuous"), int64_t{3}, int64_t{1}});
  const nlohmann::json j = nlohmann::json::parse(ToJson(t));
  ASSERT_EQ(j.at("searches").size(), 2u) << j.dump();
  EXPECT_EQ(j["searches"][0].at("scheduler"), "naive");
  EXPECT_EQ(j["searches"][0].at("points").size(), 2u);
  EXPECT_EQ(j["searches"][0]["points"][1].at("streams"), 2);
  EXPECT_FALSE(j["searches"][0]["points"][1].contains("scheduler"));
  EXPECT_EQ(j["searches"][1].at("max"), 3);
  EXPECT_EQ(ToCsv(t), "scheduler,max,streams\nnaive,1,1\nnaive,1,2\ncontinuous,3,1\n");
}

TEST(ResultTable, ParseFormatNamesTheAcceptedValues) {
  EXPECT_EQ(*ParseFormat("md"), Format::kMarkdown);
  EXPECT_EQ(*ParseFormat("markdown"), Format::kMarkdown);
  EXPECT_EQ(*ParseFormat("json"), Format::kJson);
  EXPECT_EQ(*ParseFormat("csv"), Format::kCsv);
  const StatusOr<Format> bad = ParseFormat("xml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("expected md, json or csv"), std::string::npos);
}

TEST(ResultTable, ARowOfTheWrongWidthIsAProgrammingError) {
  ResultTable t;
  t.AddColumn({"a"});
  EXPECT_THROW(t.AddRow({int64_t{1}, int64_t{2}}), std::logic_error);
}

}  // namespace
}  // namespace mogserve::bench
