#include "tests/support/golden.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace uroce::test {

std::string golden_dir() {
  const char* env = std::getenv("UROCE_GOLDEN_DIR");
  std::string dir = env ? env : UROCE_GOLDEN_DIR;
  return std::filesystem::exists(dir + "/icrc_vectors.json") ? dir : std::string();
}

std::vector<uint8_t> from_hex(const std::string& hex) {
  if (hex.size() % 2) throw std::invalid_argument("odd-length hex string");
  std::vector<uint8_t> out(hex.size() / 2);
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<uint8_t>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
  return out;
}

std::vector<IcrcVector> load_icrc_vectors() {
  const std::string path = golden_dir() + "/icrc_vectors.json";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  const auto doc = nlohmann::json::parse(in);
  std::vector<IcrcVector> out;
  for (const auto& v : doc.at("vectors")) {
    IcrcVector iv;
    iv.id = v.at("id");
    iv.kind = v.at("kind");
    iv.opcode = v.at("opcode");
    iv.opname = v.at("opname");
    iv.psn = v.at("psn");
    iv.dqpn = v.at("dqpn");
    iv.frame = from_hex(v.at("frame_hex"));
    iv.expected_icrc =
        static_cast<uint32_t>(std::stoul(v.at("expected_icrc_crc32_value").get<std::string>(), nullptr, 16));
    iv.icrc_input = from_hex(v.at("icrc_input_hex"));
    out.push_back(std::move(iv));
  }
  return out;
}

}  // namespace uroce::test
