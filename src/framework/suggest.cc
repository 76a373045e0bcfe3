#include "weft/suggest.h"

#include <algorithm>
#include <cctype>
#include <utility>

namespace weft {
namespace {

char Lower(char c) {
  return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}

// Edit distance in half steps: a case change costs 1, any other edit 2.
int HalfDistance(std::string_view a, std::string_view b) {
  std::vector<int> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = 2 * static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    int diagonal = row[0];
    row[0] = 2 * static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      const int substitute = a[i - 1] == b[j - 1]
                                 ? 0
                                 : (Lower(a[i - 1]) == Lower(b[j - 1]) ? 1 : 2);
      const int next =
          std::min({row[j] + 2, row[j - 1] + 2, diagonal + substitute});
      diagonal = row[j];
      row[j] = next;
    }
  }
  return row[b.size()];
}

}  // namespace

std::vector<std::string> ClosestNames(
    std::string_view name, const std::vector<std::string>& candidates) {
  const auto same_but_case = [&](const std::string& candidate) {
    return candidate.size() == name.size() &&
           std::equal(name.begin(), name.end(), candidate.begin(),
                      [](char x, char y) { return Lower(x) == Lower(y); });
  };
  for (const std::string& candidate : candidates) {
    if (candidate != name && same_but_case(candidate)) return {candidate};
  }
  const int limit = 2 * std::max<int>(1, static_cast<int>(name.size()) / 3);
  std::vector<std::pair<int, std::string>> scored;
  for (const std::string& candidate : candidates) {
    const int d = HalfDistance(name, candidate);
    if (d > 0 && d <= limit) scored.emplace_back(d, candidate);
  }
  std::sort(scored.begin(), scored.end());
  if (scored.size() > 3) scored.resize(3);
  std::vector<std::string> out;
  for (auto& [d, candidate] : scored) out.push_back(std::move(candidate));
  return out;
}

std::string DidYouMean(std::string_view name,
                       const std::vector<std::string>& candidates) {
  const std::vector<std::string> close = ClosestNames(name, candidates);
  if (close.empty()) return "";
  std::string out = " — did you mean ";
  for (size_t i = 0; i < close.size(); ++i) {
    if (i > 0) out += i + 1 == close.size() ? " or " : ", ";
    out += "'" + close[i] + "'";
  }
  return out + "?";
}

std::string SuggestOp(std::string_view op) {
  std::vector<std::string> names;
  for (const OpDef* def : RegisteredOps()) names.push_back(def->name);
  return DidYouMean(op, names);
}

std::string SuggestAttr(std::string_view attr, const OpDef& op) {
  std::vector<std::string> names;
  for (const AttrDef& a : op.attrs) names.push_back(a.name);
  std::string out = DidYouMean(attr, names);
  if (names.empty()) return out + "; " + op.name + " has no attributes";
  out += "; " + op.name + "'s attributes: ";
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
  return out;
}

}  // namespace weft
