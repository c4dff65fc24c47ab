#pragma once
// @brief An executor server's address, "host:port" or "[ipv6]:port": header-only, so that the
// experiment config checks endpoints without linking the remote executor.

#include <cstdint>
#include <optional>
#include <string>

namespace inferscale::remote {

struct Endpoint {
  std::string host;
  std::uint16_t port = 0;
  std::string text() const;  // host:port ([host]:port for IPv6)
};

/// "host:port" or "[ipv6]:port" with port 0..65535; nullopt when malformed.
std::optional<Endpoint> parse_endpoint(const std::string& text);

inline std::string Endpoint::text() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

inline std::optional<Endpoint> parse_endpoint(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) return std::nullopt;
  std::string host = text.substr(0, colon);
  const std::string port = text.substr(colon + 1);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return std::nullopt;
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string::npos) {
    return std::nullopt;  // an IPv6 address needs brackets
  }
  if (port.size() > 5) return std::nullopt;
  std::uint32_t value = 0;
  for (char c : port) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<std::uint32_t>(c - '0');
  }
  if (value > 65535) return std::nullopt;
  return Endpoint{host, static_cast<std::uint16_t>(value)};
}

}  // namespace inferscale::remote
