// The plain request and response structs of the HTTP layer (server/http/), and the limits it
// enforces. No Boost here: handlers above the connection see only these.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/http/body_budget.h"

namespace mogserve::server::http {

// Everything a client can make the server hold or wait for, each enforced while reading.
struct HttpLimits {
  int64_t max_header_bytes = 16 << 10;  // request line + fields (431; 414 for a long line)
  int max_header_fields = 100;          // 431
  int max_target_bytes = 8 << 10;       // the request-target (414)
  int64_t max_body_bytes = 64 << 20;    // per request, by Content-Length or chunk total (413)
  // Request bodies held at once across all connections (503 + Retry-After beyond it).
  int64_t max_body_bytes_in_flight = int64_t{1} << 30;
  // Deadlines: the whole header from its first byte (408), the whole body from the end of the
  // header (408), the wait for the next request on a keep-alive connection (closed quietly),
  // one response write (closed).
  std::chrono::milliseconds header_timeout{10'000};
  std::chrono::milliseconds body_timeout{60'000};
  std::chrono::milliseconds idle_timeout{10'000};
  std::chrono::milliseconds write_timeout{30'000};
  // Open connections. At the cap, a new connection displaces the one that has waited longest
  // without sending a complete request header (idle keep-alive or a slow header); when every
  // connection is busy with a request, the new one gets 503 and is closed.
  int max_connections = 10'000;
  int max_requests_per_connection = 100;  // then Connection: close
};

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;  // as sent: "GET", "POST", ...
  std::string target;  // the raw request-target: "/v1/detect?max_faces=3"
  std::string path;    // target before '?', percent-decoded
  std::multimap<std::string, std::string> query;  // decoded name -> value
  HeaderList headers;                             // in order, names as sent
  std::string body;
  std::string remote_addr;                        // "127.0.0.1"
  int version = 11;                               // 10 = HTTP/1.0, 11 = HTTP/1.1
  std::chrono::steady_clock::time_point started;  // first byte of the request
  BodyLease body_lease;  // the body's bytes in the in-flight budget; Release() once copied off
  int route = -1;        // the application's route, as its Screen found it (-1: none)

  // The first header named `name` (case-insensitive), "" if none.
  std::string_view Header(std::string_view name) const;
  bool HasHeader(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type;  // "" = no Content-Type (and normally no body)
  HeaderList headers;        // extra headers
  std::string body;
  bool close = false;  // Connection: close after this response

  void SetHeader(std::string name, std::string value);
};

// A JSON error response: {"error":{"code","message"}} with `status`.
HttpResponse JsonError(int status, std::string_view code, std::string_view message);

// The reason phrase of a status code ("Request Header Fields Too Large").
std::string_view StatusReason(int status);

// ASCII case-insensitive equality (header names, auth schemes, tokens).
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

// Splits a request-target into its decoded path and query. False when the target is not an
// origin-form path ("/..."; '*' and absolute forms are refused) or a %-escape is malformed.
bool ParseTarget(std::string_view target, std::string* path,
                 std::multimap<std::string, std::string>* query);

}  // namespace mogserve::server::http
