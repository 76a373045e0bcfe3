// The server end to end over loopback: a weft::serve::Server in this
// process, called through real sockets.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <latch>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "serve/served_model.h"
#include "test_support/serve_data.h"
#include "weft/graph.h"
#include "weft/graph_io.h"
#include "weft/model.h"
#include "weft/serve.h"
#include "weft/session.h"

namespace weft::serve {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Json = nlohmann::json;

struct Reply {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;
  Json json() const { return Json::parse(body, nullptr, false); }
};

Reply Call(
    int port, http::verb method, const std::string& target,
    const std::string& body = "",
    const std::vector<std::pair<std::string, std::string>>& headers = {}) {
  asio::io_context io;
  asio::ip::tcp::resolver resolver(io);
  beast::tcp_stream stream(io);
  stream.connect(resolver.resolve("127.0.0.1", std::to_string(port)));
  http::request<http::string_body> request(method, target, 11);
  request.set(http::field::host, "127.0.0.1");
  for (const auto& [name, value] : headers) request.set(name, value);
  request.body() = body;
  request.prepare_payload();
  http::write(stream, request);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(1 << 30);
  http::read(stream, buffer, parser);
  Reply reply;
  reply.status = static_cast<int>(parser.get().result_int());
  reply.body = parser.get().body();
  for (const auto& field : parser.get()) {
    reply.headers[std::string(field.name_string())] =
        std::string(field.value());
  }
  beast::error_code ignored;
  stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  return reply;
}

Reply Get(int port, const std::string& target) {
  return Call(port, http::verb::get, target);
}
Reply Post(
    int port, const std::string& target, const std::string& body,
    const std::vector<std::pair<std::string, std::string>>& headers = {}) {
  return Call(port, http::verb::post, target, body, headers);
}

// y = x + 0 * Sleep(micros): a model that takes `micros` per Run.
std::string WriteSlowModel(const std::string& dir, int64_t micros) {
  std::string path = dir + "/slow.json";
  std::ofstream(path) << R"({"format": "weft-graph", "version": 1, "nodes": [
    {"name": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [-1, 2]}},
    {"name": "s", "op": "Sleep", "inputs": ["x"], "attrs": {"micros": )"
                      << micros << R"(}},
    {"name": "zero", "op": "Const", "attrs": {"value": {"dtype": "float32", "shape": [], "values": [0]}}},
    {"name": "z", "op": "Mul", "inputs": ["s", "zero"]},
    {"name": "y", "op": "Add", "inputs": ["x", "z"]}],
   "outputs": ["y"]})";
  return path;
}

// One request to the slow model; its status.
int PostToSlow(int port) {
  return Post(
             port, "/v2/models/slow/infer",
             R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 2], "data": [1, 2]}]})")
      .status;
}

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("weft_serve_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }
  ServerOptions Options() {
    ServerOptions options;
    options.http_port = 0;
    options.grpc_port = -1;
    options.log = [](const std::string&) {};
    return options;
  }
  void Start(ServerOptions options) {
    auto server = Server::Start(std::move(options));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    port_ = server_->http_port();
  }
  std::string dir() const { return dir_.string(); }

  std::filesystem::path dir_;
  std::unique_ptr<Server> server_;
  int port_ = 0;
};

std::string MlpRequest(const std::vector<float>& values, bool binary_out) {
  Json request = {{"inputs",
                   {{{"name", "x"},
                     {"datatype", "FP32"},
                     {"shape", {static_cast<int64_t>(values.size() / 4), 4}},
                     {"data", values}}}}};
  if (binary_out) {
    request["outputs"] = {
        {{"name", "y"}, {"parameters", {{"binary_data", true}}}}};
  }
  return request.dump();
}

