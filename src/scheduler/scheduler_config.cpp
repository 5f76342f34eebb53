#include "scheduler/scheduler_config.h"

#include <algorithm>
#include <string>

#include "common/enum_names.h"

namespace mogserve::scheduler {

constexpr EnumNames<Policy, Policy::kAdaptive> kPolicyNames{
    {"naive", "dynamic", "continuous", "adaptive"}};

const char* PolicyName(Policy policy) {
  return NameOf(kPolicyNames, policy, "unknown");
}

StatusOr<Policy> ParsePolicy(std::string_view name) {
  if (std::optional<Policy> p = FindByName(kPolicyNames, name)) return *p;
  return InvalidArgument("policy: unknown scheduling policy '" + std::string(name) +
                         "' (expected naive, dynamic, continuous or adaptive)");
}

namespace {

// Sizes must be strictly increasing and within [1, max]; max <= 0 means "no upper bound".
Status ValidateSizeList(const char* field, const std::vector<int>& sizes, int max) {
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 1 || (max > 0 && sizes[i] > max)) {
      return InvalidArgument(std::string(field) + ": size " + std::to_string(sizes[i]) +
                             " is outside 1.." + (max > 0 ? std::to_string(max) : "inf"));
    }
    if (i > 0 && sizes[i] <= sizes[i - 1]) {
      return InvalidArgument(std::string(field) + ": sizes must be strictly increasing");
    }
  }
  return Status::Ok();
}

Status Positive(const char* field, int64_t value) {
  if (value > 0) return Status::Ok();
  return InvalidArgument(std::string(field) + " must be > 0, got " + std::to_string(value));
}

Status NonNegative(const char* field, Duration value) {
  if (value >= Duration::zero()) return Status::Ok();
  return InvalidArgument(std::string(field) + " must be >= 0");
}

}  // namespace

Status SchedulerConfig::Validate() const {
  MOGSERVE_RETURN_IF_ERROR(Positive("num_buckets", num_buckets));
  MOGSERVE_RETURN_IF_ERROR(Positive("max_batch_size", max_batch_size));
  if (!bucket_max_batch_size.empty()) {
    if (static_cast<int>(bucket_max_batch_size.size()) != num_buckets) {
      return InvalidArgument("bucket_max_batch_size: needs one entry per bucket (" +
                             std::to_string(num_buckets) + "), got " +
                             std::to_string(bucket_max_batch_size.size()));
    }
    for (int cap : bucket_max_batch_size) {
      if (cap < 1 || cap > max_batch_size) {
        return InvalidArgument("bucket_max_batch_size: entry " + std::to_string(cap) +
                               " is outside 1..max_batch_size (" + std::to_string(max_batch_size) +
                               ")");
      }
    }
  }
  if (max_batch_pixels < 0) return InvalidArgument("max_batch_pixels must be >= 0 (0 = no limit)");
  MOGSERVE_RETURN_IF_ERROR(NonNegative("max_delay", max_delay));
  MOGSERVE_RETURN_IF_ERROR(
      ValidateSizeList("preferred_batch_sizes", preferred_batch_sizes, max_batch_size));
  MOGSERVE_RETURN_IF_ERROR(ValidateSizeList("planned_batch_sizes", planned_batch_sizes, 0));
  MOGSERVE_RETURN_IF_ERROR(Positive("queue_capacity_requests", queue_capacity_requests));
  if (queue_capacity_bytes < 0) {
    return InvalidArgument("queue_capacity_bytes must be >= 0 (0 = no byte limit)");
  }
  MOGSERVE_RETURN_IF_ERROR(NonNegative("default_timeout", default_timeout));
  MOGSERVE_RETURN_IF_ERROR(NonNegative("aging_step", aging_step));
  MOGSERVE_RETURN_IF_ERROR(Positive("latency_window", latency_window));
  MOGSERVE_RETURN_IF_ERROR(NonNegative("default_batch_latency", default_batch_latency));
  if (policy == Policy::kAdaptive) {
    if (latency_target <= Duration::zero()) {
      return InvalidArgument("latency_target must be > 0 for the adaptive policy");
    }
    if (adaptive_min_samples < 2 || adaptive_min_samples > latency_window) {
      return InvalidArgument("adaptive_min_samples must be in 2..latency_window (" +
                             std::to_string(latency_window) + ")");
    }
  }
  return Status::Ok();
}

int SchedulerConfig::MaxBatchSizeFor(int bucket) const {
  int cap = max_batch_size;
  if (!bucket_max_batch_size.empty()) cap = std::min(cap, bucket_max_batch_size[bucket]);
  if (!planned_batch_sizes.empty()) cap = std::min(cap, planned_batch_sizes.back());
  return cap;
}

int SchedulerConfig::PaddedBatchSize(int n) const {
  auto it = std::lower_bound(planned_batch_sizes.begin(), planned_batch_sizes.end(), n);
  return it == planned_batch_sizes.end() ? n : *it;
}

int SchedulerConfig::TargetBatchSizeFor(int bucket) const {
  int cap = MaxBatchSizeFor(bucket);
  if (!preferred_batch_sizes.empty()) cap = std::min(cap, preferred_batch_sizes.back());
  return cap;
}

}  // namespace mogserve::scheduler
