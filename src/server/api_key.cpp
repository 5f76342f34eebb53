#include "server/api_key.h"

#include "server/http/http_message.h"

namespace mogserve::server {
namespace {

// Compares in time independent of where the strings differ (API keys).
bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

}  // namespace

bool BearerKeyMatches(std::string_view auth, std::string_view key) {
  const size_t space = auth.find(' ');
  if (space == std::string_view::npos || !http::EqualsIgnoreCase(auth.substr(0, space), "Bearer")) {
    return false;
  }
  auth.remove_prefix(space);
  while (!auth.empty() && auth.front() == ' ') auth.remove_prefix(1);
  while (!auth.empty() && auth.back() == ' ') auth.remove_suffix(1);
  return ConstantTimeEquals(auth, key);
}

std::string ClientOf(std::string_view api_key, std::string peer_address) {
  return api_key.empty() ? std::move(peer_address) : "key";
}

}  // namespace mogserve::server