// The floats of a binary output that follows the JSON header.
std::vector<float> BinaryFloats(const Reply& reply) {
  const size_t header =
      std::stoul(reply.headers.at("Inference-Header-Content-Length"));
  std::vector<float> values((reply.body.size() - header) / sizeof(float));
  std::memcpy(values.data(), reply.body.data() + header,
              values.size() * sizeof(float));
  return values;
}

TEST_F(ServerTest, AnswersHealthMetadataAndInference) {
  ServerOptions options = Options();
  options.models.push_back({.name = "mlp", .path = test::ServeTestMlpPath()});
  Start(std::move(options));
  EXPECT_EQ(Get(port_, "/v2/health/live").status, 200);
  EXPECT_EQ(Get(port_, "/v2/health/ready").json()["ready"], true);
  const Json server = Get(port_, "/v2").json();
  EXPECT_EQ(server["name"], "weft");
  EXPECT_NE(server["extensions"].dump().find("binary_tensor_data"),
            std::string::npos);
  const Json metadata = Get(port_, "/v2/models/mlp").json();
  EXPECT_EQ(metadata["inputs"][0]["shape"], Json({-1, 4}));
  EXPECT_EQ(metadata["outputs"][0]["datatype"], "FP32");
  EXPECT_EQ(Get(port_, "/v2/models/mlp/versions/1/ready").status, 200);

  const Reply reply = Post(
      port_, "/v2/models/mlp/infer",
      R"({"id": "q", "inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 4], "data": [1, 2, 3, 4]}]})");
  ASSERT_EQ(reply.status, 200) << reply.body;
  const Json response = reply.json();
  EXPECT_EQ(response["id"], "q");
  EXPECT_EQ(response["outputs"][0]["shape"], Json({1, 3}));
  // The same values as a Run of the model in this process.
  auto model = LoadModel(test::ServeTestMlpPath());
  ASSERT_TRUE(model.ok());
  auto session = Session::Create(model->file.graph);
  ASSERT_TRUE(session.ok());
  std::vector<Tensor> expected;
  ASSERT_TRUE(
      (*session)
          ->Run({{model->inputs[0].tensor,
                  Tensor::FromVector<float>(Shape{1, 4}, {1, 2, 3, 4})}},
                {model->outputs[0].tensor}, {}, &expected)
          .ok());
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(response["outputs"][0]["data"][i].get<float>(),
              expected[0].data<float>()[i]);
  }
}

TEST_F(ServerTest, BinaryInputsAndOutputsCrossTheWireAsBytes) {
  ServerOptions options = Options();
  options.models.push_back({.name = "mlp", .path = test::ServeTestMlpPath()});
  Start(std::move(options));
  const std::string header =
      R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [2, 4], "parameters": {"binary_data_size": 32}}], "parameters": {"binary_data_output": true}})";
  std::vector<float> x = {1, -2, 3, -4, 5, -6, 7, -8};
  std::string body = header;
  body.append(reinterpret_cast<const char*>(x.data()), 32);
  const Reply binary = Post(
      port_, "/v2/models/mlp/infer", body,
      {{"Inference-Header-Content-Length", std::to_string(header.size())}});
  ASSERT_EQ(binary.status, 200) << binary.body;
  const std::vector<float> from_binary = BinaryFloats(binary);
  ASSERT_EQ(from_binary.size(), 6u);
  const Json json =
      Post(port_, "/v2/models/mlp/infer", MlpRequest(x, false)).json();
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(json["outputs"][0]["data"][i].get<float>(), from_binary[i]);
  }
}

