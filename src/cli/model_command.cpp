// `mogserve model inspect FILE.onnx`: what an ONNX detector is before it is loaded: its input
// (fixed or dynamic), outputs, the family its outputs match, the operators by count, the
// multiply-accumulates at an input size, and whether mogserve reads it (or the first reason it
// does not: the operator, node and supported list; a shape that does not fit). Text, or one JSON
// object with --json. Exit 0 when the model reads, 1 when it does not, 3 when the file is not an
// ONNX model at all (not a protobuf ModelProto, truncated, missing).
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "cli/output_file.h"
#include "model/host_tensor.h"
#include "model/onnx/family.h"
#include "model/onnx/onnx_network.h"
#include "model/onnx/static_graph.h"

namespace mogserve::cli {
namespace {

using model::onnx::Graph;
using model::onnx::ImageInput;
using model::onnx::StaticGraph;
using nlohmann::json;

struct InspectFlags {
  std::string file;
  int height = 640;  // for a dynamic input
  int width = 640;
  bool json = false;
};

std::string DimsString(const model::onnx::ValueInfo& v) {
  if (!v.has_shape) return "(shape not declared)";
  std::string s;
  for (const model::onnx::Dim& d : v.dims) {
    s += (s.empty() ? "" : ",") + (d.fixed() ? std::to_string(d.value) : d.symbol);
  }
  return "[" + s + "]";
}

std::string Macs(int64_t macs) {
  std::ostringstream s;
  s.precision(3);
  if (macs >= 1000000000)
    s << static_cast<double>(macs) / 1e9 << " G";
  else
    s << static_cast<double>(macs) / 1e6 << " M";
  return s.str();
}

// What the file is, whether or not it loads: filled step by step.
struct Inspection {
  std::shared_ptr<const Graph> graph;
  std::optional<ImageInput> input;
  int64_t height = 0, width = 0;
  std::optional<StaticGraph> statics;
  std::map<std::string, int> op_counts;
  std::vector<std::string> unsupported_ops;
  Status problem = Status::Ok();  // the first reason it does not load
};

Inspection Inspect(std::shared_ptr<const Graph> graph, const InspectFlags& flags) {
  Inspection r;
  r.graph = graph;
  for (const model::onnx::Node& n : graph->nodes) {
    if (r.op_counts[n.op_type]++ == 0 && !model::onnx::IsSupportedOp(n.op_type)) {
      r.unsupported_ops.push_back(n.op_type);
    }
  }
  StatusOr<ImageInput> input = model::onnx::FindImageInput(*graph);
  if (!input.ok()) {
    r.problem = input.status();
    return r;
  }
  r.input = *input;
  r.height = input->height >= 0 ? input->height : flags.height;
  r.width = input->width >= 0 ? input->width : flags.width;
  const int64_t batch = input->batch > 0 ? input->batch : 1;
  StatusOr<StaticGraph> statics = StaticGraph::Infer(graph, batch, r.height, r.width);
  if (!statics.ok()) {
    r.problem = statics.status();
    return r;
  }
  r.statics = std::move(*statics);
  return r;
}

// Whether the graph maps onto the network plan (what mogserve can run), and into which ops.
json PlanJson(const StaticGraph& statics) {
  StatusOr<model::onnx::ImportedNetwork> imported =
      model::onnx::ImportNetwork(statics, "inspect", model::InputNormalization{});
  if (!imported.ok()) return {{"maps", false}, {"problem", imported.status().message()}};
  std::map<std::string, int> ops;
  for (const model::Op& op : imported->network->ops()) ++ops[model::OpKindName(op.kind)];
  return {{"maps", true}, {"ops", ops}, {"raw_outputs", imported->network->raw_outputs().size()}};
}

json ToJson(const Inspection& r, const std::string& file) {
  const Graph& g = *r.graph;
  json j = {{"file", file},
            {"bytes", std::filesystem::file_size(file)},
            {"ir_version", g.ir_version},
            {"opset", g.opset},
            {"producer", g.producer}};
  json outputs = json::array();
  for (const model::onnx::ValueInfo& v : g.outputs) {
    json o = {{"name", v.name}, {"declared", DimsString(v)}};
    if (r.statics) o["shape"] = r.statics->value(v.name).shape;
    outputs.push_back(o);
  }
  j["outputs"] = outputs;
  if (r.input) {
    j["input"] = {{"name", r.input->name},
                  {"layout", r.input->channels_last ? "NHWC" : "NCHW"},
                  {"declared", DimsString(g.inputs[0])},
                  {"dynamic_size", r.input->dynamic_size()},
                  {"height", r.height},
                  {"width", r.width}};
  }
  j["operators"] = r.op_counts;
  j["nodes"] = g.nodes.size();
  j["unsupported_operators"] = r.unsupported_ops;
  if (r.statics) {
    const model::onnx::FamilyMatch family = model::onnx::DetectFamily(*r.statics);
    j["family"] = family.family ? json(model::onnx::FamilyName(*family.family)) : json(nullptr);
    j["family_reason"] = family.reason;
    j["macs"] = r.statics->total_macs();
    j["nodes_at_load_time"] = g.nodes.size() - r.statics->live_nodes().size();
    j["plan"] = PlanJson(*r.statics);
  }
  j["reads"] = r.problem.ok();
  if (!r.problem.ok()) j["problem"] = r.problem.message();
  return j;
}

void PrintText(const json& j) {
  std::cout << "file       " << j["file"].get<std::string>() << " (" << j["bytes"] << " bytes, IR "
            << j["ir_version"] << ", opset " << j["opset"] << ", producer '"
            << j["producer"].get<std::string>() << "')\n";
  if (j.contains("input")) {
    const json& in = j["input"];
    std::cout << "input      " << in["name"].get<std::string>() << " "
              << in["declared"].get<std::string>() << " " << in["layout"].get<std::string>();
    if (in["dynamic_size"].get<bool>()) {
      std::cout << ", dynamic size (shown at " << in["height"] << "x" << in["width"]
                << ", --height/--width)";
    }
    std::cout << "\n";
  }
  for (const json& o : j["outputs"]) {
    std::cout << "output     " << o["name"].get<std::string>() << " "
              << o["declared"].get<std::string>();
    if (o.contains("shape")) std::cout << " -> " << o["shape"].dump();
    std::cout << "\n";
  }
  if (j.contains("family")) {
    std::cout << "family     "
              << (j["family"].is_null() ? "unknown" : j["family"].get<std::string>()) << ": "
              << j["family_reason"].get<std::string>() << "\n";
  }
  std::string ops;
  for (const auto& [name, count] : j["operators"].items()) {
    ops += (ops.empty() ? "" : ", ") + name + " " + std::to_string(count.get<int>());
  }
  std::cout << "operators  " << j["nodes"] << " nodes: " << ops << "\n";
  if (j.contains("macs")) {
    std::cout << "at load    " << j["nodes_at_load_time"]
              << " nodes computed once (constants, shapes)\n";
    std::cout << "MACs       " << Macs(j["macs"].get<int64_t>()) << " per image at "
              << j["input"]["height"] << "x" << j["input"]["width"] << "\n";
  }
  if (!j["unsupported_operators"].empty()) {
    std::string names;
    for (const json& n : j["unsupported_operators"]) names += " " + n.get<std::string>();
    std::cout << "unsupported" << names << "\n";
  }
  std::cout << "reads      "
            << (j["reads"].get<bool>() ? "yes" : "no: " + j["problem"].get<std::string>()) << "\n";
  if (j.contains("plan")) {
    const json& plan = j["plan"];
    std::string ops;
    if (plan["maps"].get<bool>()) {
      for (const auto& [name, count] : plan["ops"].items()) {
        ops += (ops.empty() ? "" : ", ") + name + " " + std::to_string(count.get<int>());
      }
    }
    std::cout << "plan       "
              << (plan["maps"].get<bool>()
                      ? "maps: " + ops + "; raw outputs " + plan["raw_outputs"].dump()
                      : "does not map: " + plan["problem"].get<std::string>())
              << "\n";
  }
}

int RunInspect(const InspectFlags& flags) {
  StatusOr<Graph> graph = model::onnx::ReadModel(flags.file);
  if (!graph.ok() && graph.status().code() == StatusCode::kUnsupported) {
    // An ONNX model, but one mogserve does not read (its operator set, a custom domain, ...).
    const json j = {{"file", flags.file}, {"reads", false}, {"problem", graph.status().message()}};
    if (flags.json)
      std::cout << j.dump() << "\n";
    else
      std::cout << "file       " << flags.file
                << "\nreads      no: " << j["problem"].get<std::string>() << "\n";
    return kExitSomeFailed;
  }
  if (!graph.ok()) return PrintError(graph.status().message(), kExitFatal);
  const Inspection r = Inspect(std::make_shared<const Graph>(std::move(*graph)), flags);
  const json j = ToJson(r, flags.file);
  if (flags.json)
    std::cout << j.dump() << "\n";
  else
    PrintText(j);
  return r.problem.ok() ? kExitOk : kExitSomeFailed;
}

}  // namespace

CommandRunner RegisterModelCommand(CLI::App& app) {
  app.require_subcommand(1);
  CLI::App* inspect = app.add_subcommand(
      "inspect",
      "An ONNX detector: input, outputs, family, operators, MACs, and whether mogserve reads it "
      "(exit 0), or why not (exit 1); exit 3 when the file is not an ONNX model");
  auto flags = std::make_shared<InspectFlags>();
  inspect->add_option("file", flags->file, "The .onnx file")->required();
  inspect->add_option("--height", flags->height, "Input height for a dynamic input")
      ->check(CLI::Range(1, 8192))
      ->capture_default_str();
  inspect->add_option("--width", flags->width, "Input width for a dynamic input")
      ->check(CLI::Range(1, 8192))
      ->capture_default_str();
  inspect->add_flag("--json", flags->json, "One JSON object instead of text");
  return [flags] { return RunInspect(*flags); };
}

}  // namespace mogserve::cli
