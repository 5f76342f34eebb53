#include "server/http/request_parser.h"

#include <boost/beast/http/error.hpp>

namespace mogserve::server::http {
namespace {

namespace bhttp = boost::beast::http;

std::string Bytes(int64_t n) {
  return std::to_string(n) + " bytes";
}

bool IsBodyMethod(std::string_view method) {
  return method == "POST" || method == "PUT" || method == "PATCH";
}

// The last transfer coding of a Transfer-Encoding value ("gzip, chunked" -> "chunked").
std::string_view LastCoding(std::string_view value) {
  const size_t comma = value.rfind(',');
  std::string_view last = comma == std::string_view::npos ? value : value.substr(comma + 1);
  while (!last.empty() && (last.front() == ' ' || last.front() == '\t')) last.remove_prefix(1);
  while (!last.empty() && (last.back() == ' ' || last.back() == '\t')) last.remove_suffix(1);
  const size_t semicolon = last.find(';');
  return last.substr(0, semicolon);
}

}  // namespace

RequestParser::RequestParser(const HttpLimits& limits, BodyBudget* budget) : limits_(limits) {
  header_limit(static_cast<std::uint32_t>(limits.max_header_bytes));
  body_limit(static_cast<std::uint64_t>(limits.max_body_bytes));
  request_.body_lease = BodyLease(budget);
}

void RequestParser::Refuse(boost::beast::error_code& ec, HttpResponse response) {
  response.close = true;
  refusal_ = std::move(response);
  ec = bhttp::error::bad_value;  // stops the parser; Refusal() returns ours
}

void RequestParser::on_request_impl(bhttp::verb, boost::beast::string_view method_str,
                                    boost::beast::string_view target, int version,
                                    boost::beast::error_code& ec) {
  if (version != 10 && version != 11) {
    return Refuse(
        ec, JsonError(505, "http_version_not_supported", "only HTTP/1.0 and HTTP/1.1 are served"));
  }
  if (static_cast<int64_t>(target.size()) > limits_.max_target_bytes) {
    return Refuse(
        ec, JsonError(414, "uri_too_long",
                      "the request target has " + Bytes(target.size()) +
                          "; the limit (max_target_bytes) is " + Bytes(limits_.max_target_bytes)));
  }
  request_.method.assign(method_str.data(), method_str.size());
  request_.target.assign(target.data(), target.size());
  request_.version = version;
  if (!ParseTarget(request_.target, &request_.path, &request_.query)) {
    return Refuse(ec, JsonError(400, "bad_request",
                                "the request target must be a path starting with '/', with "
                                "valid %-escapes"));
  }
}

void RequestParser::on_field_impl(bhttp::field name, boost::beast::string_view name_string,
                                  boost::beast::string_view value, boost::beast::error_code& ec) {
  if (++fields_ > limits_.max_header_fields) {
    return Refuse(
        ec, JsonError(431, "header_fields_too_many",
                      "the request has more than " + std::to_string(limits_.max_header_fields) +
                          " header fields (the limit, max_header_fields)"));
  }
  if (is_header_done()) return;  // a chunked body's trailer: counted, not kept
  switch (name) {
    case bhttp::field::host:
      if (++hosts_ > 1) {
        return Refuse(ec, JsonError(400, "bad_request", "more than one Host header field"));
      }
      break;
    case bhttp::field::transfer_encoding:
      transfer_encoding_.assign(value.data(), value.size());
      break;
    case bhttp::field::expect:
      if (!EqualsIgnoreCase(value, "100-continue")) {
        return Refuse(
            ec, JsonError(417, "expectation_failed", "Expect: only 100-continue is supported"));
      }
      expects_continue_ = true;
      break;
    default:
      break;
  }
  request_.headers.emplace_back(std::string(name_string), std::string(value));
}

void RequestParser::on_header_impl(boost::beast::error_code& ec) {
  if (request_.version == 11 && hosts_ == 0) {
    return Refuse(ec, JsonError(400, "bad_request", "an HTTP/1.1 request needs a Host header"));
  }
  // RFC 9112 §6.1: a request whose final coding is not chunked cannot be framed (400 there);
  // codings before a final chunked are refused as not implemented (501): no compression here.
  if (!transfer_encoding_.empty() && !EqualsIgnoreCase(LastCoding(transfer_encoding_), "chunked")) {
    return Refuse(ec, JsonError(400, "bad_request",
                                "Transfer-Encoding '" + transfer_encoding_ +
                                    "' does not end in chunked: the body cannot be framed"));
  }
  if (!EqualsIgnoreCase(LastCoding(transfer_encoding_), transfer_encoding_) &&
      !transfer_encoding_.empty()) {
    return Refuse(ec, JsonError(501, "transfer_encoding_not_supported",
                                "Transfer-Encoding '" + transfer_encoding_ +
                                    "': only 'chunked' is supported (no compression)"));
  }
  has_body_ = chunked() || (content_length() && *content_length() > 0);
  if (IsBodyMethod(request_.method) && !chunked() && !content_length()) {
    return Refuse(ec,
                  JsonError(411, "length_required",
                            request_.method + " needs a Content-Length header or a chunked body"));
  }
  if (!has_body_) expects_continue_ = false;  // nothing to wait for
}

bool RequestParser::ReserveBody() {
  if (body_reserved_ || !content_length()) return true;
  body_reserved_ = true;
  if (request_.body_lease.Grow(static_cast<int64_t>(*content_length()))) {
    request_.body.reserve(static_cast<size_t>(*content_length()));
    return true;
  }
  HttpResponse r = JsonError(503, "server_busy",
                             "the server holds too many request bodies at once "
                             "(max_body_bytes_in_flight " +
                                 Bytes(limits_.max_body_bytes_in_flight) + "); retry shortly");
  r.SetHeader("Retry-After", "1");
  r.close = true;
  refusal_ = std::move(r);
  return false;
}

void RequestParser::on_body_init_impl(const boost::optional<std::uint64_t>&,
                                      boost::beast::error_code& ec) {
  if (!ReserveBody()) ec = bhttp::error::bad_value;
}

std::size_t RequestParser::on_body_impl(boost::beast::string_view body, boost::beast::error_code&) {
  request_.body.append(body.data(), body.size());
  return body.size();
}

void RequestParser::on_chunk_header_impl(std::uint64_t size, boost::beast::string_view,
                                         boost::beast::error_code& ec) {
  if (!request_.body_lease.Grow(static_cast<int64_t>(size))) {
    HttpResponse r = JsonError(503, "server_busy",
                               "the server holds too many request bodies at once "
                               "(max_body_bytes_in_flight " +
                                   Bytes(limits_.max_body_bytes_in_flight) + "); retry shortly");
    r.SetHeader("Retry-After", "1");
    Refuse(ec, std::move(r));
  }
}

std::size_t RequestParser::on_chunk_body_impl(std::uint64_t, boost::beast::string_view body,
                                              boost::beast::error_code&) {
  request_.body.append(body.data(), body.size());
  return body.size();
}

HttpResponse RequestParser::Refusal(const boost::beast::error_code& ec,
                                    std::string_view bytes_seen) const {
  if (refusal_) return *refusal_;
  HttpResponse r;
  if (ec == bhttp::error::header_limit) {
    // No line end within the limit: the request line itself is too long.
    const size_t eol = bytes_seen.find('\n');
    if (eol == std::string_view::npos || eol > static_cast<size_t>(limits_.max_target_bytes)) {
      r = JsonError(414, "uri_too_long",
                    "the request line is longer than " + Bytes(limits_.max_target_bytes) +
                        " (the limit, max_target_bytes)");
    } else {
      r = JsonError(431, "header_too_large",
                    "the request header is over " + Bytes(limits_.max_header_bytes) +
                        " (the limit, max_header_bytes)");
    }
  } else if (ec == bhttp::error::bad_version) {
    r = JsonError(505, "http_version_not_supported", "only HTTP/1.0 and HTTP/1.1 are served");
  } else if (ec == bhttp::error::body_limit) {
    const std::string sent =
        content_length() ? " announces " + Bytes(*content_length()) : " (chunked) passed that";
    r = JsonError(413, "payload_too_large",
                  "the request body" + sent + "; the limit (max_body_bytes) is " +
                      Bytes(limits_.max_body_bytes));
  } else if (ec == bhttp::error::multiple_content_length) {
    r = JsonError(400, "bad_request", "Content-Length header fields with different values");
  } else if (ec == bhttp::error::bad_content_length) {
    r = JsonError(400, "bad_request",
                  transfer_encoding_.empty()
                      ? "the Content-Length header is not a valid length"
                      : "Content-Length together with Transfer-Encoding is not allowed");
  } else if (ec == bhttp::error::bad_transfer_encoding) {
    r = JsonError(400, "bad_request",
                  "Transfer-Encoding together with Content-Length, or repeated, is not allowed");
  } else if (ec == bhttp::error::bad_chunk || ec == bhttp::error::bad_chunk_extension) {
    r = JsonError(400, "bad_request", "malformed chunked body");
  } else {
    r = JsonError(400, "bad_request", "malformed HTTP request: " + ec.message());
  }
  r.close = true;
  return r;
}

}  // namespace mogserve::server::http
