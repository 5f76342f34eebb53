// Writes a Network op by op. Each convolution's weights are defined once (AddConv* returns the
// definition's index) and applied by Conv() as often as the network needs. Channel counts are
// checked as ops are added; the first mismatch is reported by Finish().
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/network.h"
#include "mogserve/status.h"

namespace mogserve::model {

class NetworkBuilder {
 public:
  explicit NetworkBuilder(std::string name);

  // Tensor 0: the normalised 3-channel input.
  int input() const { return 0; }
  int channels(int tensor) const { return net_->tensor_channels_[tensor]; }

  // A PyTorch conv `prefix`.weight [out, in/groups, k, k] (+ `prefix`.bias when `bias`), with
  // the BatchNorm `bn_prefix` (weight, bias, running_mean, running_var; num_batches_tracked
  // allowed) folded in when bn_prefix is not empty.
  int AddTorchConv(const std::string& prefix, int out, int in, int kernel, bool bias,
                   const std::string& bn_prefix = "", int groups = 1);
  int AddConvDef(ConvDef def);
  int AddNormDef(NormDef def);

  struct ConvArgs {
    int stride = 1;
    int dilation = 1;
    Padding padding;
    Activation act = Activation::kNone;
    int residual = -1;  // tensor added before the activation, or -1
  };
  // Applies conv definition `def` to tensor `x`; returns the output tensor.
  int Conv(int def, int x, const ConvArgs& args, const std::string& name = "");
  int MaxPool(int x, int kernel, int stride, int pad);
  int MaxPool(int x, int kernel, int stride, const Padding& padding, const std::string& name = "");
  int GroupNorm(int def, int x, Activation act);
  int UpsampleAdd(int top, int lateral, const std::string& name = "", bool nearest = false);
  int Concat(const std::vector<int>& parts);
  // act(x) as an op of its own (act not kNone); a conv's activation is ConvArgs::act.
  int Activate(int x, Activation act, const std::string& name = "");
  // x followed by zero channels: `channels` in all (> x's).
  int PadChannels(int x, int channels, const std::string& name = "");

  void AddOutputLevel(const OutputLevel& level) { net_->outputs_.push_back(level); }
  void AddRawOutput(int tensor) { net_->raw_outputs_.push_back(tensor); }
  // Keys read by the model outside the graph (used) or tolerated in checkpoints (!used).
  void AddOtherKey(KeySpec key) { net_->other_keys_.push_back(std::move(key)); }
  // Unused PyTorch conv keys (weight [+ bias]) a checkpoint may carry.
  void AddUnusedTorchConv(const std::string& prefix, int out, int in, int kernel, bool bias);
  void SetNormalization(const InputNormalization& n) { net_->normalization_ = n; }
  void SetFixedInputSide(int side) { net_->fixed_input_side_ = side; }
  void AllowUnlistedKeys() { net_->allows_unlisted_keys_ = true; }

  // The network, or kInternal naming the first op whose channels did not fit.
  StatusOr<std::shared_ptr<const Network>> Finish();
  // For the networks written in code, where a mismatch is a bug the tests catch: the network,
  // or the error on stderr and abort().
  std::shared_ptr<const Network> FinishOrAbort();

 private:
  int NewTensor(int channels, std::string name);
  int AddOp(Op op, int out_channels);
  void Fail(const std::string& what);

  std::shared_ptr<Network> net_;
  std::string error_;
};

}  // namespace mogserve::model
