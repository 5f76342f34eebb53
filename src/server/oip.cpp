#include "server/oip.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>
#include <map>
#include <optional>

#include "json/result_json.h"
#include "options/option_table.h"
#include "server/detect_call.h"

namespace mogserve::server::oip {
namespace {

HttpError Bad(std::string message, std::string code = "bad_request") {
  return HttpError{400, std::move(code), std::move(message)};
}

// A string member of `obj`: "" when absent; nullopt when present but not a string (json's
// value() would throw on client data of another type).
std::optional<std::string> StringMember(const nlohmann::json& obj, const char* key) {
  const auto it = obj.find(key);
  if (it == obj.end()) return std::string();
  if (!it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

bool IsOutputName(std::string_view name) {
  return std::any_of(std::begin(kOutputNames), std::end(kOutputNames),
                     [&](const char* n) { return name == n; });
}

std::string OutputNameList() {
  std::string text;
  for (const char* n : kOutputNames) text += text.empty() ? n : std::string(", ") + n;
  return text;
}

// The IMAGE elements of a JSON `data` array: base64 strings, flat or one level nested ([N, 1]).
std::optional<HttpError> JsonElements(const nlohmann::json& data, InferRequest& r) {
  if (!data.is_array()) return Bad("IMAGE: data must be an array of base64 strings");
  for (const nlohmann::json& item : data) {
    const nlohmann::json* value = &item;
    if (item.is_array() && item.size() == 1) value = &item[0];
    const std::string name = "IMAGE[" + std::to_string(r.images.size()) + "]";
    if (!value->is_string()) return Bad(name + " must be a base64 string");
    auto bytes = DecodeBase64(value->get_ref<const std::string&>());
    if (!bytes) return HttpError{400, "invalid_image", name + " is not valid base64"};
    r.images.push_back({name, std::move(*bytes)});
  }
  return std::nullopt;
}

// A JSON shape's dimensions; nullopt when it is not an array of integers.
std::optional<std::vector<int64_t>> JsonShape(const nlohmann::json& shape) {
  if (!shape.is_array()) return std::nullopt;
  std::vector<int64_t> dims;
  for (const nlohmann::json& d : shape) {
    if (!d.is_number_integer()) return std::nullopt;
    dims.push_back(d.get<int64_t>());
  }
  return dims;
}

std::optional<HttpError> ParseInput(const nlohmann::json& input, std::string_view binary,
                                    const RequestLimits& limits, InferRequest& r,
                                    int64_t* binary_used) {
  if (!input.is_object()) return Bad("each input must be an object");
  const std::optional<std::string> name = StringMember(input, "name");
  if (!name) return Bad("an input's name must be a string");
  const std::optional<std::string> datatype = StringMember(input, "datatype");
  int64_t n = 0;
  if (auto e = CheckImageTensor(*name, datatype.value_or("(not a string)"),
                                JsonShape(input.contains("shape") ? input["shape"] : nullptr),
                                limits, &n)) {
    return e;
  }
  const nlohmann::json params = input.value("parameters", nlohmann::json::object());
  if (!params.is_object()) return Bad("IMAGE: parameters must be an object");
  if (params.contains("content_type") && params["content_type"] != "base64") {
    return Bad("IMAGE: content_type " + params["content_type"].dump() +
               " is not supported; base64 (the default) for JSON data");
  }
  if (params.contains("binary_data_size")) {
    if (input.contains("data")) return Bad("IMAGE has both data and binary_data_size");
    const nlohmann::json& size = params["binary_data_size"];
    if (!size.is_number_unsigned()) return Bad("IMAGE: binary_data_size must be an integer >= 0");
    const uint64_t bytes = size.get<uint64_t>();
    if (bytes > binary.size() - static_cast<uint64_t>(*binary_used)) {
      return Bad("IMAGE: binary_data_size " + std::to_string(bytes) +
                 " is more than the binary data left after the JSON");
    }
    if (auto e = SplitBinaryElements(binary.substr(*binary_used, bytes), r)) return e;
    *binary_used += static_cast<int64_t>(bytes);
  } else {
    if (!input.contains("data")) return Bad("IMAGE has neither data nor binary_data_size");
    if (auto e = JsonElements(input["data"], r)) return e;
  }
  return CheckImageCount(n, r);
}

std::optional<HttpError> ParseOutputs(const nlohmann::json& outputs, bool binary_all,
                                      InferRequest& r) {
  if (outputs.is_null()) {
    AddAllOutputs(binary_all, r);
    return std::nullopt;
  }
  if (!outputs.is_array()) return Bad("outputs must be an array");
  for (const nlohmann::json& o : outputs) {
    const std::string name = o.is_object() ? StringMember(o, "name").value_or("") : "";
    if (!IsOutputName(name)) return AddOutput(name, false, r);  // the error naming it
    bool binary = binary_all;
    if (o.contains("parameters")) {
      const nlohmann::json& p = o["parameters"];
      if (!p.is_object()) return Bad("outputs[" + name + "].parameters must be an object");
      for (const auto& [key, value] : p.items()) {
        if (key != "binary_data" || !value.is_boolean()) {
          return Bad("output " + name + ": parameter '" + key +
                         "' is not allowed; binary_data (true or false)",
                     "invalid_parameter");
        }
        binary = value.get<bool>();
      }
    }
    r.outputs.push_back({name, binary});
  }
  return std::nullopt;
}

}  // namespace

std::optional<HttpError> ApplyParameters(const nlohmann::json& parameters, InferRequest& r,
                                         bool* binary_all) {
  if (!parameters.is_object()) return Bad("parameters must be an object");
  std::multimap<std::string, std::string> options;
  for (const auto& [name, value] : parameters.items()) {
    if (name == "binary_data_output") {
      if (!value.is_boolean()) return Bad("parameters.binary_data_output must be true or false");
      *binary_all = value.get<bool>();
    } else if (const opt::Option* o = opt::Find(name); o != nullptr && (o->surfaces & opt::kOip)) {
      options.emplace(name, value.is_string() ? value.get<std::string>() : value.dump());
    } else {
      return Bad("unknown parameter '" + name + "'; allowed: " + opt::NamesOn(opt::kOip) +
                     ", binary_data_output",
                 "invalid_parameter");
    }
  }
  return ParseDetectOptions(options, &r.params, opt::kOip);
}

std::optional<HttpError> SplitBinaryElements(std::string_view bytes, InferRequest& r) {
  while (!bytes.empty()) {
    if (bytes.size() < 4) return Bad("IMAGE: binary data ends inside an element's length");
    uint32_t n = 0;
    for (int k = 3; k >= 0; --k) n = (n << 8) | static_cast<uint8_t>(bytes[k]);
    bytes.remove_prefix(4);
    if (n > bytes.size()) {
      return Bad("IMAGE[" + std::to_string(r.images.size()) + "]: its length " + std::to_string(n) +
                 " runs past the binary data");
    }
    r.images.push_back(
        {"IMAGE[" + std::to_string(r.images.size()) + "]", ImageBytes(bytes.substr(0, n))});
    bytes.remove_prefix(n);
  }
  return std::nullopt;
}

std::optional<HttpError> CheckImageTensor(std::string_view name, std::string_view datatype,
                                          const std::optional<std::vector<int64_t>>& shape,
                                          const RequestLimits& limits, int64_t* n) {
  if (name != "IMAGE") {
    return Bad("input '" + std::string(name) +
               "' is not known; the one input is IMAGE (BYTES, shape [N])");
  }
  if (datatype != "BYTES") {
    return Bad("IMAGE: datatype must be BYTES (encoded JPEG, PNG or WebP pictures), not '" +
               std::string(datatype) + "'");
  }
  const bool ok = shape && !shape->empty() && shape->size() <= 2 && (*shape)[0] >= 0 &&
                  (shape->size() == 1 || (*shape)[1] == 1);
  if (!ok) return Bad("IMAGE: shape must be [N] or [N, 1]");
  *n = (*shape)[0];
  if (*n < 1) return Bad("IMAGE: no image (N = 0)");
  if (*n > limits.max_images) {
    return HttpError{413, "too_many_images",
                     "IMAGE has " + std::to_string(*n) + " images; at most " +
                         std::to_string(limits.max_images) + " in one request"};
  }
  return std::nullopt;
}

std::optional<HttpError> CheckImageCount(int64_t n, const InferRequest& r) {
  if (static_cast<int64_t>(r.images.size()) != n) {
    return Bad("IMAGE: shape says " + std::to_string(n) + " images, the data holds " +
               std::to_string(r.images.size()));
  }
  for (const ImagePart& image : r.images) {
    if (image.bytes.empty()) return HttpError{400, "invalid_image", image.name + " is empty"};
  }
  return std::nullopt;
}

std::optional<HttpError> AddOutput(std::string_view name, bool binary, InferRequest& r) {
  if (!IsOutputName(name)) {
    return Bad("output '" + std::string(name) + "' is not known; allowed: " + OutputNameList());
  }
  r.outputs.push_back({std::string(name), binary});
  return std::nullopt;
}

void AddAllOutputs(bool binary, InferRequest& r) {
  for (int i = 0; i < kDefaultOutputCount; ++i) r.outputs.push_back({kOutputNames[i], binary});
}

static_assert(std::endian::native == std::endian::little,
              "binary tensors are written as the host's bytes, which the protocol wants LE");

std::string OutputTensor::Bytes() const {
  std::string out;
  if (datatype == "FP32") {
    out.resize(f.size() * 4);
    std::memcpy(out.data(), f.data(), out.size());  // little-endian: see the static_assert
  } else {
    out.resize(i.size() * 4);
    std::memcpy(out.data(), i.data(), out.size());
  }
  return out;
}

nlohmann::json OutputTensor::Data() const {
  return datatype == "FP32" ? nlohmann::json(f) : nlohmann::json(i);
}

namespace {

OutputTensor MakeTensor(const std::string& name,
                        const std::vector<pipeline::RequestResult>& results) {
  const int64_t n = static_cast<int64_t>(results.size());
  size_t k = 0;
  for (const auto& r : results) k = std::max(k, r.result.faces.size());
  OutputTensor t;
  t.name = name;
  if (name == "BOXES" || name == "SCORES" || name == "LANDMARKS") {
    // LANDMARKS: [N, K, 5, 2], zeros for a model without landmarks.
    const size_t per = name == "BOXES" ? 4 : name == "LANDMARKS" ? 2 * kNumLandmarks : 1;
    t.datatype = "FP32";
    t.shape = {n, static_cast<int64_t>(k)};
    if (per == 4) t.shape.push_back(4);
    if (per == 2 * kNumLandmarks) t.shape.insert(t.shape.end(), {kNumLandmarks, 2});
    t.f.assign(static_cast<size_t>(n) * k * per, 0.0f);
    for (int64_t img = 0; img < n; ++img) {
      const auto& faces = results[img].result.faces;
      for (size_t j = 0; j < faces.size(); ++j) {
        float* dst = &t.f[(img * k + j) * per];
        if (per == 2 * kNumLandmarks) {
          const auto& points = faces[j].landmarks;
          for (size_t p = 0; p < points.size() && p < kNumLandmarks; ++p) {
            dst[2 * p] = points[p].x;
            dst[2 * p + 1] = points[p].y;
          }
        } else if (per == 4) {
          dst[0] = faces[j].x1;
          dst[1] = faces[j].y1;
          dst[2] = faces[j].x2;
          dst[3] = faces[j].y2;
        } else {
          dst[0] = faces[j].score;
        }
      }
    }
  } else {
    t.datatype = "INT32";
    const bool size = name == "IMAGE_SIZE";
    t.shape = {n};
    if (size) t.shape.push_back(2);
    for (const auto& r : results) {
      if (size) {
        t.i.push_back(r.result.width);
        t.i.push_back(r.result.height);
      } else {
        t.i.push_back(static_cast<int32_t>(r.result.faces.size()));
      }
    }
  }
  return t;
}

}  // namespace

std::optional<HttpError> FirstFailure(const InferRequest& request,
                                      const std::vector<pipeline::RequestResult>& results) {
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].outcome == scheduler::Outcome::kDone) continue;
    const auto [status, code] = HttpStatusOf(results[i]);
    return HttpError{status, code, request.images[i].name + ": " + results[i].status.message()};
  }
  return std::nullopt;
}