TEST_F(ServerTest, BadRequestsGetClearErrorsWithTheRightStatus) {
  ServerOptions options = Options();
  options.models.push_back({.name = "mlp", .path = test::ServeTestMlpPath()});
  options.limits.max_body_bytes = 4096;
  options.limits.max_header_bytes = 2048;
  Start(std::move(options));
  Reply r = Post(
      port_, "/v2/models/mlp/infer",
      R"({"inputs": [{"name": "x", "datatype": "INT32", "shape": [1, 4], "data": [1, 2, 3, 4]}]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.json()["error"].get<std::string>().find("input 'x'"),
            std::string::npos);
  EXPECT_EQ(Post(port_, "/v2/models/mlp/infer", "{not json").status, 400);
  EXPECT_EQ(Post(port_, "/v2/models/other/infer", "{}").status, 404);
  EXPECT_EQ(Post(port_, "/v2/models/mlp/versions/7/infer", "{}").status, 404);
  EXPECT_EQ(Get(port_, "/v2/models/mlp/infer").status, 405);
  EXPECT_EQ(Get(port_, "/v2/nowhere").status, 404);
  EXPECT_EQ(Get(port_, "/v2/models/..%2F..%2Fetc/ready").status, 404);
  EXPECT_EQ(Post(port_, "/v2/models/mlp/infer", std::string(5000, ' ')).status,
            413);
  EXPECT_EQ(Call(port_, http::verb::get, "/v2", "",
                 {{"X-Padding", std::string(4000, 'a')}})
                .status,
            431);
  r = Post(port_, "/v2/models/mlp/infer", MlpRequest({1, 2, 3, 4}, false),
           {{"Inference-Header-Content-Length", "-3"}});
  EXPECT_EQ(r.status, 400);
  // The server still answers after all that.
  EXPECT_EQ(Post(port_, "/v2/models/mlp/infer", MlpRequest({1, 2, 3, 4}, false))
                .status,
            200);
}

TEST_F(ServerTest, ATokenGuardsEveryRouteButHealth) {
  ServerOptions options = Options();
  options.models.push_back({.name = "mlp", .path = test::ServeTestMlpPath()});
  options.auth_token = "s3cret";
  Start(std::move(options));
  EXPECT_EQ(Get(port_, "/v2/health/ready").status, 200);
  EXPECT_EQ(Get(port_, "/v2").status, 401);
  EXPECT_EQ(Get(port_, "/metrics").status, 401);
  EXPECT_EQ(Call(port_, http::verb::get, "/v2", "",
                 {{"Authorization", "Bearer wrong!"}})
                .status,
            401);
  EXPECT_EQ(Call(port_, http::verb::get, "/v2", "",
                 {{"Authorization", "Bearer s3cret"}})
                .status,
            200);
}

// Opens a raw connection to the server.
int Connect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(
      ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  return fd;
}

