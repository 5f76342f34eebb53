#include "engine/cuda/arena.h"

#include <algorithm>
#include <numeric>
#include <string>

namespace mogserve::engine::cuda {
namespace {

struct Placed {
  int64_t offset;
  int64_t bytes;
};

bool Overlaps(const ArenaRequest& a, const ArenaRequest& b) {
  return a.first_op <= b.last_op && b.first_op <= a.last_op;
}

// The smallest gap of at least `bytes` between the (offset-sorted) buffers `live`, or the end.
int64_t BestFit(std::vector<Placed>& live, int64_t bytes) {
  std::sort(live.begin(), live.end(), [](const Placed& a, const Placed& b) {
    return a.offset != b.offset ? a.offset < b.offset : a.bytes < b.bytes;
  });
  int64_t best = -1, best_gap = 0, end = 0;
  for (const Placed& p : live) {
    const int64_t gap = p.offset - end;
    if (gap >= bytes && (best < 0 || gap < best_gap)) {
      best = end;
      best_gap = gap;
    }
    end = std::max(end, p.offset + p.bytes);
  }
  return best >= 0 ? best : end;
}

// Whether op `index` may write its output into input `input` (see arena.h).
bool InPlace(const model::LayerPlan& plan, int index, const ArenaOptions& options, int* input) {
  const model::Op& op = plan.network().ops()[index];
  int candidate = -1;
  if (op.kind == model::OpKind::kUpsampleAdd && options.in_place_upsample_add) {
    candidate = op.inputs[1];
    if (op.inputs[0] == candidate) return false;
  } else if (op.kind == model::OpKind::kGroupNorm && options.in_place_group_norm) {
    candidate = op.inputs[0];
  } else {
    return false;
  }
  const model::TensorShape& in = plan.shape(candidate);
  const model::TensorShape& out = plan.shape(op.output);
  if (plan.last_use(candidate) != index || in.channels != out.channels || in.height != out.height ||
      in.width != out.width) {
    return false;
  }
  *input = candidate;
  return true;
}

}  // namespace

ArenaLayout PlaceInArena(std::span<const ArenaRequest> requests) {
  std::vector<int> order(requests.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    if (requests[a].bytes != requests[b].bytes) return requests[a].bytes > requests[b].bytes;
    return requests[a].first_op < requests[b].first_op;
  });
  ArenaLayout layout;
  layout.offsets.assign(requests.size(), -1);
  std::vector<int> placed;
  std::vector<Placed> live;
  for (int i : order) {
    const ArenaRequest& r = requests[i];
    if (r.bytes <= 0) continue;
    const int64_t bytes = AlignArenaBytes(r.bytes);
    live.clear();
    for (int j : placed) {
      if (Overlaps(r, requests[j])) {
        live.push_back({layout.offsets[j], AlignArenaBytes(requests[j].bytes)});
      }
    }
    const int64_t offset = BestFit(live, bytes);
    layout.offsets[i] = offset;
    layout.total_bytes = std::max(layout.total_bytes, offset + bytes);
    placed.push_back(i);
  }
  return layout;
}

int ProducerOp(const model::LayerPlan& plan, int tensor) {
  if (tensor == plan.network().input_tensor()) return -1;
  const auto& ops = plan.network().ops();
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].output == tensor) return static_cast<int>(i);
  }
  return -2;
}

ArenaPlan PlanArena(const model::LayerPlan& plan, int batch, int element_bytes,
                    const ArenaOptions& options, std::span<const int64_t> op_scratch_bytes) {
  const model::Network& net = plan.network();
  const size_t tensors = net.tensor_channels().size();
  const int ops = static_cast<int>(net.ops().size());
  ArenaPlan out;
  out.batch = batch;
  out.element_bytes = element_bytes;
  out.tensor_bytes.assign(tensors, 0);
  out.tensor_offsets.assign(tensors, -1);
  out.storage_of.resize(tensors);
  std::iota(out.storage_of.begin(), out.storage_of.end(), 0);
  out.op_in_place.assign(ops, false);

  // Each tensor's live interval; a tensor nothing reads still exists while its op writes it.
  std::vector<ArenaRequest> storage(tensors);
  std::vector<int> first(tensors, -2);
  first[net.input_tensor()] = -1;
  for (int i = 0; i < ops; ++i) first[net.ops()[i].output] = i;
  for (size_t t = 0; t < tensors; ++t) {
    if (first[t] == -2) continue;
    const model::TensorShape& s = plan.shape(static_cast<int>(t));
    out.tensor_bytes[t] = AlignArenaBytes(int64_t{batch} * DeviceChannels(s.channels) * s.height *
                                          s.width * element_bytes);
    storage[t] = {out.tensor_bytes[t], first[t], std::max(first[t], plan.last_use(t))};
    out.sum_bytes += out.tensor_bytes[t];
  }
  // In-place ops merge the output into its input's storage: one request spanning both lives.
  for (int i = 0; i < ops; ++i) {
    int input = -1;
    if (!InPlace(plan, i, options, &input)) continue;
    const int output = net.ops()[i].output;
    const int root = out.storage_of[input];
    out.storage_of[output] = root;
    out.op_in_place[i] = true;
    storage[root].last_op = std::max(storage[root].last_op, storage[output].last_op);
    storage[output].bytes = 0;
  }
  // Scratch buffers after the tensors: request tensors + i is op i's, live during op i only.
  for (int i = 0; i < ops; ++i) {
    const int64_t bytes = i < static_cast<int>(op_scratch_bytes.size()) ? op_scratch_bytes[i] : 0;
    storage.push_back({AlignArenaBytes(bytes), i, i});
  }
  const ArenaLayout layout = PlaceInArena(storage);
  for (size_t t = 0; t < tensors; ++t) {
    if (out.tensor_bytes[t] > 0) out.tensor_offsets[t] = layout.offsets[out.storage_of[t]];
  }
  out.op_scratch_offsets.assign(layout.offsets.begin() + static_cast<int64_t>(tensors),
                                layout.offsets.end());
  out.total_bytes = layout.total_bytes;
  return out;
}

Status CheckArenaSchedule(const ArenaPlan& arena, int streams) {
  if (streams == arena.streams) return Status::Ok();
  return Unimplemented("the activation arena was planned for ops run in op order on " +
                       std::to_string(arena.streams) + " stream; " + std::to_string(streams) +
                       " streams need a stream-aware plan (lives extended to each branch's "
                       "join, one GroupNorm workspace per branch), which is not written yet");
}

}  // namespace mogserve::engine::cuda