std::vector<OutputTensor> OutputTensors(const InferRequest& request,
                                        const std::vector<pipeline::RequestResult>& results) {
  std::vector<OutputTensor> tensors;
  for (const RequestedOutput& o : request.outputs) tensors.push_back(MakeTensor(o.name, results));
  return tensors;
}

std::variant<InferRequest, HttpError> ParseInferRequest(std::string_view header_length,
                                                        std::string_view body,
                                                        const RequestLimits& limits) {
  std::string_view json_text = body, binary;
  if (!header_length.empty()) {
    size_t j = 0;
    const auto [end, ec] =
        std::from_chars(header_length.data(), header_length.data() + header_length.size(), j);
    if (ec != std::errc() || end != header_length.data() + header_length.size() ||
        j > body.size()) {
      return Bad("Inference-Header-Content-Length: '" + std::string(header_length) +
                 "' must be an integer no larger than the body (" + std::to_string(body.size()) +
                 " bytes)");
    }
    json_text = body.substr(0, j);
    binary = body.substr(j);
  }
  nlohmann::json doc;
  if (auto e = ParseJsonLimited(json_text, limits.max_json_depth, &doc)) return *e;
  if (!doc.is_object()) return Bad("the inference request must be a JSON object");
  InferRequest r;
  bool binary_all = false;
  for (const auto& [key, value] : doc.items()) {
    if (key == "id") {
      if (!value.is_string()) return Bad("id must be a string");
      r.id = value.get<std::string>();
    } else if (key == "parameters") {
      if (auto e = ApplyParameters(value, r, &binary_all)) return *e;
    } else if (key != "inputs" && key != "outputs") {
      return Bad("unknown member '" + key + "'; allowed: id, parameters, inputs, outputs");
    }
  }
  if (!doc.contains("inputs") || !doc["inputs"].is_array() || doc["inputs"].size() != 1) {
    return Bad("inputs must hold exactly one input, IMAGE (BYTES, shape [N])");
  }
  int64_t binary_used = 0;
  if (auto e = ParseInput(doc["inputs"][0], binary, limits, r, &binary_used)) return *e;
  if (binary_used != static_cast<int64_t>(binary.size())) {
    return Bad("the binary data after the JSON is " + std::to_string(binary.size()) +
               " bytes, the inputs' binary_data_size add up to " + std::to_string(binary_used));
  }
  if (auto e = ParseOutputs(doc.contains("outputs") ? doc["outputs"] : nlohmann::json(), binary_all,
                            r)) {
    return *e;
  }
  return r;
}

