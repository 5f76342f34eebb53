#include "server/http/http_message.h"

#include <nlohmann/json.hpp>

namespace mogserve::server::http {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX escapes (and '+' as a space in query components). False on a malformed escape.
bool PercentDecode(std::string_view in, bool plus_is_space, std::string* out) {
  out->clear();
  out->reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size()) return false;
      const int hi = HexValue(in[i + 1]);
      const int lo = HexValue(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      out->push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out->push_back(' ');
    } else {
      out->push_back(c);
    }
  }
  return true;
}

}  // namespace

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

std::string_view HttpRequest::Header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (EqualsIgnoreCase(n, name)) return v;
  }
  return {};
}

bool HttpRequest::HasHeader(std::string_view name) const {
  for (const auto& h : headers) {
    if (EqualsIgnoreCase(h.first, name)) return true;
  }
  return false;
}

void HttpResponse::SetHeader(std::string name, std::string value) {
  for (auto& h : headers) {
    if (EqualsIgnoreCase(h.first, name)) {
      h.second = std::move(value);
      return;
    }
  }
  headers.emplace_back(std::move(name), std::move(value));
}

HttpResponse JsonError(int status, std::string_view code, std::string_view message) {
  HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  const nlohmann::json body = {{"error", {{"code", code}, {"message", message}}}};
  r.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return r;
}

std::string_view StatusReason(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 101:
      return "Switching Protocols";
    case 200:
      return "OK";
    case 204:
      return "No Content";
    case 304:
      return "Not Modified";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 411:
      return "Length Required";
    case 413:
      return "Content Too Large";
    case 414:
      return "URI Too Long";
    case 415:
      return "Unsupported Media Type";
    case 417:
      return "Expectation Failed";
    case 422:
      return "Unprocessable Content";
    case 426:
      return "Upgrade Required";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Unknown";
  }
}

bool ParseTarget(std::string_view target, std::string* path,
                 std::multimap<std::string, std::string>* query) {
  if (target.empty() || target.front() != '/') return false;
  const size_t q = target.find('?');
  if (!PercentDecode(target.substr(0, q), /*plus_is_space=*/false, path)) return false;
  query->clear();
  if (q == std::string_view::npos) return true;
  std::string_view rest = target.substr(q + 1);
  const size_t hash = rest.find('#');
  if (hash != std::string_view::npos) rest = rest.substr(0, hash);
  while (!rest.empty()) {
    const size_t amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    std::string name, value;
    if (!PercentDecode(pair.substr(0, eq), true, &name)) return false;
    if (eq != std::string_view::npos && !PercentDecode(pair.substr(eq + 1), true, &value)) {
      return false;
    }
    query->emplace(std::move(name), std::move(value));
  }
  return true;
}

}  // namespace mogserve::server::http
