#include "server/http/listener.h"

#include <spdlog/spdlog.h>

#include <optional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "server/http/connection.h"

namespace mogserve::server::http {
namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using boost::system::error_code;

// After a failed accept (out of file descriptors): wait this long before the next try, so
// the loop does not spin while connections close.
constexpr std::chrono::milliseconds kAcceptRetry{50};

}  // namespace

struct Listener::Impl {
  Impl(ListenerOptions o, HttpHandler* handler)
      : options(std::move(o)),
        acceptor(net::make_strand(ioc)),
        retry_timer(acceptor.get_executor()),
        budget(options.limits.max_body_bytes_in_flight),
        registry(options.limits.max_connections) {
    context.limits = options.limits;
    context.handler = handler;
    context.budget = &budget;
    context.registry = &registry;
  }

  void Accept() {
    acceptor.async_accept(net::make_strand(ioc), [this](error_code ec, tcp::socket socket) {
      // A connection accepted just as the server stops is still served (its request answered).
      if (!ec) StartConnection(std::move(socket));
      if (stopped.load() || ec == net::error::operation_aborted) return;
      if (ec) return OnAcceptFailed(ec);
      Accept();
    });
  }

  void OnAcceptFailed(const error_code& ec) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_accept_warning > std::chrono::seconds(10)) {
      last_accept_warning = now;
      spdlog::warn("accept failed: {}; closing an idle connection and retrying", ec.message());
    }
    // Out of descriptors: free one held by a connection that has no request in progress.
    if (auto victim = registry.PickVictim(nullptr, /*at_any_size=*/true)) victim->Displace();
    retry_timer.expires_after(kAcceptRetry);
    retry_timer.async_wait([this](error_code e) {
      if (!e && !stopped.load()) Accept();
    });
  }

  void StartConnection(tcp::socket socket) {
    error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);  // answers go out whole, no Nagle delay
    auto connection = std::make_shared<Connection>(std::move(socket), &context);
    connection->set_registry_handle(registry.Add(connection.get()));
    bool refuse = false;
    if (auto victim = registry.PickVictim(connection.get())) {
      victim->Displace();
    } else if (registry.OverCap()) {
      refuse = true;
      registry.CountRefused();
    }
    connection->Start(refuse);
  }

  // On the acceptor's strand: takes every connection the kernel already accepted, then closes.
  void StopAccepting() {
    error_code ec;
    acceptor.cancel(ec);
    retry_timer.cancel();
    acceptor.non_blocking(true, ec);
    for (;;) {
      tcp::socket socket(net::make_strand(ioc));
      acceptor.accept(socket, ec);
      if (ec) break;
      StartConnection(std::move(socket));
    }
    acceptor.close(ec);
    registry.ForEach([](const std::shared_ptr<Connection>& c) { c->OnServerStop(); });
    idle_guard.reset();
  }

  ListenerOptions options;
  net::io_context ioc;
  // Keeps Run() going while no connection is open; released by Stop.
  std::optional<net::executor_work_guard<net::io_context::executor_type>> idle_guard{
      ioc.get_executor()};
  tcp::acceptor acceptor;
  net::steady_timer retry_timer;
  BodyBudget budget;
  ConnectionRegistry registry;
  ConnectionContext context;
  std::atomic<bool> stopped{false};
  std::chrono::steady_clock::time_point last_accept_warning{};
};

Listener::Listener(ListenerOptions options, HttpHandler* handler)
    : impl_(std::make_unique<Impl>(std::move(options), handler)) {}

Listener::~Listener() {
  Stop();
}

StatusOr<int> Listener::Bind() {
  Impl& m = *impl_;
  const std::string where = m.options.host + ":" + std::to_string(m.options.port);
  error_code ec;
  tcp::resolver resolver(m.ioc);
  const auto endpoints =
      resolver.resolve(m.options.host, std::to_string(m.options.port),
                       tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || endpoints.empty()) {
    return FailedPrecondition("cannot listen on " + where + ": the host does not resolve (" +
                              ec.message() + "); choose another --host");
  }
  const tcp::endpoint endpoint = endpoints.begin()->endpoint();
  m.acceptor.open(endpoint.protocol(), ec);
  if (!ec) m.acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) m.acceptor.bind(endpoint, ec);
  if (!ec) m.acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return FailedPrecondition("cannot listen on " + where + " (" + ec.message() +
                              "; in use, or not an address of this machine); choose another "
                              "--port or --host");
  }
  return static_cast<int>(m.acceptor.local_endpoint().port());
}

void Listener::Run() {
  Impl& m = *impl_;
  net::post(m.acceptor.get_executor(), [&m] {
    if (!m.stopped.load()) m.Accept();
  });
  std::vector<std::thread> threads;
  for (int i = 1; i < std::max(1, m.options.io_threads); ++i) {
    threads.emplace_back([&m] { m.ioc.run(); });
  }
  m.ioc.run();
  for (std::thread& t : threads) t.join();
}

void Listener::Stop() {
  Impl& m = *impl_;
  if (m.stopped.exchange(true)) return;
  m.context.stopping.store(true);
  net::post(m.acceptor.get_executor(), [&m] { m.StopAccepting(); });
}

ListenerStats Listener::Stats() const {
  return {impl_->registry.counters(), impl_->budget.in_use_bytes()};
}

}  // namespace mogserve::server::http
