// File: controller/common/bounded_text.cc

#include "controller/common/bounded_text.h"

#include "absl/strings/str_cat.h"

namespace slurmop {

std::string Utf8Prefix(std::string_view text, size_t limit) {
  if (text.size() <= limit) return std::string(text);
  size_t end = limit;  // text[end] starts what is left out: back off a continuation byte
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return std::string(text.substr(0, end));
}

std::string CutText(std::string_view text, size_t limit) {
  if (text.size() <= limit) return std::string(text);
  // The marker's length depends on the count it names: 40 bytes hold it for any size_t.
  constexpr size_t kMarkerRoom = 40;
  const size_t room = limit > kMarkerRoom ? limit - kMarkerRoom : 0;
  std::string out = Utf8Prefix(text, room);
  const std::string marker = absl::StrCat(" ... (", text.size() - out.size(), " bytes cut)");
  if (out.size() + marker.size() <= limit) out += marker;
  return out;
}

}  // namespace slurmop