http::HttpResponse ErrorResponse(const HttpError& error) {
  http::HttpResponse r;
  r.status = error.status;
  r.content_type = "application/json";
  r.body = ToJsonLine({{"error", error.code + ": " + error.message}});
  if (error.status == 503) r.SetHeader("Retry-After", "1");
  return r;
}

http::HttpResponse InferResponse(const InferRequest& request, const std::string& model_name,
                                 const std::vector<pipeline::RequestResult>& results) {
  if (auto e = FirstFailure(request, results)) return ErrorResponse(*e);
  nlohmann::json outputs = nlohmann::json::array();
  std::string binary;
  const std::vector<OutputTensor> tensors = OutputTensors(request, results);
  for (size_t k = 0; k < tensors.size(); ++k) {
    const RequestedOutput& o = request.outputs[k];
    const OutputTensor& t = tensors[k];
    nlohmann::json out = {{"name", o.name}, {"datatype", t.datatype}, {"shape", t.shape}};
    if (o.binary) {
      const std::string bytes = t.Bytes();
      out["parameters"] = {{"binary_data_size", bytes.size()}};
      binary += bytes;
    } else {
      out["data"] = t.Data();
    }
    outputs.push_back(std::move(out));
  }
  nlohmann::json doc = {{"model_name", model_name}, {"model_version", "1"}, {"outputs", outputs}};
  if (!request.id.empty()) doc["id"] = request.id;
  http::HttpResponse r;
  r.body = ToJsonLine(doc);
  if (binary.empty()) {
    r.content_type = "application/json";
    return r;
  }
  r.SetHeader("Inference-Header-Content-Length", std::to_string(r.body.size()));
  r.content_type = "application/octet-stream";
  r.body += binary;
  return r;
}

nlohmann::json ServerMetadata() {
  return {{"name", "mogserve"}, {"version", "0.1.0"}, {"extensions", {"binary_tensor_data"}}};
}

nlohmann::json ModelMetadata(const std::string& model_name, const std::string& platform) {
  return {{"name", model_name},
          {"versions", {"1"}},
          {"platform", platform},
          {"inputs", {{{"name", "IMAGE"}, {"datatype", "BYTES"}, {"shape", {-1}}}}},
          {"outputs",
           {{{"name", "BOXES"}, {"datatype", "FP32"}, {"shape", {-1, -1, 4}}},
            {{"name", "SCORES"}, {"datatype", "FP32"}, {"shape", {-1, -1}}},
            {{"name", "COUNT"}, {"datatype", "INT32"}, {"shape", {-1}}},
            {{"name", "IMAGE_SIZE"}, {"datatype", "INT32"}, {"shape", {-1, 2}}},
            {{"name", "LANDMARKS"}, {"datatype", "FP32"}, {"shape", {-1, -1, 5, 2}}}}}};
}

}  // namespace mogserve::server::oip
