// The HTTP/1.1 front end (Boost.Beast over Asio): a few network threads
// accept, read and write every connection asynchronously, so a slow or
// idle client holds no thread. A request arrives whole and bounded
// (RequestLimits: header size 431, body size 413, a read deadline) before
// the handler sees it; the handler answers through a callback that may be
// called later from any thread (the network thread then writes the
// response). Network threads never run a kernel: they only call the
// handler, which parses and queues.
#ifndef WEFT_SRC_SERVE_HTTP_SERVER_H_
#define WEFT_SRC_SERVE_HTTP_SERVER_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "weft/serve.h"
#include "weft/status.h"

namespace weft::serve {

struct HttpRequest {
  std::string method;                          // "GET", "POST", ...
  std::string target;                          // "/v2/models/m/infer?x=1"
  std::map<std::string, std::string> headers;  // Names in lower case.
  std::string body;
  std::string peer;  // "127.0.0.1:53122"
  const std::string* Header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? nullptr : &it->second;
  }
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

// Answers a request; call exactly once, from any thread. `make` runs on a
// network thread, so serialising an answer never takes a runner's time.
using Respond = std::function<void(std::function<HttpResponse()> make)>;
using HttpHandler = std::function<void(HttpRequest, Respond)>;
// Told of every answered request: method, target, status, peer, bytes.
using HttpObserver =
    std::function<void(const HttpRequest&, int status, size_t response_bytes)>;

class HttpServer {
 public:
  // Binds host:port (port 0: any free one) and starts `threads` network
  // threads. Fails naming the address when it cannot be bound.
  static StatusOr<std::unique_ptr<HttpServer>> Start(
      const std::string& host, int port, const RequestLimits& limits,
      int threads, HttpHandler handler, HttpObserver observer);
  ~HttpServer();  // Stop().

  int port() const;
  // Closes the listening socket; open connections go on.
  void StopAccepting();
  // Closes every connection and joins the network threads.
  void Stop();

  class Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft::serve

#endif  // WEFT_SRC_SERVE_HTTP_SERVER_H_
