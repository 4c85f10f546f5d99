// `sdpa-cts probe [--device cuda] [--json FILE]`: the fragment probe (docs/KERNELS.md, "The
// fragment probe"). On a GPU: every case's registers from the GPU against the emulator's, bit
// for bit (layout cases), and which rounding model the GPU's mma.sync follows (rounding
// cases). On an emulated GPU: the emulator's words alone, what a GPU must give.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "core/device.hpp"
#include "kernels/cuda/probe/fragment_probe.hpp"

namespace sdpa::cli {

namespace {

namespace probe = sdpa::cuda::probe;

struct Options {
  std::string device = "cuda";
  std::string json;
};

// The rounding models a GPU's result is compared with: the ideal one and every measured one
// (distinct block / extra-bit pairs of measured_mma_rounding), named by their architectures.
struct Model {
  std::string name;
  MmaRounding rounding;
};
std::vector<Model> rounding_models() {
  std::vector<Model> models = {{"ideal (one rounding to nearest)", MmaRounding{}}};
  for (int sm = 30; sm < 200; ++sm) {
    const auto m = measured_mma_rounding(sm);
    if (!m) continue;
    bool merged = false;
    for (Model& x : models) {
      if (x.rounding.block == m->block && x.rounding.extra_bits == m->extra_bits) {
        x.name += ", " + sm_name(sm);
        merged = true;
      }
    }
    if (!merged) {
      models.push_back({"measured " + std::to_string(m->block) + " products / " +
                            std::to_string(m->extra_bits) + " extra bits: " + sm_name(sm),
                        *m});
    }
  }
  return models;
}

nlohmann::json words_json(const probe::ProbeWords& w) {
  nlohmann::json a = nlohmann::json::array();
  for (std::uint32_t x : w) a.push_back(x);
  return a;
}

int run(const Options& o) {
  const auto parsed = parse_device(o.device);
  if (const auto* err = std::get_if<std::string>(&parsed)) {
    std::cerr << "sdpa-cts: --device: " << *err << "\n";
    return 2;
  }
  const Device& device = std::get<Device>(parsed);
  if (device.kind != DeviceKind::cuda || (device.simulated && !device.cuda.emulated)) {
    std::cerr << "sdpa-cts: --device: the probe runs on a GPU (cuda) or an emulated one "
                 "(smNN:emulate=1), not on '"
              << device.name << "'\n";
    return 2;
  }
  const bool gpu = !device.simulated;
  const std::vector<Model> models = rounding_models();
  nlohmann::json out = {{"device", describe_device(device)}, {"cases", nlohmann::json::array()}};
  int status = 0;
  std::cout << describe_device(device) << "\n";
  for (const probe::ProbeCase& c : probe::probe_cases()) {
    nlohmann::json rec = {{"case", c.name}, {"what", c.what}};
    if (!gpu) {
      const probe::ProbeWords emu = probe::run_emulated(c, device.cuda.mma);
      rec["emulator"] = words_json(emu);
      char line[64];
      std::snprintf(line, sizeof line, "lane 0 mma n0-7 c0 = 0x%08x",
                    static_cast<unsigned>(emu[8]));
      std::cout << c.name << ": emulated (" << c.what << "), " << line << "\n";
      out["cases"].push_back(rec);
      continue;
    }
    probe::ProbeWords on_gpu;
    try {
      on_gpu = probe::run_on_gpu(c);
    } catch (const std::exception& e) {
      std::cerr << "sdpa-cts: " << e.what() << "\n";
      return 1;
    }
    rec["gpu"] = words_json(on_gpu);
    if (c.layout) {
      const auto diff = probe::differences(on_gpu, probe::run_emulated(c, MmaRounding{}), 8);
      rec["matches_emulator"] = diff.empty();
      if (diff.empty()) {
        std::cout << c.name << ": the GPU's " << on_gpu.size()
                  << " words match the emulator's bit for bit\n";
      } else {
        status = 1;
        std::cout << c.name << ": MISMATCH (GPU vs emulator):\n";
        for (const auto& d : diff) std::cout << "  " << d << "\n";
      }
    } else {
      std::vector<std::string> matching;
      for (const Model& m : models) {
        if (probe::differences(on_gpu, probe::run_emulated(c, m.rounding), 1).empty()) {
          matching.push_back(m.name);
        }
      }
      rec["matching_models"] = matching;
      std::cout << c.name << ": ";
      if (matching.empty()) {
        status = 1;
        std::cout << "matches NO model of the emulator (" << c.what << ")\n";
      } else {
        for (std::size_t i = 0; i < matching.size(); ++i) {
          std::cout << (i ? "; " : "matches ") << matching[i];
        }
        std::cout << "\n";
      }
    }
    out["cases"].push_back(rec);
  }
  if (gpu) {
    const auto expected = measured_mma_rounding(device.cuda.sm);
    std::cout << "published model for " << sm_name(device.cuda.sm) << ": "
              << (expected ? expected->basis : std::string("none")) << "\n";
  }
  if (!o.json.empty()) {
    std::ofstream f(o.json);
    f << out.dump(1) << "\n";
    if (!f) {
      std::cerr << "sdpa-cts: --json: cannot write " << o.json << "\n";
      return 2;
    }
  }
  return status;
}

}  // namespace

Command add_probe_command(CLI::App& parent) {
  auto opt = std::make_shared<Options>();
  auto* cmd = parent.add_subcommand(
      "probe",
      "The fragment probe: one warp's ldmatrix and mma.sync on the GPU against the emulator, "
      "bit for bit, and the GPU's mma rounding model");
  cmd->add_option("--device", opt->device,
                  "cuda (the GPU against the emulator) or smNN:emulate=1 (the emulator's words)")
      ->capture_default_str();
  cmd->add_option("--json", opt->json, "Write every case's words to this JSON file");
  return {cmd, [opt] { return run(*opt); }};
}

}  // namespace sdpa::cli
