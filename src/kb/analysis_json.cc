// The JSON form of an analysis (`analyze --json`; the contract names are kept).
#include "kb/analysis.h"

namespace gputriage::kb {

using core::Json;

Json GpuSignatureJson(const forensics::GpuSignature& g) {
  Json versions = Json::object();
  for (const auto& [name, version] : g.versions) versions[name] = version;
  return {{"key", g.Key()},
          {"error", g.error.empty() ? Json(nullptr) : Json(g.error)},
          {"error_category", g.error_category ? Json(core::CategoryName(*g.error_category)) : Json(nullptr)},
          {"kernel", g.kernel.empty() ? Json(nullptr) : Json(g.kernel)},
          {"archs", g.archs},
          {"versions", versions}};
}

Json ToJson(const Analysis& a) {
  Json matches = Json::array();
  for (const IssueMatch& m : a.matches) {
    const KnownIssue& i = *m.issue;
    Json refs = Json::array();
    for (const Reference& r : i.references) refs.push_back(r.url);
    Json fixes = Json::array();
    for (const Fix& f : i.fixes) fixes.push_back({{"kind", f.kind}, {"action", f.action}, {"cost", f.cost}});
    Json evidence = Json::array();
    for (const Hit& h : m.hits) {
      const Signal& s = i.signals[h.signal];
      evidence.push_back({{"input", h.input},
                          {"line_number", h.line_number},
                          {"line", h.line},
                          {"source", SourceName(s.source)},
                          {"pattern", s.pattern},
                          {"required", s.required}});
    }
    matches.push_back({{"id", i.id},
                       {"title", i.title},
                       {"category", core::CategoryName(i.category)},
                       {"verdict", core::VerdictName(i.verdict)},
                       {"score", m.score},
                       {"fix", i.fixes.empty() ? "" : i.fixes.front().action},
                       {"fixes", fixes},
                       {"explanation", i.explanation},
                       {"references", refs},
                       {"evidence", evidence},
                       {"conditions", m.condition_notes}});
  }
  Json gpu = nullptr;
  if (a.gpu) {
    Json candidates = Json::array(), attributions = Json::array(), errors = Json::array(), in_progress = Json::array();
    for (const auto& c : a.gpu->candidates) candidates.push_back(core::ToJson(c));
    for (const auto& c : a.gpu->in_progress) in_progress.push_back(core::ToJson(c));
    for (const auto& t : a.gpu->attributions) attributions.push_back(core::ToJson(t));
    for (const auto& e : a.gpu->errors) errors.push_back(core::ToJson(e));
    gpu = {{"kernel", a.gpu->kernel ? Json(*a.gpu->kernel) : Json(nullptr)},
           {"location", a.gpu->location ? Json(*a.gpu->location) : Json(nullptr)},
           {"escalation", a.gpu->escalation_summary},
           {"candidates", candidates},
           {"in_progress", in_progress},
           {"fault_addresses", attributions},
           {"failed_calls", errors}};
  }
  return Json{{"source", a.source},
              {"category", core::CategoryName(a.category)},
              {"confidence", a.confidence},
              {"verdict", core::VerdictName(a.verdict)},
              {"verdict_reasons", a.verdict_reasons},
              {"known_issue_matched", !a.matches.empty()},
              {"matches", matches},
              {"evidence", a.evidence},
              {"next_steps", a.next_steps},
              {"signature", a.signature},
              {"gpu_signature", GpuSignatureJson(a.gpu_signature)},
              {"group_key", a.group_key},
              {"xids", a.xids},
              {"vm_faults", a.vm_faults},
              {"python_fault", a.python_fault ? ToJson(*a.python_fault) : core::Json(nullptr)},
              {"aca_banks", a.aca_banks},
              {"search_links", a.search_links},
              {"gpu", gpu},
              {"library_findings", a.library_findings},
              {"collective_findings", a.collective_findings},
              {"input",
               {{"bytes", a.stats.bytes},
                {"lines", a.stats.lines},
                {"cut_lines", a.stats.cut_lines},
                {"compression", a.stats.compression}}}};
}

}  // namespace gputriage::kb