TEST_F(ServerTest, ASlowClientIsCutOffWithoutHoldingUpOthers) {
  ServerOptions options = Options();
  options.models.push_back({.name = "mlp", .path = test::ServeTestMlpPath()});
  options.limits.read_timeout_ms = 300;
  options.network_threads = 1;  // One thread: a held thread would show.
  Start(std::move(options));
  const int slow = Connect(port_);
  const std::string request = "POST /v2/models/mlp/infer HTTP/1.1\r\n";
  std::atomic<bool> closed{false};
  std::thread dribble([&] {
    for (char c : request) {
      if (::send(slow, &c, 1, MSG_NOSIGNAL) != 1) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    closed = true;
  });
  // Meanwhile another client is answered at once, many times over.
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(Get(port_, "/v2/health/live").status, 200);
  }
  // The slow connection is closed by the server after its read timeout.
  timeval wait{2, 0};
  ::setsockopt(slow, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  char byte;
  const auto start = std::chrono::steady_clock::now();
  const ssize_t got = ::recv(slow, &byte, 1, 0);
  EXPECT_LE(got, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  ::close(slow);
  dribble.join();
}

TEST_F(ServerTest, BatchedRequestsGetTheBitsTheyGetAlone) {
  // Up to 8 rows per Run, 50 ms for a batch to fill: concurrent requests
  // share Runs, and the same requests sent one at a time run alone. (With
  // 5 ms, under ThreadSanitizer on a 2-vCPU Zen 5, the 16 clients' requests
  // arrived far enough apart that each ran alone.)
  ServerOptions options = Options();
  BatchingOptions batching;
  batching.max_batch_size = 8;
  batching.max_queue_delay_us = 50'000;
  options.models.push_back({.name = "batched",
                            .path = test::ServeTestMlpPath(),
                            .batching = batching});
  Start(std::move(options));
  constexpr int kClients = 16;
  std::vector<std::vector<float>> inputs(kClients), batched(kClients),
      alone(kClients);
  for (int c = 0; c < kClients; ++c) {
    const int rows = 1 + c % 3;
    for (int i = 0; i < rows * 4; ++i) {
      inputs[c].push_back(static_cast<float>((c * 37 + i * 11) % 23) / 7.0f -
                          1.5f);
    }
  }
  // The clients send together, once every thread has started.
  std::latch all_started(kClients);
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      const std::string request = MlpRequest(inputs[c], true);
      all_started.arrive_and_wait();
      const Reply reply = Post(port_, "/v2/models/batched/infer", request);
      ASSERT_EQ(reply.status, 200) << reply.body;
      batched[c] = BinaryFloats(reply);
    });
  }
  for (std::thread& t : clients) t.join();
  for (int c = 0; c < kClients; ++c) {
    const Reply reply =
        Post(port_, "/v2/models/batched/infer", MlpRequest(inputs[c], true));
    ASSERT_EQ(reply.status, 200);
    alone[c] = BinaryFloats(reply);
    ASSERT_EQ(batched[c].size(), alone[c].size());
    EXPECT_EQ(std::memcmp(batched[c].data(), alone[c].data(),
                          alone[c].size() * sizeof(float)),
              0)
        << "client " << c;
  }
  // Batches did form: fewer Runs than the 2 x 16 requests.
  const std::string metrics = Get(port_, "/metrics").body;
  const std::string key = "weft_inference_batch_size_count{model=\"batched\"} ";
  const size_t at = metrics.find(key);
  ASSERT_NE(at, std::string::npos);
  EXPECT_LT(std::stoi(metrics.substr(at + key.size())), 2 * kClients);
}

// DynamicQuantizeLinear (quantize_dynamic's transformers) quantizes on the
// range of its whole input: batched, a request's outputs depend on its
// batch companions, and the metadata says so, naming the node. Unbatched,
// or without such a node, the model is batch invariant.
TEST_F(ServerTest, AModelThatQuantizesOverTheBatchSaysItIsNotBatchInvariant) {
  const std::string quantizing = (dir_ / "quantizing.json").string();
  std::ofstream(quantizing) << R"({"format": "weft-graph", "version": 1,
    "nodes": [
      {"name": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [-1, 4]}},
      {"name": "q", "op": "DynamicQuantizeLinear", "inputs": ["x"]},
      {"name": "y", "op": "DequantizeLinear", "inputs": ["q:0", "q:1", "q:2"]}],
    "outputs": ["y"]})";
  BatchingOptions batching;
  batching.max_batch_size = 4;
  ServerOptions options = Options();
  options.models.push_back(
      {.name = "batched", .path = quantizing, .batching = batching});
  options.models.push_back({.name = "alone", .path = quantizing});
  options.models.push_back(
      {.name = "mlp", .path = test::ServeTestMlpPath(), .batching = batching});
  Start(std::move(options));
  const Json batched = Get(port_, "/v2/models/batched").json()["parameters"];
  EXPECT_EQ(batched["batch_invariant"], false);
  EXPECT_NE(batched["batch_variance"].get<std::string>().find(
                "DynamicQuantizeLinear 'q'"),
            std::string::npos);
  const Json alone = Get(port_, "/v2/models/alone").json()["parameters"];
  EXPECT_EQ(alone["batch_invariant"], true);
  EXPECT_FALSE(alone.contains("batch_variance"));
  EXPECT_EQ(
      Get(port_, "/v2/models/mlp").json()["parameters"]["batch_invariant"],
      true);
}

