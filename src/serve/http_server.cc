#include "serve/http_server.h"

#include <algorithm>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <chrono>
#include <optional>
#include <thread>

#include "serve/infer_response.h"

namespace weft::serve {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

std::string Lower(std::string text) {
  for (char& c : text)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace

class HttpServer::Impl {
 public:
  Impl(const RequestLimits& limits, HttpHandler handler, HttpObserver observer)
      : limits_(limits),
        handler_(std::move(handler)),
        observer_(std::move(observer)),
        acceptor_(io_) {}

  Status Listen(const std::string& host, int port) {
    beast::error_code ec;
    const auto address = asio::ip::make_address(host, ec);
    if (ec) {
      return InvalidArgumentError("--host " + host + ": not an IP address (" +
                                  ec.message() + ")");
    }
    const tcp::endpoint endpoint(address, static_cast<uint16_t>(port));
    const std::string where = host + ":" + std::to_string(port);
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      return FailedPreconditionError("cannot listen on " + where + ": " +
                                     ec.message());
    }
    port_ = acceptor_.local_endpoint().port();
    return Status::OK();
  }

  void Run(int threads) {
    Accept();
    // A connection waiting for its handler has no socket operation pending;
    // without this guard the network threads would return from run() once
    // the acceptor closes (a drain) and the answers would never be written.
    work_.emplace(io_.get_executor());
    for (int i = 0; i < std::max(1, threads); ++i) {
      threads_.emplace_back([this] { io_.run(); });
    }
  }

  void StopAccepting() {
    asio::post(io_, [this] {
      beast::error_code ignored;
      acceptor_.close(ignored);
    });
  }

  void Stop() {
    if (stopped_.exchange(true)) return;
    StopAccepting();
    work_.reset();
    io_.stop();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }

  int port() const { return port_; }
  const RequestLimits& limits() const { return limits_; }
  const HttpHandler& handler() const { return handler_; }
  const HttpObserver& observer() const { return observer_; }
  std::atomic<int>& connections() { return connections_; }

 private:
  void Accept();

  const RequestLimits limits_;
  const HttpHandler handler_;
  const HttpObserver observer_;
  // Before io_: connections the io_context still holds when it is
  // destroyed count themselves out here.
  std::atomic<int> connections_{0};
  std::atomic<bool> stopped_{false};
  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>>
      work_;
  std::vector<std::thread> threads_;
  int port_ = 0;
};

namespace {

// One connection: read a request, hand it to the handler, write the
// answer, and again while the client keeps the connection alive.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  static constexpr size_t kReadChunk = 64 << 10;

  Connection(tcp::socket socket, HttpServer::Impl* server)
      : stream_(std::move(socket)), server_(server) {
    ++server_->connections();
    beast::error_code ec;
    const auto remote = stream_.socket().remote_endpoint(ec);
    if (!ec) {
      peer_ =
          remote.address().to_string() + ":" + std::to_string(remote.port());
    }
  }
  ~Connection() { --server_->connections(); }

  void Start() {
    // Beast reads at most what the buffer has room for: a buffer left to
    // grow from nothing reads a large body 512 bytes at a time (a 600 KB
    // image took 1,200 reads and 5 ms).
    buffer_.reserve(kReadChunk);
    ReadRequest();
  }

 private:
  void ReadRequest() {
    parser_.emplace();
    parser_->header_limit(
        static_cast<std::uint32_t>(server_->limits().max_header_bytes));
    parser_->body_limit(
        static_cast<std::uint64_t>(server_->limits().max_body_bytes));
    stream_.expires_after(
        std::chrono::milliseconds(server_->limits().read_timeout_ms));
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       self->OnRead(ec);
                     });
  }

  void OnRead(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == asio::error::operation_aborted ||
        ec == asio::error::connection_reset || ec == asio::error::eof) {
      Close();
      return;
    }
    if (ec == http::error::header_limit) {
      WriteError(431,
                 "the request's headers are larger than the server's "
                 "limit");
      return;
    }
    if (ec == http::error::body_limit) {
      WriteError(413,
                 "the request's body is larger than the server's limit "
                 "(--max-body-bytes)");
      return;
    }
    if (ec) {
      WriteError(400, "the request is not valid HTTP/1.1");
      return;
    }
    stream_.expires_never();  // The handler may take as long as it needs.
    const http::request<http::string_body>& message = parser_->get();
    keep_alive_ = message.keep_alive();
    HttpRequest request;
    request.method = std::string(message.method_string());
    request.target = std::string(message.target());
    for (const auto& field : message) {
      request.headers[Lower(std::string(field.name_string()))] =
          std::string(field.value());
    }
    request.body = std::move(parser_->release().body());
    request.peer = peer_;
    request_line_ = std::make_shared<HttpRequest>();
    request_line_->method = request.method;
    request_line_->target = request.target;
    request_line_->peer = peer_;
    auto executor = stream_.get_executor();
    server_->handler()(
        std::move(request), [self = shared_from_this(),
                             executor](std::function<HttpResponse()> make) {
          asio::post(executor,
                     [self, make = std::move(make)] { self->Write(make()); });
        });
  }

  void WriteError(int status, const char* message) {
    keep_alive_ = false;
    request_line_ = std::make_shared<HttpRequest>();
    request_line_->peer = peer_;
    HttpResponse response;
    response.status = status;
    response.body = ErrorBody(message);
    Write(std::move(response));
  }

  void Write(HttpResponse response) {
    auto message = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(response.status), 11);
    message->set(http::field::server, "weft");
    message->set(http::field::content_type, response.content_type);
    for (const auto& [name, value] : response.headers) {
      message->set(name, value);
    }
    message->body() = std::move(response.body);
    message->keep_alive(keep_alive_);
    message->prepare_payload();
    if (server_->observer() && request_line_) {
      server_->observer()(*request_line_, response.status,
                          message->body().size());
    }
    stream_.expires_after(
        std::chrono::milliseconds(server_->limits().read_timeout_ms));
    http::async_write(
        stream_, *message,
        [self = shared_from_this(), message](beast::error_code ec, size_t) {
          if (ec || !self->keep_alive_) {
            self->Close();
          } else {
            self->ReadRequest();
          }
        });
  }

  void Close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.socket().close(ignored);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  HttpServer::Impl* server_;
  std::string peer_;
  bool keep_alive_ = true;
  std::shared_ptr<HttpRequest> request_line_;  // For the observer.
};

}  // namespace

void HttpServer::Impl::Accept() {
  acceptor_.async_accept(
      asio::make_strand(io_), [this](beast::error_code ec, tcp::socket socket) {
        if (ec == asio::error::operation_aborted || !acceptor_.is_open()) {
          return;
        }
        if (!ec) {
          if (connections_.load() >= limits_.max_connections) {
            beast::error_code ignored;
            socket.close(ignored);
          } else {
            std::make_shared<Connection>(std::move(socket), this)->Start();
          }
        }
        Accept();
      });
}

StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    const std::string& host, int port, const RequestLimits& limits, int threads,
    HttpHandler handler, HttpObserver observer) {
  auto impl =
      std::make_unique<Impl>(limits, std::move(handler), std::move(observer));
  WEFT_RETURN_IF_ERROR(impl->Listen(host, port));
  impl->Run(threads);
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpServer::~HttpServer() { Stop(); }
int HttpServer::port() const { return impl_->port(); }
void HttpServer::StopAccepting() { impl_->StopAccepting(); }
void HttpServer::Stop() { impl_->Stop(); }

}  // namespace weft::serve
