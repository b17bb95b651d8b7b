#include "targets_command.h"
#include "exit_codes.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <future>
#include <memory>

#include "kforge/target/backend.h"
#include "kforge/target/probe.h"

namespace kforge {

void AddTargetsCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "targets", "List every target, whether its toolchain and device are present here, and what "
                 "is missing");
  cmd->footer(ExitCodesFooter("targets"));
  auto json_out = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json_out, "Print JSON instead of a table");
  cmd->callback([json_out] {
    // Probe concurrently: several probes start processes.
    struct Row {
      Target target;
      std::future<Availability> availability;
    };
    std::vector<Row> rows;
    for (const Target& t : AllTargets()) {
      rows.push_back({t, std::async(std::launch::async, [t] { return NewBackend(t)->Probe(); })});
    }
    nlohmann::json out = nlohmann::json::array();
    if (!*json_out) {
      fmt::print("{:<16} {:<10} {:<8} {}\n", "TARGET", "TOOLCHAIN", "DEVICE", "DETAILS");
    }
    for (auto& row : rows) {
      Availability a = row.availability.get();
      std::string name = row.target.ToString();
      if (*json_out) {
        out.push_back({{"target", name},
                       {"toolchain", a.toolchain},
                       {"device", a.device},
                       {"usable", a.usable()},
                       {"toolchain_version", a.toolchain_version},
                       {"missing", a.missing}});
        continue;
      }
      fmt::print("{:<16} {:<10} {:<8} {}\n", name, a.toolchain ? "yes" : "no",
                 a.device ? "yes" : "no", a.usable() ? a.toolchain_version : "");
      for (const auto& m : a.missing) fmt::print("{:<37}missing: {}\n", "", m);
    }
    if (*json_out) fmt::print("{}\n", out.dump(2));
  });
}

}  // namespace kforge
