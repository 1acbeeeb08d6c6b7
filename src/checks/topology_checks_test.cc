// doctor's topology checks on topologies read from real `nvidia-smi topo -m` and
// `nvidia-smi nvlink -s` captures (tests/fixtures/nvidia), with the P2P answers or link states the
// case needs set on top.
#include "checks/topology_checks.h"

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "capture_tree.h"
#include "core/text.h"

namespace gputriage::checks {
namespace {

using core::Json;

std::string Trim(std::string_view text) { return std::string(core::Trim(text)); }

// The GPU-to-GPU cells of `nvidia-smi topo -m`: {row GPU, column GPU} -> "NV18", "PIX", ...
// GPUs are named as the matrix names them ("GPU0"), standing for their PCI addresses.
std::map<std::pair<std::string, std::string>, std::string> TopoMatrixGpuCells(const std::string& text) {
  std::map<std::pair<std::string, std::string>, std::string> cells;
  std::vector<std::string> columns;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> fields;
    for (std::string_view field : core::Split(line, '\t')) fields.push_back(Trim(field));
    if (fields.size() < 2) continue;
    if (columns.empty()) {
      if (fields[0].empty() && fields[1] == "GPU0") columns = fields;
      continue;
    }
    if (!std::regex_match(fields[0], std::regex("GPU[0-9]+"))) continue;
    for (size_t i = 1; i < fields.size() && i < columns.size(); ++i) {
      if (columns[i].starts_with("GPU") && fields[i] != "X") cells[{fields[0], columns[i]}] = fields[i];
    }
  }
  return cells;
}

// A snapshot with the matrix's GPUs and one peer per pair; every pair gets `p2p`.
Json SnapshotFromMatrix(const std::string& fixture, const Json& p2p) {
  Json gpus = Json::array();
  Json peers = Json::array();
  std::set<std::string> names;
  for (const auto& [pair, path] : TopoMatrixGpuCells(gputriage::testing::ReadCapture(fixture))) {
    names.insert(pair.first);
    if (pair.first >= pair.second) continue;
    peers.push_back(Json{{"a", pair.first}, {"b", pair.second}, {"path", path}, {"p2p", p2p}, {"source", "nvml"}});
  }
  for (const std::string& name : names) gpus.push_back(Json{{"vendor", "nvidia"}, {"pci_address", name}});
  return Json{{"gpus", gpus}, {"topology", {{"peers", peers}}}};
}

std::vector<core::Finding> Check(const Json& snapshot) {
  std::vector<core::Finding> out;
  CheckTopology(core::SnapshotFromJsonUnchecked(snapshot), out);
  return out;
}

TEST(TopologyChecks, H100BoardWithPeerAccessEverywhereIsQuiet) {
  Json snapshot = SnapshotFromMatrix("nvidia/nvidia-smi-topo-m-8x-h100-nv18-6nic-empty-cpu-affinity.txt",
                                     {{"read", "ok"}, {"write", "ok"}});
  ASSERT_EQ(snapshot["topology"]["peers"].size(), 28u);  // 8 GPUs, every pair once
  for (const Json& peer : snapshot["topology"]["peers"]) EXPECT_EQ(peer["path"], "NV18");
  EXPECT_TRUE(Check(snapshot).empty());
}

TEST(TopologyChecks, NvLinkedPairWithoutPeerAccessIsAWarning) {
  Json snapshot = SnapshotFromMatrix("nvidia/nvidia-smi-topo-m-8x-a100-nv12-4nic-gpu-numa-id-nic-legend.txt",
                                     {{"read", "ok"}, {"write", "ok"}});
  for (Json& peer : snapshot["topology"]["peers"]) {
    if (peer["a"] == "GPU0" && peer["b"] == "GPU1") peer["p2p"] = Json{{"read", "disabled_by_regkey"}, {"write", "ok"}};
  }
  std::vector<core::Finding> findings = Check(snapshot);
  ASSERT_EQ(findings.size(), 1u);
  const core::Finding& f = findings[0];
  EXPECT_EQ(f.id, "topology.p2p_unavailable");
  EXPECT_EQ(f.severity, core::Severity::kWarning);
  EXPECT_NE(f.title.find("GPU0 (GPU) and GPU1 (GPU) cannot reach each other peer to peer (path NV12)"),
            std::string::npos)
      << f.title;
  EXPECT_NE(f.title.find("read disabled_by_regkey"), std::string::npos) << f.title;
  EXPECT_NE(f.detail.find("registry key"), std::string::npos) << f.detail;
  EXPECT_EQ(f.evidence[0].text, "read: disabled_by_regkey, write: ok");
}

TEST(TopologyChecks, OnlyPairsThatShouldHavePeerAccessAreFlagged) {
  Json gpus = Json::array({Json{{"pci_address", "0000:3b:00.0"}, {"vendor", "nvidia"}},
                           Json{{"pci_address", "0000:5e:00.0"}, {"vendor", "nvidia"}},
                           Json{{"pci_address", "0000:af:00.0"}, {"vendor", "nvidia"}}});
  Json refused{{"read", "chipset_not_supported"}, {"write", "chipset_not_supported"}};
  Json peers = Json::array(
      {Json{{"a", "0000:3b:00.0"}, {"b", "0000:5e:00.0"}, {"path", "PXB"}, {"pcie_path", "PXB"}, {"p2p", refused}},
       // Across the CPU sockets peer access is often refused by design: no finding.
       Json{{"a", "0000:3b:00.0"}, {"b", "0000:af:00.0"}, {"path", "SYS"}, {"p2p", refused}},
       Json{{"a", "0000:5e:00.0"}, {"b", "0000:af:00.0"}, {"path", "NODE"}, {"p2p", refused}}});
  std::vector<core::Finding> findings = Check(Json{{"gpus", gpus}, {"topology", {{"peers", peers}}}});
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_NE(findings[0].title.find(
                "0000:3b:00.0 (GPU) and 0000:5e:00.0 (GPU) cannot reach each other peer to peer (path PXB)"),
            std::string::npos)
      << findings[0].title;
  EXPECT_NE(findings[0].detail.find("platform"), std::string::npos);
  EXPECT_EQ(findings[0].evidence[1].text, "PXB (PCIe: PXB)");
}

// `nvidia-smi nvlink -s` lines ("Link 3: 25 GB/s", "Link 3: <inactive>") as NVML's link states.
Json LinksFromNvlinkStatus(const std::string& text) {
  Json links = Json::array();
  std::regex line(R"(^\s*Link (\d+): (.*)$)");
  std::istringstream in(text);
  std::string row;
  std::smatch m;
  while (std::getline(in, row)) {
    if (!std::regex_match(row, m, line)) continue;
    links.push_back(Json{{"link", std::stoi(m[1])}, {"active", Trim(m[2].str()) != "<inactive>"}});
  }
  return links;
}

TEST(TopologyChecks, SomeNvLinksDownIsAWarningAllDownIsNot) {
  Json links = LinksFromNvlinkStatus(
      gputriage::testing::ReadCapture("nvidia/nvidia-smi-nvlink-s-i0-a100-sxm4-12-links-tab-space-indent.txt"));
  ASSERT_EQ(links.size(), 12u);
  Json gpu{{"vendor", "nvidia"}, {"pci_address", "0000:07:00.0"}, {"nvidia", {{"nvlink", links}}}};
  EXPECT_TRUE(Check(Json{{"gpus", {gpu}}}).empty());

  gpu["nvidia"]["nvlink"][3]["active"] = false;
  gpu["nvidia"]["nvlink"][7]["active"] = false;
  std::vector<core::Finding> findings = Check(Json{{"gpus", {gpu}}});
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].id, "nvidia.nvlink_down");
  EXPECT_NE(findings[0].title.find("2 of 12 NVLinks"), std::string::npos) << findings[0].title;
  EXPECT_NE(findings[0].title.find("links 3, 7"), std::string::npos) << findings[0].title;

  // A card without its bridge: every link inactive, which NVML reports as such and is no fault.
  for (Json& link : gpu["nvidia"]["nvlink"]) link["active"] = false;
  EXPECT_TRUE(Check(Json{{"gpus", {gpu}}}).empty());
}

}  // namespace
}  // namespace gputriage::checks
