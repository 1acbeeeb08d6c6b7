#include "report/markdown_html.h"

#include <md4c-html.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>
#include <vector>

namespace gputriage::report {
namespace {

struct Attribute {
  std::string name;
  std::optional<std::string> value;  ///< as md4c wrote it (escaped); nullopt: a boolean attribute
};

struct Tag {
  std::string name;
  bool closing = false;
  std::vector<Attribute> attributes;

  const std::optional<std::string>* Find(std::string_view attribute) const {
    for (const Attribute& a : attributes) {
      if (a.name == attribute) return &a.value;
    }
    return nullptr;
  }
};

bool IsNameChar(char c) {
  return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-';
}

// The tag in `html` from `at` (a '<') to its '>' (md4c escapes '<', '>' and '"' in text and
// attribute values, so the first '>' ends it); nullopt when it is not a plain tag.
std::optional<Tag> ParseTag(std::string_view html, size_t at, size_t* end) {
  size_t i = at + 1;
  Tag tag;
  if (i < html.size() && html[i] == '/') {
    tag.closing = true;
    ++i;
  }
  while (i < html.size() && IsNameChar(html[i])) tag.name.push_back(html[i++]);
  if (tag.name.empty()) return std::nullopt;
  while (i < html.size()) {
    if (html[i] == '>') {
      *end = i + 1;
      return tag;
    }
    if (html[i] != ' ' || tag.closing) return std::nullopt;
    ++i;
    Attribute a;
    while (i < html.size() && IsNameChar(html[i])) a.name.push_back(html[i++]);
    if (a.name.empty()) return std::nullopt;
    if (i < html.size() && html[i] == '=') {
      if (i + 1 >= html.size() || html[i + 1] != '"') return std::nullopt;
      size_t close = html.find('"', i + 2);
      if (close == std::string_view::npos) return std::nullopt;
      std::string value(html.substr(i + 2, close - i - 2));
      if (value.find_first_of("<>") != std::string::npos) return std::nullopt;
      a.value = std::move(value);
      i = close + 1;
    }
    tag.attributes.push_back(std::move(a));
  }
  return std::nullopt;
}

// The tags md4c writes for the flags used, each with the attributes it may carry.
struct Allowed {
  std::string_view tag;
  std::array<std::string_view, 4> attributes;
};
constexpr std::array<Allowed, 26> kAllowed = {{
    {"p", {}},          {"h1", {}},
    {"h2", {}},         {"h3", {}},
    {"h4", {}},         {"h5", {}},
    {"h6", {}},         {"ul", {}},
    {"ol", {"start"}},  {"li", {"class"}},
    {"blockquote", {}}, {"pre", {}},
    {"code", {}},       {"em", {}},
    {"strong", {}},     {"del", {}},
    {"u", {}},          {"hr", {}},
    {"br", {}},         {"table", {}},
    {"thead", {}},      {"tbody", {}},
    {"tr", {}},         {"th", {"align"}},
    {"td", {"align"}},  {"a", {"href", "title"}},
}};

bool AllCharsIn(std::string_view value, std::string_view extra) {
  return std::all_of(value.begin(), value.end(), [&](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || extra.find(c) != std::string_view::npos;
  });
}

// Only plain values: a class is words, start a number, align a word.
bool ValueAllowed(std::string_view attribute, const std::optional<std::string>& value) {
  if (attribute == "href" || attribute == "title" || attribute == "alt" || attribute == "src") return value.has_value();
  if (!value) return attribute == "disabled" || attribute == "checked";
  if (attribute == "class") return AllCharsIn(*value, " _-");
  if (attribute == "start") return AllCharsIn(*value, "");
  if (attribute == "align") return *value == "left" || *value == "center" || *value == "right";
  if (attribute == "type") return *value == "checkbox";
  return false;
}

// The URL a browser would follow: md4c's escapes undone ("&amp;" and the like).
std::string Unescape(std::string_view value) {
  static constexpr std::pair<std::string_view, char> kEntities[] = {
      {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&#39;", '\''}};
  std::string out;
  for (size_t i = 0; i < value.size();) {
    bool replaced = false;
    for (const auto& [entity, c] : kEntities) {
      if (value.substr(i, entity.size()) == entity) {
        out.push_back(c);
        i += entity.size();
        replaced = true;
        break;
      }
    }
    if (!replaced) out.push_back(value[i++]);
  }
  return out;
}

bool SafeLinkTarget(std::string_view escaped) {
  std::string url = Unescape(escaped);
  for (char& c : url) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return url.starts_with("http://") || url.starts_with("https://") || url.starts_with("mailto:");
}

std::string Render(const Tag& tag) {
  std::string out = tag.closing ? "</" + tag.name : "<" + tag.name;
  for (const Attribute& a : tag.attributes) {
    out += " " + a.name;
    if (a.value) out += "=\"" + *a.value + "\"";
  }
  return out + ">";
}

bool TagAllowed(const Tag& tag) {
  auto it = std::find_if(kAllowed.begin(), kAllowed.end(), [&](const Allowed& a) { return a.tag == tag.name; });
  if (it == kAllowed.end()) return false;
  return std::all_of(tag.attributes.begin(), tag.attributes.end(), [&](const Attribute& a) {
    return std::find(it->attributes.begin(), it->attributes.end(), a.name) != it->attributes.end() &&
           ValueAllowed(a.name, a.value);
  });
}

bool IsVoid(std::string_view tag) { return tag == "hr" || tag == "br" || tag == "input"; }

// The elements open in the output, each as md4c named it and as it was written ("a" written as
// "span" when its target was removed). md4c 0.4.8 can close an element it did not open (a bare
// URL autolinked inside emphasis: "*a http://x/*" gives "</em>" alone): such a closing tag is
// dropped, one that closes an outer element closes the inner ones first, and what is left open
// at the end is closed, so the page's elements always nest.
class OpenElements {
 public:
  void Open(std::string source, std::string written) { open_.push_back({std::move(source), std::move(written)}); }
  // The closing tags for `source`'s element and those inside it; "" when it is not open.
  std::string Close(std::string_view source) {
    auto it = std::find_if(open_.rbegin(), open_.rend(), [&](const auto& e) { return e.first == source; });
    if (it == open_.rend()) return "";
    std::string out;
    for (size_t n = static_cast<size_t>(it - open_.rbegin()) + 1; n > 0; --n) {
      out += "</" + open_.back().second + ">";
      open_.pop_back();
    }
    return out;
  }
  std::string CloseAll() {
    std::string out;
    for (; !open_.empty(); open_.pop_back()) out += "</" + open_.back().second + ">";
    return out;
  }

 private:
  std::vector<std::pair<std::string, std::string>> open_;
};

// md4c's output with links checked, images as text, every tag checked and the elements nested;
// nullopt when a tag is not one md4c writes.
std::optional<std::string> Filter(std::string_view html) {
  std::string out;
  out.reserve(html.size() + html.size() / 8);
  OpenElements open;
  size_t i = 0;
  while (i < html.size()) {
    size_t lt = html.find('<', i);
    out.append(html.substr(i, lt == std::string_view::npos ? std::string_view::npos : lt - i));
    if (lt == std::string_view::npos) break;
    size_t end = 0;
    std::optional<Tag> tag = ParseTag(html, lt, &end);
    if (!tag) return std::nullopt;
    i = end;
    if (tag->name == "img" && !tag->closing) {
      const std::optional<std::string>* alt = tag->Find("alt");
      if (!std::all_of(tag->attributes.begin(), tag->attributes.end(),
                       [](const Attribute& a) { return ValueAllowed(a.name, a.value); })) {
        return std::nullopt;
      }
      out += "<span class=\"image-removed\">[image";
      if (alt && *alt && !(*alt)->empty()) out += ": " + **alt;
      out += "]</span>";
      continue;
    }
    if (tag->name == "input" && !tag->closing) {
      const std::optional<std::string>* type = tag->Find("type");
      if (!type || !*type || **type != "checkbox") return std::nullopt;
      for (const Attribute& a : tag->attributes) {
        if ((a.name != "type" && a.name != "class" && a.name != "disabled" && a.name != "checked") ||
            !ValueAllowed(a.name, a.value)) {
          return std::nullopt;
        }
      }
      out += Render(*tag);
      continue;
    }
    // A fenced block's info string ("```python") becomes code's class: not needed, and any text.
    if (tag->name == "code") tag->attributes.clear();
    if (!TagAllowed(*tag)) return std::nullopt;
    if (tag->closing) {
      out += open.Close(tag->name);
      continue;
    }
    if (tag->name == "a") {
      const std::optional<std::string>* href = tag->Find("href");
      if (!href || !*href || !SafeLinkTarget(**href)) {
        open.Open("a", "span");
        out += "<span class=\"link-removed\">";
        continue;
      }
      tag->attributes.push_back({"rel", "nofollow noopener noreferrer"});
    }
    if (!IsVoid(tag->name)) open.Open(tag->name, tag->name);
    out += Render(*tag);
  }
  return out + open.CloseAll();
}

void Append(const MD_CHAR* text, MD_SIZE size, void* userdata) {
  static_cast<std::string*>(userdata)->append(text, size);
}

}  // namespace

std::optional<std::string> MarkdownToSafeHtml(std::string_view markdown) {
  std::string html;
  const unsigned flags = MD_FLAG_NOHTML | MD_FLAG_TASKLISTS | MD_FLAG_PERMISSIVEURLAUTOLINKS | MD_FLAG_TABLES;
  if (md_html(markdown.data(), static_cast<MD_SIZE>(markdown.size()), Append, &html, flags, 0) != 0) {
    return std::nullopt;
  }
  return Filter(html);
}

}  // namespace gputriage::report
