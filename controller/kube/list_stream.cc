// File: controller/kube/list_stream.cc
//
// See list_stream.h. A SAX handler that builds the JSON it reads, except that
// each element of the top-level `items` array is handed over and dropped as
// it closes.

#include "controller/kube/list_stream.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace slurmop::kube {
namespace {

using Json = nlohmann::json;

class ListReader {
 public:
  ListReader(int max_depth, const ItemCallback& on_item)
      : max_depth_(max_depth), on_item_(on_item) {}

  Json list;                 // the answer without its items
  absl::Status item_status;  // on_item's refusal, if any
  const std::string& error() const { return error_; }

  // The SAX interface (nlohmann::json::sax_parse).
  bool null() { return Scalar(Json()); }
  bool boolean(bool b) { return Scalar(Json(b)); }
  bool number_integer(Json::number_integer_t v) { return Scalar(Json(v)); }
  bool number_unsigned(Json::number_unsigned_t v) { return Scalar(Json(v)); }
  bool number_float(Json::number_float_t v, const std::string& /*text*/) { return Scalar(Json(v)); }
  bool string(std::string& s) { return Scalar(Json(std::move(s))); }
  bool binary(Json::binary_t& /*bytes*/) { return Fail("binary data"); }
  bool start_object(std::size_t /*elements*/) { return Open(Json::object()); }
  bool start_array(std::size_t /*elements*/) { return Open(Json::array()); }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }
  bool key(std::string& k) {
    Json::object_t& object = stack_.back()->get_ref<Json::object_t&>();
    next_is_items_ = stack_.size() == 1 && k == "items";
    if (next_is_items_ && seen_items_) return Fail("the list has two \"items\" keys");
    slot_ = &object[k];
    *slot_ = Json();
    return true;
  }
  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& e) {
    return Fail(e.what());
  }

 private:
  bool Fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
    return false;
  }
  // True while the innermost container is the top-level `items` array.
  bool AtItems() const { return items_ != nullptr && stack_.size() == 2; }
  // Puts `v` where the next value of the innermost container goes.
  Json* Put(Json v) {
    Json& parent = *stack_.back();
    if (parent.is_array()) {
      Json::array_t& array = parent.get_ref<Json::array_t&>();
      array.push_back(std::move(v));
      return &array.back();
    }
    *slot_ = std::move(v);
    return slot_;
  }
  bool Scalar(Json v) {
    if (stack_.empty()) return Fail("the answer is not a JSON object");
    if (stack_.size() == 1 && next_is_items_) return Fail("\"items\" is not an array");
    if (AtItems()) return Item(std::move(v));
    Put(std::move(v));
    return true;
  }
  bool Open(Json fresh) {
    if (static_cast<int>(stack_.size()) >= max_depth_) {
      return Fail(absl::StrCat("nested deeper than ", max_depth_, " levels"));
    }
    if (stack_.empty()) {
      if (!fresh.is_object()) return Fail("the answer is not a JSON object");
      list = std::move(fresh);
      stack_.push_back(&list);
      return true;
    }
    const bool items = stack_.size() == 1 && next_is_items_;
    if (items && !fresh.is_array()) return Fail("\"items\" is not an array");
    Json* value = Put(std::move(fresh));
    stack_.push_back(value);
    if (items) {
      items_ = value;
      seen_items_ = true;
    }
    return true;
  }
  bool Close() {
    Json* closed = stack_.back();
    stack_.pop_back();
    if (closed == items_) {
      items_ = nullptr;
      list.erase("items");
      return true;
    }
    if (AtItems()) {  // an item just closed: hand it over, keep nothing of it
      Json::array_t& array = items_->get_ref<Json::array_t&>();
      Json item = std::move(array.back());
      array.pop_back();
      return Item(std::move(item));
    }
    return true;
  }
  bool Item(Json item) {
    item_status = on_item_(std::move(item));
    return item_status.ok() || Fail(std::string(item_status.message()));
  }

  const int max_depth_;
  const ItemCallback& on_item_;
  std::vector<Json*> stack_;  // the containers being built
  Json* slot_ = nullptr;      // where the value of the last key goes
  Json* items_ = nullptr;     // the top-level `items` array, while open
  bool next_is_items_ = false;
  bool seen_items_ = false;
  std::string error_;
};

}  // namespace

absl::StatusOr<Json> ReadList(std::istream& in, int max_depth, const ItemCallback& on_item) {
  ListReader reader(max_depth, on_item);
  bool ok = false;
  try {
    ok = Json::sax_parse(in, &reader);
  } catch (const std::exception& e) {  // sax_parse reports through parse_error; belt and braces
    return absl::InternalError(absl::StrCat("list response: ", e.what()));
  }
  if (!reader.item_status.ok()) return reader.item_status;
  if (!ok) {
    return absl::InternalError(
        absl::StrCat("list response is not JSON (or nests deeper than ", max_depth,
                     " levels): ", reader.error().empty() ? "incomplete" : reader.error()));
  }
  return std::move(reader.list);
}

BodySourceStream::int_type BodySourceStream::underflow() {
  if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
  if (!status_.ok()) return traits_type::eof();
  absl::StatusOr<size_t> n = source_.Read(buffer_.data(), buffer_.size());
  if (!n.ok()) {
    status_ = n.status();
    return traits_type::eof();
  }
  if (*n == 0) return traits_type::eof();
  setg(buffer_.data(), buffer_.data(), buffer_.data() + *n);
  return traits_type::to_int_type(*gptr());
}

}  // namespace slurmop::kube
