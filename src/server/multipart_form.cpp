#include "server/multipart_form.h"

#include "server/http/http_message.h"

namespace mogserve::server {
namespace {

constexpr size_t kMaxPartHeaderBytes = 8 << 10;

HttpError Malformed(const std::string& what) {
  return {400, "bad_request", "malformed multipart/form-data body: " + what};
}

std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Reads one `; name=value` parameter list (values as tokens or quoted strings) and calls
// `fn(name, value)` for each. False when a quoted string does not end.
template <typename Fn>
bool ForEachParameter(std::string_view params, Fn fn) {
  while (!params.empty()) {
    const size_t semicolon = params.find(';');
    if (semicolon == std::string_view::npos) return true;
    params.remove_prefix(semicolon + 1);
    const size_t eq = params.find('=');
    if (eq == std::string_view::npos) return true;
    const std::string_view name = TrimSpace(params.substr(0, eq));
    params = TrimSpace(params.substr(eq + 1));
    std::string value;
    if (!params.empty() && params.front() == '"') {
      size_t i = 1;
      for (; i < params.size() && params[i] != '"'; ++i) {
        if (params[i] == '\\' && i + 1 < params.size()) ++i;
        value.push_back(params[i]);
      }
      if (i >= params.size()) return false;
      params.remove_prefix(i + 1);
    } else {
      const size_t end = params.find(';');
      value = std::string(TrimSpace(params.substr(0, end)));
      params = end == std::string_view::npos ? std::string_view() : params.substr(end);
    }
    fn(name, std::move(value));
  }
  return true;
}

// The part's headers (between the boundary line and the blank line): its name and filename.
std::optional<HttpError> ParsePartHeaders(std::string_view headers, FormPart* part) {
  bool disposition = false;
  while (!headers.empty()) {
    const size_t eol = headers.find("\r\n");
    const std::string_view line = headers.substr(0, eol);
    headers = eol == std::string_view::npos ? std::string_view() : headers.substr(eol + 2);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) return Malformed("a part header line has no ':'");
    if (!http::EqualsIgnoreCase(TrimSpace(line.substr(0, colon)), "Content-Disposition")) continue;
    const std::string_view value = TrimSpace(line.substr(colon + 1));
    if (!http::EqualsIgnoreCase(value.substr(0, value.find(';')), "form-data")) {
      return Malformed("a part's Content-Disposition is not form-data");
    }
    const bool ok = ForEachParameter(value, [&](std::string_view name, std::string v) {
      if (http::EqualsIgnoreCase(name, "name")) part->name = std::move(v);
      if (http::EqualsIgnoreCase(name, "filename")) part->filename = std::move(v);
    });
    if (!ok) return Malformed("unterminated quoted string in Content-Disposition");
    disposition = true;
  }
  if (!disposition) return Malformed("a part has no Content-Disposition header");
  return std::nullopt;
}

}  // namespace

std::optional<HttpError> ParseMultipartForm(std::string_view content_type, std::string_view body,
                                            int max_parts, std::vector<FormPart>* parts) {
  std::string boundary;
  const bool ok = ForEachParameter(content_type, [&](std::string_view name, std::string v) {
    if (http::EqualsIgnoreCase(name, "boundary")) boundary = std::move(v);
  });
  if (!ok || boundary.empty() || boundary.size() > 70) {
    return Malformed("the Content-Type needs a boundary parameter of 1 to 70 characters");
  }
  const std::string delimiter = "\r\n--" + boundary;
  const std::string_view dash = std::string_view(delimiter).substr(2);
  // The first boundary line opens the body, or follows a preamble.
  size_t pos = 0;
  if (body.substr(0, dash.size()) == dash) {
    pos = dash.size();
  } else {
    pos = body.find(delimiter);
    if (pos == std::string_view::npos) return Malformed("no boundary line");
    pos += delimiter.size();
  }
  for (;;) {
    if (body.substr(pos, 2) == "--") return std::nullopt;  // the closing boundary
    while (pos < body.size() && (body[pos] == ' ' || body[pos] == '\t')) ++pos;
    if (body.substr(pos, 2) != "\r\n") return Malformed("a boundary line does not end in CRLF");
    pos += 2;
    if (body.substr(pos, 2) == "\r\n") return Malformed("a part has no Content-Disposition header");
    if (static_cast<int>(parts->size()) >= max_parts) {
      return HttpError{413, "too_many_parts",
                       "the multipart body has more than " + std::to_string(max_parts) +
                           " parts (the limit, max_form_parts)"};
    }
    const size_t header_end = body.find("\r\n\r\n", pos);
    if (header_end == std::string_view::npos || header_end - pos > kMaxPartHeaderBytes) {
      return Malformed("a part's headers do not end within 8 KiB");
    }
    FormPart part;
    if (auto e = ParsePartHeaders(body.substr(pos, header_end - pos), &part)) return e;
    const size_t data = header_end + 4;
    const size_t next = body.find(delimiter, data);
    if (next == std::string_view::npos) return Malformed("the last part has no closing boundary");
    part.data = body.substr(data, next - data);
    parts->push_back(std::move(part));
    pos = next + delimiter.size();
  }
}

}  // namespace mogserve::server
