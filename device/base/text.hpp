// Splitting the lists that settings, tunables and business cards hold
// ("tcp,ofi", "10.0.0.1,127.0.0.1", IRIS_NETMOD_PATH's folders).
#pragma once

#include <string_view>
#include <vector>

namespace iris::device {

// The items of `text` between `separator`s: "a,b" gives {a, b}, "a," gives
// {a, ""} (so that a parser can refuse the empty item), and "" gives none.
// The items view `text`.
inline std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> items;
  if (text.empty()) return items;
  for (;;) {
    const std::size_t at = text.find(separator);
    items.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return items;
    text.remove_prefix(at + 1);
  }
}

}  // namespace iris::device
