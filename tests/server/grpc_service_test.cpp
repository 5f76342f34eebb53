// The gRPC API's pieces without a server (server/grpc/grpc_service.h): the status map, the
// ModelInferRequest → oip::InferRequest mapping with REST's errors, and the response's raw
// outputs — the same bytes REST's binary outputs carry.
#include "server/grpc/grpc_service.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

namespace mogserve::server::grpc_api {
namespace {

using ::testing::HasSubstr;
using Request = inference::ModelInferRequest;

std::string LengthPrefixed(const std::vector<std::string>& elements) {
  std::string out;
  for (const std::string& e : elements) {
    const uint32_t n = static_cast<uint32_t>(e.size());
    for (int k = 0; k < 4; ++k) out += static_cast<char>((n >> (8 * k)) & 0xFF);
    out += e;
  }
  return out;
}

// A request for model "m" with IMAGE [N] in bytes_contents.
Request WithImages(const std::vector<std::string>& images) {
  Request r;
  r.set_model_name("m");
  auto* in = r.add_inputs();
  in->set_name("IMAGE");
  in->set_datatype("BYTES");
  in->add_shape(static_cast<int64_t>(images.size()));
  for (const std::string& b : images) in->mutable_contents()->add_bytes_contents(b);
  return r;
}

oip::InferRequest Parsed(const Request& request) {
  auto r = ParseModelInferRequest(request, "m", RequestLimits{});
  if (auto* e = std::get_if<HttpError>(&r)) {
    ADD_FAILURE() << e->status << " " << e->code << ": " << e->message;
    return {};
  }
  return std::get<oip::InferRequest>(r);
}

HttpError Refused(const Request& request, RequestLimits limits = {}) {
  auto r = ParseModelInferRequest(request, "m", limits);
  if (auto* e = std::get_if<HttpError>(&r)) return *e;
  ADD_FAILURE() << "accepted: " << request.ShortDebugString().substr(0, 200);
  return {};
}

TEST(GrpcStatusTest, TheSpecsMap) {
  using C = grpc::StatusCode;
  EXPECT_EQ(GrpcCodeOf(400, "bad_request"), C::INVALID_ARGUMENT);
  EXPECT_EQ(GrpcCodeOf(400, "invalid_image"), C::INVALID_ARGUMENT);
  EXPECT_EQ(GrpcCodeOf(415, "unsupported_image_format"), C::INVALID_ARGUMENT);
  EXPECT_EQ(GrpcCodeOf(422, "invalid_parameter"), C::INVALID_ARGUMENT);
  EXPECT_EQ(GrpcCodeOf(401, "unauthorized"), C::UNAUTHENTICATED);
  EXPECT_EQ(GrpcCodeOf(404, "model_not_found"), C::NOT_FOUND);
  EXPECT_EQ(GrpcCodeOf(413, "image_too_large"), C::RESOURCE_EXHAUSTED);
  EXPECT_EQ(GrpcCodeOf(413, "too_many_images"), C::RESOURCE_EXHAUSTED);
  EXPECT_EQ(GrpcCodeOf(503, "queue_full"), C::RESOURCE_EXHAUSTED);
  EXPECT_EQ(GrpcCodeOf(503, "not_ready"), C::UNAVAILABLE);
  EXPECT_EQ(GrpcCodeOf(503, "cancelled"), C::UNAVAILABLE);
  EXPECT_EQ(GrpcCodeOf(504, "deadline_exceeded"), C::DEADLINE_EXCEEDED);
  EXPECT_EQ(GrpcCodeOf(500, "inference_failed"), C::INTERNAL);
  EXPECT_EQ(GrpcCodeOf(409, "superseded"), C::ABORTED);
  EXPECT_EQ(GrpcCodeOf(418, "teapot"), C::UNKNOWN);
  const grpc::Status s = ToGrpcStatus({422, "invalid_parameter", "max_faces: 'x' ..."});
  EXPECT_EQ(s.error_code(), C::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "invalid_parameter: max_faces: 'x' ...");
  EXPECT_STREQ(GrpcCodeName(C::RESOURCE_EXHAUSTED), "RESOURCE_EXHAUSTED");
}

TEST(GrpcInferTest, BytesContentsAndParameters) {
  Request req = WithImages({"jpeg-a", "jpeg-b"});
  req.set_id("r-1");
  req.set_model_version("1");
  (*req.mutable_parameters())["score_threshold"].set_double_param(0.7);
  (*req.mutable_parameters())["max_faces"].set_int64_param(3);
  (*req.mutable_parameters())["priority"].set_string_param("bulk");
  (*req.mutable_parameters())["timeout_ms"].set_uint64_param(500);
  const oip::InferRequest r = Parsed(req);
  EXPECT_EQ(r.id, "r-1");
  ASSERT_EQ(r.images.size(), 2u);
  EXPECT_EQ(r.images[1].name, "IMAGE[1]");
  EXPECT_EQ(r.images[1].bytes, ImageBytes("jpeg-b"));
  EXPECT_NEAR(*r.params.score_threshold, 0.7, 1e-6);
  EXPECT_EQ(*r.params.max_faces, 3);
  EXPECT_EQ(*r.params.priority, "bulk");
  EXPECT_EQ(*r.params.timeout_ms, 500);
  ASSERT_EQ(r.outputs.size(), 4u);  // no `outputs`: all, in order
  EXPECT_EQ(r.outputs[0].name, "BOXES");
  EXPECT_EQ(r.outputs[3].name, "IMAGE_SIZE");
}

TEST(GrpcInferTest, RawInputContentsAreLengthPrefixedAndOutputsFilter) {
  Request req = WithImages({});
  req.mutable_inputs(0)->clear_shape();
  req.mutable_inputs(0)->add_shape(2);
  req.mutable_inputs(0)->add_shape(1);
  req.add_raw_input_contents(LengthPrefixed({"one", "three"}));
  req.add_outputs()->set_name("COUNT");
  (*req.mutable_outputs(0)->mutable_parameters())["binary_data"].set_bool_param(true);
  req.add_outputs()->set_name("BOXES");
  const oip::InferRequest r = Parsed(req);
  ASSERT_EQ(r.images.size(), 2u);
  EXPECT_EQ(r.images[0].bytes, ImageBytes("one"));
  EXPECT_EQ(r.images[1].bytes, ImageBytes("three"));
  ASSERT_EQ(r.outputs.size(), 2u);
  EXPECT_EQ(r.outputs[0].name, "COUNT");
  EXPECT_EQ(r.outputs[1].name, "BOXES");
}

TEST(GrpcInferTest, EveryRefusalAsRest) {
  struct Case {
    std::function<void(Request&)> change;
    int status;
    std::string code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](Request& r) { r.set_model_name("other"); }, 404, "model_not_found", "no model 'other'"},
      {[](Request& r) { r.set_model_version("2"); }, 404, "model_not_found", "version 2"},
      {[](Request& r) { (*r.mutable_parameters())["nms"].set_double_param(0.5); }, 400,
       "invalid_parameter", "unknown parameter 'nms'"},
      {[](Request& r) { (*r.mutable_parameters())["max_faces"].set_int64_param(0); }, 422,
       "invalid_parameter", "max_faces"},
      {[](Request& r) { r.mutable_inputs(0)->set_datatype("UINT8"); }, 400, "bad_request",
       "datatype must be BYTES"},
      {[](Request& r) { r.mutable_inputs(0)->set_name("PIXELS"); }, 400, "bad_request",
       "'PIXELS' is not known"},
      {[](Request& r) { r.mutable_inputs(0)->add_shape(3); }, 400, "bad_request",
       "shape must be [N] or [N, 1]"},
      {[](Request& r) { r.mutable_inputs(0)->set_shape(0, 2); }, 400, "bad_request",
       "shape says 2 images, the data holds 1"},
      {[](Request& r) { r.mutable_inputs(0)->mutable_contents()->set_bytes_contents(0, ""); }, 400,
       "invalid_image", "IMAGE[0] is empty"},
      {[](Request& r) { r.add_raw_input_contents(LengthPrefixed({"x"})); }, 400, "bad_request",
       "both contents and raw_input_contents"},
      {[](Request& r) { r.mutable_inputs(0)->clear_contents(); }, 400, "bad_request",
       "neither contents.bytes_contents nor raw_input_contents"},
      {[](Request& r) { r.add_inputs()->set_name("IMAGE"); }, 400, "bad_request",
       "exactly one input"},
      {[](Request& r) { r.add_outputs()->set_name("MASKS"); }, 400, "bad_request",
       "'MASKS' is not known"},
      {[](Request& r) {
         (*r.mutable_inputs(0)->mutable_parameters())["content_type"].set_string_param("x");
       },
       400, "invalid_parameter", "IMAGE: parameter 'content_type'"},
  };
  for (const Case& c : cases) {
    Request req = WithImages({"jpeg"});
    c.change(req);
    const HttpError e = Refused(req);
    EXPECT_EQ(e.status, c.status) << c.message;
    EXPECT_EQ(e.code, c.code) << c.message;
    EXPECT_THAT(e.message, HasSubstr(c.message));
  }
  Request raw = WithImages({});
  raw.mutable_inputs(0)->set_shape(0, 1);
  raw.add_raw_input_contents(
      std::string("\x09\x00\x00\x00"
                  "abc",
                  7));
  EXPECT_THAT(Refused(raw).message, HasSubstr("IMAGE[0]: its length 9 runs past"));
  RequestLimits limits;
  limits.max_images = 1;
  const HttpError too_many = Refused(WithImages({"a", "b"}), limits);
  EXPECT_EQ(too_many.status, 413);
  EXPECT_EQ(ToGrpcStatus(too_many).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
}

pipeline::RequestResult Done(int w, int h, std::vector<Detection> faces) {
  pipeline::RequestResult r;
  r.outcome = scheduler::Outcome::kDone;
  r.result.width = w;
  r.result.height = h;
  r.result.faces = std::move(faces);
  return r;
}

TEST(GrpcInferTest, RawOutputsAreRestsBinaryOutputs) {
  oip::InferRequest req;
  req.id = "x";
  req.images = {{"IMAGE[0]", {}}, {"IMAGE[1]", {}}};
  oip::AddAllOutputs(true, req);
  const std::vector<pipeline::RequestResult> results = {
      Done(640, 480, {{10, 20, 30, 40, 0.9f}, {50, 60, 70, 80, 0.8f}}), Done(100, 50, {})};
  inference::ModelInferResponse response;
  FillModelInferResponse(req, "m", results, &response);
  EXPECT_EQ(response.model_name(), "m");
  EXPECT_EQ(response.model_version(), "1");
  EXPECT_EQ(response.id(), "x");
  ASSERT_EQ(response.outputs_size(), 4);
  ASSERT_EQ(response.raw_output_contents_size(), 4);
  EXPECT_EQ(response.outputs(0).name(), "BOXES");
  EXPECT_EQ(response.outputs(0).datatype(), "FP32");
  EXPECT_THAT(response.outputs(0).shape(), ::testing::ElementsAre(2, 2, 4));
  EXPECT_EQ(response.outputs(2).datatype(), "INT32");
  EXPECT_THAT(response.outputs(3).shape(), ::testing::ElementsAre(2, 2));
  // The same bytes REST appends after its JSON header, in the same order.
  const http::HttpResponse rest = oip::InferResponse(req, "m", results);
  std::string raw;
  for (const std::string& b : response.raw_output_contents()) raw += b;
  ASSERT_GE(rest.body.size(), raw.size());
  EXPECT_EQ(rest.body.substr(rest.body.size() - raw.size()), raw);
  int32_t count[2];
  std::memcpy(count, response.raw_output_contents(2).data(), 8);
  EXPECT_EQ(count[0], 2);
  EXPECT_EQ(count[1], 0);
}

}  // namespace
}  // namespace mogserve::server::grpc_api
