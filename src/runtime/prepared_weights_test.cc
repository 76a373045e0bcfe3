#include "weft/prepared_weights.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

namespace weft {
namespace {

// A prepared form that says how it was made.
struct Form {
  int made_as = 0;
  int64_t bytes() const { return 100; }
};

Tensor Constant(float value) {
  Tensor t = *Tensor::Create(DataType::kFloat32, Shape{2, 3});
  for (int64_t i = 0; i < 6; ++i) t.data<float>()[i] = value;
  return t;
}

TEST(PreparedWeightsTest, TheSameConstantAndRecipeAreMadeOnce) {
  PreparedWeights cache;
  const Tensor w = Constant(1);
  int makes = 0;
  const auto make = [&] {
    ++makes;
    return std::make_shared<const Form>(Form{makes});
  };
  auto first = cache.GetOrMake<Form>(w, "packed/4", make);
  auto again = cache.GetOrMake<Form>(w, "packed/4", make);
  EXPECT_EQ(first.get(), again.get());
  EXPECT_EQ(makes, 1);
  // Another handle to the same buffer, dtype and shape is the same constant.
  const Tensor same = w.WithShape(w.shape());
  EXPECT_EQ(cache.GetOrMake<Form>(same, "packed/4", make).get(), first.get());
  EXPECT_EQ(cache.size(), 1);
  EXPECT_EQ(cache.bytes(), 100);
  EXPECT_EQ(cache.reuses(), 2);
}

TEST(PreparedWeightsTest, AnotherRecipeShapeOrConstantIsMadeApart) {
  PreparedWeights cache;
  const Tensor w = Constant(1);
  const Tensor equal = Constant(1);  // Equal values, another constant.
  const Tensor view = w.WithShape(Shape{3, 2});
  int makes = 0;
  const auto make = [&] {
    ++makes;
    return std::make_shared<const Form>(Form{makes});
  };
  const int a = cache.GetOrMake<Form>(w, "packed/4", make)->made_as;
  const int b = cache.GetOrMake<Form>(w, "packed/8", make)->made_as;
  const int c = cache.GetOrMake<Form>(equal, "packed/4", make)->made_as;
  const int d = cache.GetOrMake<Form>(view, "packed/4", make)->made_as;
  EXPECT_EQ(std::vector<int>({a, b, c, d}), std::vector<int>({1, 2, 3, 4}));
  EXPECT_EQ(cache.size(), 4);
  EXPECT_EQ(cache.reuses(), 0);
}

TEST(PreparedWeightsTest, AFreedConstantsAddressIsNotTakenWhileItsFormStands) {
  PreparedWeights cache;
  const void* first_address = nullptr;
  {
    const Tensor w = Constant(1);
    first_address = w.raw_data();
    cache.GetOrMake<Form>(w, "packed",
                          [] { return std::make_shared<const Form>(Form{1}); });
  }
  // The cache holds the first buffer, so no constant made now can sit at
  // its address and be taken for it.
  for (int i = 0; i < 16; ++i) {
    const Tensor other = Constant(2);
    EXPECT_NE(other.raw_data(), first_address);
    EXPECT_EQ(cache
                  .GetOrMake<Form>(
                      other, "packed",
                      [] { return std::make_shared<const Form>(Form{2}); })
                  ->made_as,
              2);
  }
}

TEST(PreparedWeightsTest, AFailedMakeKeepsNothing) {
  PreparedWeights cache;
  const Tensor w = Constant(1);
  EXPECT_THROW(cache.GetOrMake<Form>(w, "packed",
                                     []() -> std::shared_ptr<const Form> {
                                       throw std::runtime_error("no kernel");
                                     }),
               std::runtime_error);
  EXPECT_EQ(cache.GetOrMake<Form>(w, "packed", [] { return nullptr; }),
            nullptr);
  EXPECT_EQ(cache.size(), 0);
  EXPECT_EQ(
      cache
          .GetOrMake<Form>(w, "packed",
                           [] { return std::make_shared<const Form>(Form{3}); })
          ->made_as,
      3);
}

TEST(PreparedWeightsTest, ConcurrentCompilesMakeOneForm) {
  PreparedWeights cache;
  const Tensor w = Constant(1);
  std::atomic<int> makes{0};
  std::vector<const Form*> got(8, nullptr);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t) {
    threads.emplace_back([&, t] {
      got[t] = cache
                   .GetOrMake<Form>(w, "packed",
                                    [&] {
                                      ++makes;
                                      return std::make_shared<const Form>(
                                          Form{makes.load()});
                                    })
                   .get();
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(makes.load(), 1);
  for (const Form* form : got) EXPECT_EQ(form, got[0]);
}

// Kernels of a session's compiles (one per batch size) that prepare the same
// constant at their first Runs: the first makes the form, the others find
// it; none is made before a Run asks, and a tensor fed in the constant's
// place is not the constant.
TEST(PreparedOnFirstRunTest, KernelsOfOneSessionShareTheFormMadeAtTheFirstRun) {
  PreparedWeights cache;
  const Tensor w = Constant(1);
  PreparedOnFirstRun<Form> first_compile, second_compile;
  first_compile.Set(&cache, w, "packed");
  second_compile.Set(&cache, w, "packed");
  int makes = 0;
  const auto make = [&](const Tensor& source) {
    EXPECT_EQ(source.raw_data(), w.raw_data());
    ++makes;
    return std::make_shared<const Form>(Form{makes});
  };
  EXPECT_EQ(first_compile.IfMade(), nullptr);
  EXPECT_EQ(cache.size(), 0);
  EXPECT_TRUE(first_compile.Is(w));
  EXPECT_FALSE(first_compile.Is(Constant(1)));  // Equal values, fed.
  const Form* made = first_compile.Get(make);
  ASSERT_NE(made, nullptr);
  EXPECT_EQ(first_compile.IfMade(), made);
  EXPECT_EQ(first_compile.Get(make), made);
  EXPECT_EQ(second_compile.IfMade(), nullptr);
  EXPECT_EQ(second_compile.Get(make), made);
  EXPECT_EQ(makes, 1);
  EXPECT_EQ(cache.reuses(), 1);
}

TEST(PreparedOnFirstRunTest, WithoutACacheEachMakesItsOwnAndUnsetMakesNone) {
  const Tensor w = Constant(1);
  PreparedOnFirstRun<Form> a, b, unset;
  a.Set(nullptr, w, "packed");
  b.Set(nullptr, w, "packed");
  int makes = 0;
  const auto make = [&](const Tensor&) {
    return std::make_shared<const Form>(Form{++makes});
  };
  EXPECT_EQ(a.Get(make)->made_as, 1);
  EXPECT_EQ(b.Get(make)->made_as, 2);
  EXPECT_EQ(a.Get(make)->made_as, 1);
  EXPECT_EQ(unset.source(), nullptr);
  EXPECT_FALSE(unset.Is(w));
  EXPECT_EQ(unset.Get(make), nullptr);
  EXPECT_EQ(makes, 2);
}

TEST(PreparedOnFirstRunTest, ConcurrentFirstRunsMakeOneForm) {
  PreparedWeights cache;
  const Tensor w = Constant(1);
  PreparedOnFirstRun<Form> kernel;
  kernel.Set(&cache, w, "packed");
  std::atomic<int> makes{0};
  std::vector<const Form*> got(8, nullptr);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t) {
    threads.emplace_back([&, t] {
      got[t] = kernel.Get([&](const Tensor&) {
        return std::make_shared<const Form>(Form{++makes});
      });
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(makes.load(), 1);
  for (const Form* form : got) EXPECT_EQ(form, got[0]);
}

}  // namespace
}  // namespace weft
