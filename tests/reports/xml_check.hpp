// A tiny, strict XML 1.0 well-formedness checker and reader for the report tests: elements,
// attributes (decoded), character data (decoded), comments, an XML declaration and a
// <!DOCTYPE name> without internal subset. Anything else (CDATA, processing instructions in the
// body, unknown entities, a bare '&' or '<', mismatched or unclosed tags, duplicate attributes,
// characters XML forbids, invalid UTF-8) is an error that names the byte offset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace sdpa::testing {

struct XmlNode {
  std::string name;
  std::map<std::string, std::string> attrs;
  std::vector<XmlNode> children;
  std::string text;  // concatenated character data directly inside this element

  // Every descendant (and this node) named `n`, in document order.
  std::vector<const XmlNode*> find_all(std::string_view n) const {
    std::vector<const XmlNode*> out;
    std::function<void(const XmlNode&)> walk = [&](const XmlNode& x) {
      if (x.name == n) out.push_back(&x);
      for (const auto& c : x.children) walk(c);
    };
    walk(*this);
    return out;
  }
  const XmlNode* child(std::string_view n) const {
    for (const auto& c : children) {
      if (c.name == n) return &c;
    }
    return nullptr;
  }
  std::string attr(const std::string& n) const {
    auto it = attrs.find(n);
    if (it == attrs.end()) throw std::runtime_error("<" + name + "> has no attribute " + n);
    return it->second;
  }
};

class XmlReader {
 public:
  // Parses a whole document; returns its root element or throws std::runtime_error.
  static XmlNode parse(std::string_view doc) {
    XmlReader r(doc);
    return r.document();
  }

 private:
  explicit XmlReader(std::string_view s) : s_(s) {}

  std::string_view s_;
  std::size_t i_ = 0;

