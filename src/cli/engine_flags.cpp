#include <iostream>

#include "api/serving_stack.h"
#include "cli/commands.h"

namespace mogserve::cli {

std::string ResolveModelDir(const std::string& flag, const std::string& model) {
  auto spec = model::FindModel(model.empty() ? model::DefaultModel().name : model);
  return api::ResolveModelDir(flag, spec.ok() ? (*spec)->folder : model::DefaultModel().folder);
}

StatusOr<std::vector<engine::Precision>> ParsePrecisions(const std::vector<std::string>& names,
                                                         bool defaulted,
                                                         const engine::EngineOptions& engine,
                                                         const std::string& flag) {
  MOGSERVE_ASSIGN_OR_RETURN(const engine::DeviceSpec device, engine::ParseDevice(engine.device));
  std::vector<engine::Precision> out;
  for (const std::string& name : names) {
    engine::Precision precision;
    if (name == "auto") {
      precision = engine::ChooseAutoPrecision(device, !engine.calibration.empty()).precision;
    } else {
      StatusOr<engine::Precision> parsed = engine::ParsePrecision(name);
      if (!parsed.ok()) return InvalidArgument(flag + ": " + parsed.status().message() + ", auto");
      precision = *parsed;
    }
    if (device.backend == "cpu") {
      const Status runs = engine::CheckCpuRunsPrecision(precision);
      if (!runs.ok() && defaulted && runs.code() == StatusCode::kUnsupported) {
        std::cerr << "note: " << name << " left out: " << runs.message() << "\n";
        continue;
      }
      if (!runs.ok()) return Status(runs.code(), flag + ": " + runs.message());
    }
    out.push_back(precision);
  }
  return out;
}

StatusOr<api::EngineSetup> ToEngineSetup(const DetectorOptions& flags) {
  return api::ToEngineSetup(flags, opt::OptionNames::Flags());
}

StatusOr<pipeline::ShapeBuckets> ToShapeBuckets(const DetectorOptions& flags,
                                                const engine::EngineInfo& info) {
  return api::ToShapeBuckets(flags, info, opt::OptionNames::Flags());
}

std::variant<api::LoadedEngines, int> CheckAndLoadEngines(const DetectorOptions& options,
                                                          const opt::OptionNames& names) {
  StatusOr<api::LoadedEngines> loaded = [&]() -> StatusOr<api::LoadedEngines> {
    MOGSERVE_ASSIGN_OR_RETURN(const engine::EngineOptions engine,
                              api::CheckOptions(options, names));
    return api::LoadEngines(engine, options, names);
  }();
  if (loaded.ok()) return std::move(*loaded);
  std::cerr << "error: " << loaded.status().message() << "\n";
  return loaded.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFatal;
}

std::variant<EngineInstances, int> CreateEngineInstances(const DetectorOptions& flags,
                                                         int instances) {
  DetectorOptions o = flags;
  o.instances = instances;
  auto loaded = CheckAndLoadEngines(o, opt::OptionNames::Flags());
  if (const int* exit_code = std::get_if<int>(&loaded)) return *exit_code;
  api::LoadedEngines& engines = std::get<api::LoadedEngines>(loaded);
  EngineInstances out;
  out.owned = std::move(engines.owned);
  out.all = std::move(engines.engines);
  out.face_stage = std::move(engines.face_stage);
  return out;
}

DetectorOptions BatchJobOptions(const DetectorOptions& flags, const BatchJobFlags& job) {
  DetectorOptions o = flags;
  o.instances = job.instances;
  o.scheduler = job.policy;
  o.max_batch_size = job.batch_size;
  o.plan_batch_sizes.clear();
  o.request_timeout_ms = 0;
  o.queue_capacity_bytes = 0;
  return o;
}

void AddBatchJobFlags(CLI::App& app, BatchJobFlags& flags, const std::string& unit) {
  app.add_option("-o,--output", flags.output, "Write JSON lines here instead of stdout");
  app.add_option("--instances", flags.instances,
                 "Engine instances sharing the weights, one worker thread each (0: 1 on cpu, 2 "
                 "on cuda)")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  app.add_option("--policy", flags.policy,
                 "Batching policy: naive, dynamic, continuous or adaptive")
      ->capture_default_str();
  app.add_option("--batch-size", flags.batch_size,
                 "Most " + unit + " per forward pass (fewer run when fewer are ready)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
}

}  // namespace mogserve::cli