// A batching model runs once at each batch size it may be sent before it
// reports ready, where its inputs fix every dimension but the first; a
// model with another open dimension is not warmed at shapes it may never
// see (each would take one of the session's compiled shapes).
TEST_F(ServerTest, ABatchingModelIsWarmedAtEveryBatchSizeBeforeItIsReady) {
  const std::string open_path = dir() + "/open.json";
  std::ofstream(open_path)
      << R"({"format": "weft-graph", "version": 1, "nodes": [
    {"name": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [-1, -1]}},
    {"name": "y", "op": "Relu", "inputs": ["x"]}],
   "outputs": ["y"]})";
  ServerOptions options = Options();
  std::mutex mu;
  std::vector<std::string> lines;
  options.log = [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(mu);
    lines.push_back(line);
  };
  BatchingOptions batching;
  batching.max_batch_size = 4;
  batching.preferred_batch_size = {4};
  options.models.push_back(
      {.name = "mlp", .path = test::ServeTestMlpPath(), .batching = batching});
  options.models.push_back(
      {.name = "open", .path = open_path, .batching = batching});
  Start(std::move(options));
  std::lock_guard<std::mutex> lock(mu);
  const auto has = [&](const std::string& text) {
    return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) {
      return l.find(text) != std::string::npos;
    });
  };
  EXPECT_TRUE(has("model 'mlp' warmed at batches of 4, 2, 3 rows too"));
  EXPECT_FALSE(has("model 'open' warmed"));
}

TEST(WarmedBatchSizesTest, PreferredSizesFirstThenFromOneUpToEight) {
  BatchingOptions batching;
  EXPECT_TRUE(WarmedBatchSizes(batching).empty());  // No batching.
  batching.max_batch_size = 8;
  batching.preferred_batch_size = {4, 8, 16};  // 16 is past the most.
  EXPECT_EQ(WarmedBatchSizes(batching),
            (std::vector<int>{4, 8, 1, 2, 3, 5, 6, 7}));
  batching.max_batch_size = 64;
  batching.preferred_batch_size = {32};
  EXPECT_EQ(WarmedBatchSizes(batching),
            (std::vector<int>{32, 1, 2, 3, 4, 5, 6, 7}));
}

