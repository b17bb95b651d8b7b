#include "kforge/target/target.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <utility>

#include "registry.h"

namespace kforge {
namespace {

constexpr std::array<std::pair<Vendor, std::string_view>, 5> kVendors = {{
    {Vendor::kNvidia, "nvidia"},
    {Vendor::kAmd, "amd"},
    {Vendor::kIntel, "intel"},
    {Vendor::kApple, "apple"},
    {Vendor::kCpu, "cpu"},
}};

// Known products and their architecture numbers.
struct KnownDevice {
  Vendor vendor;
  std::string_view name;
  int arch;
};
constexpr std::array<KnownDevice, 14> kKnownDevices = {{
    {Vendor::kNvidia, "a100", 80},   {Vendor::kNvidia, "l40s", 89},  {Vendor::kNvidia, "h100", 90},
    {Vendor::kNvidia, "h200", 90},   {Vendor::kNvidia, "b200", 100}, {Vendor::kNvidia, "gb200", 100},
    {Vendor::kAmd, "mi250", 0x90a},  {Vendor::kAmd, "mi250x", 0x90a}, {Vendor::kAmd, "mi300x", 0x942},
    {Vendor::kAmd, "mi325x", 0x942}, {Vendor::kIntel, "b580", 0},    {Vendor::kIntel, "pvc", 0},
    {Vendor::kApple, "m3", 0},       {Vendor::kApple, "m4", 0},
}};

std::string VendorNames() {
  std::vector<std::string_view> names;
  for (const auto& [value, name] : kVendors) names.push_back(name);
  return fmt::format("{}", fmt::join(names, ", "));
}

std::string ModelNames() {
  std::vector<std::string_view> names;
  for (const RegisteredModel& m : RegisteredModels()) names.push_back(m.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

bool IsLowerAlnum(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  });
}

// "sm90" -> 90, "gfx942" -> 0x942, product names via kKnownDevices; -1 if the string is not an
// architecture and not a known product (allowed: it just pins nothing).
int ArchOf(Vendor vendor, std::string_view device) {
  if (vendor == Vendor::kNvidia && device.starts_with("sm")) {
    int value = 0;
    auto digits = device.substr(2);
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec == std::errc() && ptr == digits.data() + digits.size()) return value;
  }
  if (vendor == Vendor::kAmd && device.starts_with("gfx")) {
    int value = 0;
    auto digits = device.substr(3);
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value, 16);
    if (ec == std::errc() && ptr == digits.data() + digits.size()) return value;
  }
  for (const auto& known : kKnownDevices) {
    if (known.vendor == vendor && known.name == device) return known.arch;
  }
  return -1;
}

}  // namespace

std::string_view VendorName(Vendor vendor) {
  for (const auto& [v, name] : kVendors) {
    if (v == vendor) return name;
  }
  return "?";
}

std::string_view ProgrammingModelName(ProgrammingModel model) { return RegistryEntry(model).name; }

const std::vector<ProgrammingModel>& AllProgrammingModels() {
  static const std::vector<ProgrammingModel> all = [] {
    std::vector<ProgrammingModel> v;
    for (const RegisteredModel& m : RegisteredModels()) v.push_back(m.model);
    return v;
  }();
  return all;
}

std::vector<ProgrammingModel> ModelsOf(Vendor vendor) {
  std::vector<ProgrammingModel> models;
  for (const RegisteredModel& m : RegisteredModels()) {
    if (std::find(m.vendors.begin(), m.vendors.end(), vendor) != m.vendors.end()) {
      models.push_back(m.model);
    }
  }
  return models;
}

std::vector<Target> AllTargets() {
  std::vector<Target> all;
  for (const auto& [vendor, name] : kVendors) {
    for (ProgrammingModel model : ModelsOf(vendor)) {
      all.push_back(Target{.vendor = vendor, .device = "", .model = model, .arch = 0});
    }
  }
  return all;
}

Result<Target> Target::Parse(std::string_view text) {
  const std::string hint =
      "a target is vendor[-device]/model, e.g. nvidia-h200/cuda, nvidia/triton, cpu/opencl; "
      "run `kforge targets` for the list";
  std::size_t slash = text.find('/');
  if (slash == std::string_view::npos || text.find('/', slash + 1) != std::string_view::npos) {
    return InvalidArgument(fmt::format("bad target '{}': {}", text, hint));
  }
  std::string_view platform = text.substr(0, slash);
  std::string_view model_name = text.substr(slash + 1);
  std::string_view vendor_name = platform.substr(0, platform.find('-'));
  std::string_view device =
      platform.find('-') == std::string_view::npos ? "" : platform.substr(platform.find('-') + 1);

  Target t;
  auto vendor_it = std::find_if(kVendors.begin(), kVendors.end(),
                                [&](const auto& v) { return v.second == vendor_name; });
  if (vendor_it == kVendors.end()) {
    return InvalidArgument(fmt::format("bad target '{}': unknown vendor '{}' (known: {})", text,
                                       vendor_name, VendorNames()));
  }
  t.vendor = vendor_it->first;
  const auto& models = RegisteredModels();
  auto model_it = std::find_if(models.begin(), models.end(),
                               [&](const RegisteredModel& m) { return m.name == model_name; });
  if (model_it == models.end()) {
    return InvalidArgument(
        fmt::format("bad target '{}': unknown programming model '{}' (known: {})", text, model_name,
                    ModelNames()));
  }
  t.model = model_it->model;
  auto allowed = ModelsOf(t.vendor);
  if (std::find(allowed.begin(), allowed.end(), t.model) == allowed.end()) {
    std::vector<std::string_view> names;
    for (auto m : allowed) names.push_back(ProgrammingModelName(m));
    return InvalidArgument(fmt::format("bad target '{}': {} does not support {} (it supports: {})",
                                       text, vendor_name, model_name, fmt::join(names, ", ")));
  }
  if (platform.find('-') != std::string_view::npos && !IsLowerAlnum(device)) {
    return InvalidArgument(fmt::format(
        "bad target '{}': the device must be lower-case letters and digits, e.g. h200 or sm90",
        text));
  }
  t.device = std::string(device);
  if (t.vendor == Vendor::kCpu && !t.device.empty()) {
    return InvalidArgument(fmt::format("bad target '{}': cpu targets take no device ({})", text,
                                       "use cpu/opencl or cpu/cpp"));
  }
  int arch = t.device.empty() ? 0 : ArchOf(t.vendor, t.device);
  t.arch = arch < 0 ? 0 : arch;
  return t;
}

std::string Target::ToString() const {
  std::string platform(VendorName(vendor));
  if (!device.empty()) platform += "-" + device;
  return fmt::format("{}/{}", platform, ProgrammingModelName(model));
}

}  // namespace kforge
