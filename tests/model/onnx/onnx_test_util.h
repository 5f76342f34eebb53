// Builds small ONNX models in memory with the generated protobuf classes, for the reader and
// shape-inference tests: an image input "x", initializers, nodes with attributes, outputs.
#pragma once

#include <onnx.pb.h>

#include <cstdint>
#include <string>
#include <vector>

namespace mogserve::model::onnx::testing {

class ModelWriter {
 public:
  // A model importing `opset` of the standard domain, with input "x" of `dims` (-1: dynamic,
  // named "d<i>").
  explicit ModelWriter(int64_t opset, std::vector<int64_t> dims = {1, 3, -1, -1}) {
    model_.set_ir_version(7);
    model_.set_producer_name("mogserve-test");
    auto* o = model_.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    auto* in = graph()->add_input();
    in->set_name("x");
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(::onnx::TensorProto::FLOAT);
    for (size_t i = 0; i < dims.size(); ++i) {
      auto* d = tt->mutable_shape()->add_dim();
      if (dims[i] >= 0)
        d->set_dim_value(dims[i]);
      else
        d->set_dim_param("d" + std::to_string(i));
    }
  }

  ::onnx::ModelProto& model() { return model_; }
  ::onnx::GraphProto* graph() { return model_.mutable_graph(); }

  ::onnx::TensorProto* Floats(const std::string& name, const std::vector<int64_t>& dims,
                              const std::vector<float>& values) {
    auto* t = graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
    return t;
  }
  ::onnx::TensorProto* Ints(const std::string& name, const std::vector<int64_t>& values) {
    auto* t = graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
    return t;
  }

  ::onnx::NodeProto* Node(const std::string& op, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs) {
    auto* n = graph()->add_node();
    n->set_op_type(op);
    n->set_name(op + "_" + std::to_string(graph()->node_size()));
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return n;
  }
  static void IntsAttr(::onnx::NodeProto* n, const std::string& name,
                       const std::vector<int64_t>& values) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INTS);
    for (int64_t v : values) a->add_ints(v);
  }
  static void IntAttr(::onnx::NodeProto* n, const std::string& name, int64_t value) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INT);
    a->set_i(value);
  }
  static void FloatAttr(::onnx::NodeProto* n, const std::string& name, float value) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::FLOAT);
    a->set_f(value);
  }
  static void StringAttr(::onnx::NodeProto* n, const std::string& name, const std::string& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::STRING);
    a->set_s(v);
  }

  void Output(const std::string& name) { graph()->add_output()->set_name(name); }

  std::string Bytes() const { return model_.SerializeAsString(); }

 private:
  ::onnx::ModelProto model_;
};

}  // namespace mogserve::model::onnx::testing