  [[noreturn]] void error(const std::string& what) const {
    std::size_t from = i_ > 30 ? i_ - 30 : 0;
    throw std::runtime_error("XML error at byte " + std::to_string(i_) + ": " + what + " (near '" +
                             std::string(s_.substr(from, 60)) + "')");
  }
  bool at_end() const { return i_ >= s_.size(); }
  bool starts(std::string_view p) const { return s_.substr(i_, p.size()) == p; }
  void expect(std::string_view p) {
    if (!starts(p)) error("expected '" + std::string(p) + "'");
    i_ += p.size();
  }
  void skip_space() {
    while (!at_end() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) {
      ++i_;
    }
  }
  static bool name_char(char c, bool first) {
    unsigned char u = static_cast<unsigned char>(c);
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || u >= 0x80) {
      return true;
    }
    return !first && ((c >= '0' && c <= '9') || c == '-' || c == '.');
  }
  std::string name() {
    std::size_t b = i_;
    if (at_end() || !name_char(s_[i_], true)) error("expected a name");
    while (!at_end() && name_char(s_[i_], false)) ++i_;
    return std::string(s_.substr(b, i_ - b));
  }

  static void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  static bool allowed(std::uint32_t cp) {
    return cp == 0x9 || cp == 0xA || cp == 0xD || (cp >= 0x20 && cp <= 0xD7FF) ||
           (cp >= 0xE000 && cp <= 0xFFFD) || (cp >= 0x10000 && cp <= 0x10FFFF);
  }

  // One character of data (decoding a reference), appended to out.
  void data_char(std::string& out) {
    char c = s_[i_];
    if (c == '<') error("'<' in character data");
    if (starts("]]>")) error("']]>' in character data");
    if (c == '&') {
      ++i_;
      if (starts("#x") || starts("#")) {
        bool hex = starts("#x");
        i_ += hex ? 2 : 1;
        std::size_t b = i_;
        std::uint32_t cp = 0;
        while (!at_end() && s_[i_] != ';') {
          char d = s_[i_];
          int v = d >= '0' && d <= '9'          ? d - '0'
                  : hex && d >= 'a' && d <= 'f' ? d - 'a' + 10
                  : hex && d >= 'A' && d <= 'F' ? d - 'A' + 10
                                                : -1;
          if (v < 0) error("bad character reference");
          cp = cp * (hex ? 16 : 10) + static_cast<std::uint32_t>(v);
          if (cp > 0x10FFFF) error("character reference out of range");
          ++i_;
        }
        if (i_ == b || at_end()) error("bad character reference");
        ++i_;
        if (!allowed(cp)) error("reference to a character XML forbids");
        append_utf8(out, cp);
        return;
      }
      static const std::pair<std::string_view, char> entities[] = {
          {"lt;", '<'}, {"gt;", '>'}, {"amp;", '&'}, {"quot;", '"'}, {"apos;", '\''}};
      for (const auto& [e, ch] : entities) {
        if (starts(e)) {
          i_ += e.size();
          out += ch;
          return;
        }
      }
      error("unknown or unterminated entity");
    }
    // A literal character: check UTF-8 and the XML character range.
    unsigned char u = static_cast<unsigned char>(c);
    std::size_t len = u < 0x80    ? 1
                      : u > 0xF4  ? 0
                      : u >= 0xF0 ? 4
                      : u >= 0xE0 ? 3
                      : u >= 0xC2 ? 2
                                  : 0;
    if (len == 0 || i_ + len > s_.size()) error("invalid UTF-8");
    std::uint32_t cp = len == 1 ? u : (u & (0xFF >> (len + 1)));
    for (std::size_t k = 1; k < len; ++k) {
      unsigned char n = static_cast<unsigned char>(s_[i_ + k]);
      if ((n & 0xC0) != 0x80) error("invalid UTF-8");
      cp = (cp << 6) | (n & 0x3F);
    }
    if (!allowed(cp)) error("a character XML forbids");
    out.append(s_.substr(i_, len));
    i_ += len;
  }

  void comment() {
    expect("<!--");
    std::size_t end = s_.find("-->", i_);
    if (end == std::string_view::npos) error("unterminated comment");
    if (s_.substr(i_, end - i_).find("--") != std::string_view::npos) error("'--' in a comment");
    i_ = end + 3;
  }

  void misc() {  // comments and white space between top-level constructs
    for (;;) {
      skip_space();
      if (starts("<!--")) {
        comment();
      } else {
        return;
      }
    }
  }

  XmlNode element() {
    expect("<");
    XmlNode n;
    n.name = name();
    for (;;) {
      std::size_t before = i_;
      skip_space();
      if (starts("/>")) {
        i_ += 2;
        return n;
      }
      if (starts(">")) {
        ++i_;
        break;
      }
      if (i_ == before) error("expected white space before an attribute");
      std::string a = name();
      skip_space();
      expect("=");
      skip_space();
      if (at_end() || (s_[i_] != '"' && s_[i_] != '\'')) error("unquoted attribute value");
      char q = s_[i_++];
      std::string v;
      while (!at_end() && s_[i_] != q) data_char(v);
      if (at_end()) error("unterminated attribute value");
      ++i_;
      if (!n.attrs.emplace(a, v).second) error("duplicate attribute " + a);
    }
    for (;;) {
      if (at_end()) error("unclosed <" + n.name + ">");
      if (starts("</")) {
        i_ += 2;
        std::string end = name();
        if (end != n.name) error("</" + end + "> closes <" + n.name + ">");
        skip_space();
        expect(">");
        return n;
      }
      if (starts("<!--")) {
        comment();
      } else if (starts("<![CDATA[") || starts("<?") || starts("<!")) {
        error("unsupported markup");
      } else if (starts("<")) {
        n.children.push_back(element());
      } else {
        data_char(n.text);
      }
    }
  }

  XmlNode document() {
    if (starts("\xEF\xBB\xBF")) i_ += 3;
    if (starts("<?xml")) {
      std::size_t end = s_.find("?>", i_);
      if (end == std::string_view::npos) error("unterminated XML declaration");
      i_ = end + 2;
    }
    misc();
    if (starts("<!DOCTYPE")) {
      i_ += 9;
      skip_space();
      name();
      skip_space();
      expect(">");
    }
    misc();
    XmlNode root = element();
    misc();
    if (!at_end()) error("content after the root element");
    return root;
  }
};

}  // namespace sdpa::testing
