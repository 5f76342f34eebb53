// RequestParser: one HTTP/1.1 request, read incrementally (Beast's parser underneath) with the
// framing rules of RFC 9112 and every HttpLimits bound checked as the bytes arrive, before they
// are buffered:
//   - header bytes (431) and field count (431); request-target length (414); HTTP/1.0 or 1.1
//     only (505); Host required in HTTP/1.1 and at most one (400);
//   - Content-Length: conflicting values (400), Content-Length with Transfer-Encoding (400),
//     a transfer coding other than a final "chunked" (501), POST/PUT/PATCH with neither (411);
//   - body: Content-Length over the limit refused from the header (413), a chunked body as soon
//     as its running total would pass it (413); the bytes taken from the in-flight BodyBudget
//     first (503 when it is full).
// A refusal is a ready HttpResponse (JSON error naming the limit and its value); the connection
// sends it and closes (the unread rest of the request is never parsed as a next request).
#pragma once

#include <boost/beast/core/error.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <optional>
#include <string>

#include "server/http/body_budget.h"
#include "server/http/http_message.h"

namespace mogserve::server::http {

class RequestParser final : public boost::beast::http::basic_parser<true> {
 public:
  // `budget` may be null (no in-flight bound). Neither is owned; both outlive the parser.
  RequestParser(const HttpLimits& limits, BodyBudget* budget);

  // The request; method, target, path, query and headers once is_header_done(), the body once
  // is_done().
  HttpRequest& request() { return request_; }
  bool has_body() const { return has_body_; }
  // "Expect: 100-continue" was sent.
  bool expects_continue() const { return expects_continue_; }

  // Takes the announced Content-Length from the budget (call when the header is done, before
  // reading the body). False: refused, refusal() says why.
  bool ReserveBody();

  // Why parsing stopped, as the response to send: the refusal a check of ours made, or the one
  // Beast's error `ec` deserves. `bytes_seen` is what the connection had buffered (to tell a
  // request line that is too long from too many header bytes).
  HttpResponse Refusal(const boost::beast::error_code& ec, std::string_view bytes_seen) const;

 private:
  void on_request_impl(boost::beast::http::verb method, boost::beast::string_view method_str,
                       boost::beast::string_view target, int version,
                       boost::beast::error_code& ec) override;
  void on_response_impl(int, boost::beast::string_view, int, boost::beast::error_code&) override {}
  void on_field_impl(boost::beast::http::field name, boost::beast::string_view name_string,
                     boost::beast::string_view value, boost::beast::error_code& ec) override;
  void on_header_impl(boost::beast::error_code& ec) override;
  void on_body_init_impl(const boost::optional<std::uint64_t>& content_length,
                         boost::beast::error_code& ec) override;
  std::size_t on_body_impl(boost::beast::string_view body, boost::beast::error_code& ec) override;
  void on_chunk_header_impl(std::uint64_t size, boost::beast::string_view extensions,
                            boost::beast::error_code& ec) override;
  std::size_t on_chunk_body_impl(std::uint64_t remain, boost::beast::string_view body,
                                 boost::beast::error_code& ec) override;
  void on_finish_impl(boost::beast::error_code& ec) override {}

  // Records our own refusal and stops the parser.
  void Refuse(boost::beast::error_code& ec, HttpResponse response);

  const HttpLimits& limits_;
  HttpRequest request_;
  int fields_ = 0;
  int hosts_ = 0;
  bool has_body_ = false;
  bool expects_continue_ = false;
  bool body_reserved_ = false;
  std::string transfer_encoding_;  // the Transfer-Encoding value, if any
  std::optional<HttpResponse> refusal_;
};

}  // namespace mogserve::server::http