TEST_F(ServerTest, ARequestWhoseTimeoutPassesWhileQueuedIsAnswered504) {
  ServerOptions options = Options();
  options.session.use_per_session_threads = true;
  options.session.inter_op_parallelism_threads = 1;  // One runner.
  options.models.push_back(
      {.name = "slow", .path = WriteSlowModel(dir(), 300'000)});
  Start(std::move(options));
  std::thread first([&] { EXPECT_EQ(PostToSlow(port_), 200); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const Reply late = Post(
      port_, "/v2/models/slow/infer",
      R"({"parameters": {"timeout": 50000}, "inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 2], "data": [1, 2]}]})");
  first.join();
  EXPECT_EQ(late.status, 504);
  EXPECT_NE(late.json()["error"].get<std::string>().find("did not run"),
            std::string::npos);
}

// A model worth ~50 ms for 8,000 rows and nothing for one: y = x W.
std::string WriteMatMulModel(const std::string& dir) {
  Graph g;
  const std::string x =
      g.Placeholder("x", DataType::kFloat32, PartialShape({-1, 512}));
  const std::string w = g.RandomUniform("w", DataType::kFloat32, {512, 512}, 1);
  g.MatMul("y", x, w);
  std::string path = dir + "/matmul.json";
  std::ofstream(path) << SerializeGraph({std::move(g), {"y"}});
  return path;
}

std::string RowsRequest(int64_t rows) {
  const std::string header =
      R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [)" +
      std::to_string(rows) + R"(, 512], "parameters": {"binary_data_size": )" +
      std::to_string(rows * 512 * 4) +
      R"(}}], "parameters": {"binary_data_output": true}})";
  return header + std::string(rows * 512 * 4, '\0');
}

TEST_F(ServerTest, PreserveOrderingAnswersInTheOrderRequestsArrived) {
  ServerOptions options = Options();
  options.session.use_per_session_threads = true;
  options.session.inter_op_parallelism_threads = 2;  // Two runners.
  options.session.intra_op_parallelism_threads = 1;
  options.batching.preserve_ordering = true;
  options.models.push_back({.name = "mm", .path = WriteMatMulModel(dir())});
  // The access log is written as each answer starts to leave: its order is
  // the order of the answers.
  std::mutex log_mutex;
  std::vector<std::string> answers;
  options.access_log = AccessLog::kText;
  options.log = [&](const std::string& line) {
    std::lock_guard lock(log_mutex);
    if (line.find("/infer") != std::string::npos) answers.push_back(line);
  };
  Start(std::move(options));
  auto post_rows = [&](int64_t rows) {
    const std::string body = RowsRequest(rows);
    const size_t header = body.size() - static_cast<size_t>(rows * 512 * 4);
    return Post(port_, "/v2/models/mm/infer", body,
                {{"Inference-Header-Content-Length", std::to_string(header)}})
        .status;
  };
  std::thread big([&] { EXPECT_EQ(post_rows(4000), 200); });
  // The small request arrives once the big one is in flight.
  const std::string key = "weft_inference_in_flight{model=\"mm\"} 1";
  for (int i = 0;
       i < 5000 && Get(port_, "/metrics").body.find(key) == std::string::npos;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(post_rows(1), 200);
  big.join();
  // The small one ran at once on the second runner, but its answer waited
  // for the big one's: the big answer (8 MB) left first.
  std::lock_guard lock(log_mutex);
  ASSERT_EQ(answers.size(), 2u);
  const auto bytes = [](const std::string& line) {
    return std::stoll(line.substr(line.rfind(' ') + 1));
  };
  EXPECT_GT(bytes(answers[0]), 4000 * 512 * 4);
  EXPECT_LT(bytes(answers[1]), 10'000);
}

TEST_F(ServerTest, AFullQueueRefusesAtOnceWith503) {
  ServerOptions options = Options();
  options.session.use_per_session_threads = true;
  options.session.inter_op_parallelism_threads = 1;
  options.batching.max_queue_size = 1;
  options.models.push_back(
      {.name = "slow", .path = WriteSlowModel(dir(), 300'000)});
  Start(std::move(options));
  std::atomic<int> ok{0}, refused{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < 4; ++i) {
    clients.emplace_back([&] {
      const int status = PostToSlow(port_);
      (status == 200 ? ok : refused) += status == 200 || status == 503;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (std::thread& t : clients) t.join();
  EXPECT_GE(ok, 1);
  EXPECT_GE(refused, 1);
  EXPECT_EQ(ok + refused, 4);
}

TEST_F(ServerTest, ShutdownFinishesEveryAcceptedRequest) {
  ServerOptions options = Options();
  options.models.push_back(
      {.name = "slow", .path = WriteSlowModel(dir(), 100'000)});
  Start(std::move(options));
  std::atomic<int> answered{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < 6; ++i) {
    clients.emplace_back([&] {
      EXPECT_EQ(PostToSlow(port_), 200);
      ++answered;
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  server_->Shutdown(std::chrono::seconds(10));
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(answered, 6);
}

TEST_F(ServerTest, TheRepositoryLoadsAndUnloadsWhileRequestsRun) {
  const std::filesystem::path repo = dir_ / "repo";
  std::filesystem::create_directories(repo / "mlp" / "1");
  std::filesystem::create_directories(repo / "mlp" / "3");
  std::filesystem::copy_file(test::ServeTestMlpPath(),
                             repo / "mlp" / "1" / "model.onnx");
  std::filesystem::copy_file(test::ServeTestMlpPath(),
                             repo / "mlp" / "3" / "model.onnx");
  std::ofstream(repo / "mlp" / "config.json")
      << R"({"max_batch_size": 4, "dynamic_batching": {"max_queue_delay_microseconds": 1000}, "parameters": {"intra_op_parallelism_threads": 1}})";
  std::filesystem::create_directories(repo / "slow" / "1");
  std::filesystem::copy_file(WriteSlowModel(dir(), 200'000),
                             repo / "slow" / "1" / "model.json");
  ServerOptions options = Options();
  options.model_repository = repo.string();
  Start(std::move(options));
  EXPECT_EQ(Get(port_, "/v2/models/mlp").json()["versions"], Json({"3"}));
  EXPECT_EQ(Get(port_, "/v2/models/mlp").json()["parameters"]["max_batch_size"],
            4);
  // A request in flight on a model being unloaded still completes.
  std::thread in_flight([&] { EXPECT_EQ(PostToSlow(port_), 200); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(Post(port_, "/v2/repository/models/slow/unload", "").status, 200);
  in_flight.join();
  EXPECT_EQ(Get(port_, "/v2/models/slow").status, 404);
  Json index = Post(port_, "/v2/repository/index", "").json();
  ASSERT_EQ(index.size(), 2u);
  EXPECT_EQ(index[1]["name"], "slow");
  EXPECT_EQ(index[1]["state"], "UNAVAILABLE");
  EXPECT_EQ(Post(port_, "/v2/repository/models/slow/load", "").status, 200);
  EXPECT_EQ(Get(port_, "/v2/models/slow/ready").status, 200);
  // A name that would leave the repository is not a model.
  EXPECT_EQ(Post(port_, "/v2/repository/models/../load", "").status, 400);
  EXPECT_EQ(Post(port_, "/v2/repository/models/nothing/load", "").status, 404);
}

TEST_F(ServerTest, StartFailsNamingWhatIsWrong) {
  ServerOptions options = Options();
  options.models.push_back({.path = dir() + "/missing.onnx"});
  auto server = Server::Start(options);
  ASSERT_FALSE(server.ok());
  EXPECT_NE(server.status().message().find("missing.onnx"), std::string::npos);
  options.models = {{.name = "a/b", .path = test::ServeTestMlpPath()}};
  server = Server::Start(options);
  ASSERT_FALSE(server.ok());
  EXPECT_NE(server.status().message().find("'a/b'"), std::string::npos);
  options.models = {{.path = test::ServeTestMlpPath()}};
  options.host = "not-an-address";
  server = Server::Start(options);
  ASSERT_FALSE(server.ok());
  EXPECT_NE(server.status().message().find("not-an-address"),
            std::string::npos);
}

TEST(ServingSpinWindowTest, SpansTheRoundTripUnlessSomeoneChoseAWindow) {
  unsetenv("WEFT_SPIN_US");
  unsetenv("KMP_BLOCKTIME");
  SessionOptions plain;
  ApplyServingSpinWindow(&plain);
  EXPECT_EQ(plain.inter_op_spin_us, kServingSpinUs);
  EXPECT_EQ(plain.intra_op_spin_us, kServingSpinUs);
  SessionOptions chosen;  // --set intra_op_spin_us=7, or config.json.
  chosen.intra_op_spin_us = 7;
  ApplyServingSpinWindow(&chosen);
  EXPECT_EQ(chosen.intra_op_spin_us, 7);
  EXPECT_EQ(chosen.inter_op_spin_us, kServingSpinUs);
  setenv("KMP_BLOCKTIME", "0", 1);  // The environment's window stands.
  SessionOptions from_environment;
  ApplyServingSpinWindow(&from_environment);
  unsetenv("KMP_BLOCKTIME");
  EXPECT_EQ(from_environment.inter_op_spin_us, -1);
  EXPECT_EQ(from_environment.intra_op_spin_us, -1);
}

}  // namespace
}  // namespace weft::serve
