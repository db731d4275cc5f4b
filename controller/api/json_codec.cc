// File: controller/api/json_codec.cc
//
// Walks messages through reflection, so it works for every generated message (and dynamic ones).
// Well-known types are recognised by full name and handled through reflection as well, never by
// casting to their generated classes.

#include "controller/api/json_codec.h"

#include <google/protobuf/descriptor.pb.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <set>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "controller/common/bounded_text.h"

namespace slurmop::api {
namespace {

using ::google::protobuf::Descriptor;
using ::google::protobuf::EnumValueDescriptor;
using ::google::protobuf::FieldDescriptor;
using ::google::protobuf::Message;
using ::google::protobuf::OneofDescriptor;
using ::google::protobuf::Reflection;
using json = ::nlohmann::json;

// google.protobuf.Timestamp's valid range: 0001-01-01T00:00:00Z .. 9999-12-31T23:59:59Z.
constexpr int64_t kMinTimestampSeconds = -62135596800;
constexpr int64_t kMaxTimestampSeconds = 253402300799;
// Doubles hold every integer up to 2^53 exactly; such Struct numbers are written as integers.
constexpr double kMaxExactDouble = 9007199254740992.0;

enum class WellKnown { kNone, kStruct, kValue, kListValue, kTimestamp, kDuration, kWrapper, kAny };

WellKnown WellKnownOf(const Descriptor* descriptor) {
  const std::string& name = descriptor->full_name();
  if (descriptor->file()->package() != "google.protobuf") return WellKnown::kNone;
  if (name == "google.protobuf.Struct") return WellKnown::kStruct;
  if (name == "google.protobuf.Value") return WellKnown::kValue;
  if (name == "google.protobuf.ListValue") return WellKnown::kListValue;
  if (name == "google.protobuf.Timestamp") return WellKnown::kTimestamp;
  if (name == "google.protobuf.Duration") return WellKnown::kDuration;
  if (name == "google.protobuf.Any") return WellKnown::kAny;
  static const std::set<std::string> kWrappers = {
      "google.protobuf.DoubleValue", "google.protobuf.FloatValue",  "google.protobuf.Int64Value",
      "google.protobuf.UInt64Value", "google.protobuf.Int32Value",  "google.protobuf.UInt32Value",
      "google.protobuf.BoolValue",   "google.protobuf.StringValue", "google.protobuf.BytesValue"};
  if (kWrappers.contains(name)) return WellKnown::kWrapper;
  return WellKnown::kNone;
}

bool IsValueField(const FieldDescriptor* field) {
  return field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE &&
         WellKnownOf(field->message_type()) == WellKnown::kValue;
}

// ---------------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------------

std::string Child(const std::string& path, absl::string_view name) {
  return path.empty() ? std::string(name) : absl::StrCat(path, ".", name);
}

std::string Shown(const json& value) {
  if (value.is_object()) return "an object";
  if (value.is_array()) return "an array";
  std::string text = value.dump();
  if (text.size() > 64) text = absl::StrCat(Utf8Prefix(text, 61), "...");
  return text;
}

absl::Status Invalid(const std::string& path, absl::string_view what) {
  return absl::InvalidArgumentError(path.empty() ? std::string(what)
                                                 : absl::StrCat(path, ": ", what));
}

absl::Status TypeError(const std::string& path, absl::string_view expected, const json& got) {
  return Invalid(path, absl::StrCat("expected ", expected, ", got ", Shown(got)));
}

// Reads an integer in [min, max] from a JSON number or a numeric string. Floats are accepted when
// they hold an integral value (some clients write 3.0).
absl::StatusOr<int64_t> ParseSigned(const json& value, const std::string& path, int64_t min,
                                    int64_t max, absl::string_view type_name) {
  int64_t result = 0;
  if (value.is_number_integer() && !value.is_number_unsigned()) {
    result = value.get<int64_t>();
  } else if (value.is_number_unsigned()) {
    uint64_t unsigned_value = value.get<uint64_t>();
    if (unsigned_value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Invalid(path, absl::StrCat(value.dump(), " is out of range for ", type_name));
    }
    result = static_cast<int64_t>(unsigned_value);
  } else if (value.is_number_float()) {
    const double d = value.get<double>();
    // 2^63 is the first double above the int64 range.
    if (!std::isfinite(d) || std::trunc(d) != d || d < -9223372036854775808.0 ||
        d >= 9223372036854775808.0) {
      return TypeError(path, "an integer", value);
    }
    result = static_cast<int64_t>(d);
  } else if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    if (text.empty() || absl::ascii_isspace(text.front()) || absl::ascii_isspace(text.back()) ||
        !absl::SimpleAtoi(text, &result)) {
      return TypeError(path, "an integer", value);
    }
  } else {
    return TypeError(path, "an integer", value);
  }
  if (result < min || result > max) {
    return Invalid(path, absl::StrCat(value.dump(), " is out of range for ", type_name));
  }
  return result;
}

absl::StatusOr<uint64_t> ParseUnsigned(const json& value, const std::string& path, uint64_t max,
                                       absl::string_view type_name) {
  uint64_t result = 0;
  if (value.is_number_unsigned()) {
    result = value.get<uint64_t>();
  } else if (value.is_number_integer()) {  // signed, hence negative
    return Invalid(path, absl::StrCat(value.dump(), " is out of range for ", type_name));
  } else if (value.is_number_float()) {
    const double d = value.get<double>();
    if (!std::isfinite(d) || std::trunc(d) != d) return TypeError(path, "an integer", value);
    if (d < 0 || d >= 18446744073709551616.0) {
      return Invalid(path, absl::StrCat(value.dump(), " is out of range for ", type_name));
    }
    result = static_cast<uint64_t>(d);
  } else if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    if (text.empty() || !absl::ascii_isdigit(text.front()) || !absl::ascii_isdigit(text.back()) ||
        !absl::SimpleAtoi(text, &result)) {
      return TypeError(path, "a non-negative integer", value);
    }
  } else {
    return TypeError(path, "an integer", value);
  }
  if (result > max) {
    return Invalid(path, absl::StrCat(value.dump(), " is out of range for ", type_name));
  }
  return result;
}

// A JSON number, a numeric string, or "NaN" / "Infinity" / "-Infinity".
absl::StatusOr<double> ParseDouble(const json& value, const std::string& path) {
  if (value.is_number()) return value.get<double>();
  if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    if (text == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (text == "Infinity") return std::numeric_limits<double>::infinity();
    if (text == "-Infinity") return -std::numeric_limits<double>::infinity();
    double result = 0;
    if (!text.empty() && !absl::ascii_isspace(text.front()) && !absl::ascii_isspace(text.back()) &&
        absl::SimpleAtod(text, &result) && std::isfinite(result)) {
      return result;
    }
  }
  return TypeError(path, "a number", value);
}

// RFC 3339 with or without fractional seconds, `Z` or a numeric offset.
absl::StatusOr<std::pair<int64_t, int32_t>> ParseTimestamp(const json& value,
                                                           const std::string& path) {
  constexpr absl::string_view kExpected = "an RFC 3339 timestamp like \"2006-01-02T15:04:05Z\"";
  if (!value.is_string()) return TypeError(path, kExpected, value);
  absl::Time time;
  std::string error;
  if (!absl::ParseTime(absl::RFC3339_full, value.get_ref<const std::string&>(), &time, &error)) {
    return TypeError(path, kExpected, value);
  }
  const int64_t seconds = absl::ToUnixSeconds(time);  // rounds down, so nanos are >= 0
  if (seconds < kMinTimestampSeconds || seconds > kMaxTimestampSeconds) {
    return Invalid(path, absl::StrCat(value.dump(), " is outside years 0001..9999"));
  }
  const int64_t nanos = absl::ToInt64Nanoseconds(time - absl::FromUnixSeconds(seconds));
  return std::make_pair(seconds, static_cast<int32_t>(nanos));
}

// "1.5s", "-0.25s", "3s": seconds with up to nine fractional digits.
absl::StatusOr<std::pair<int64_t, int32_t>> ParseDuration(const json& value,
                                                          const std::string& path) {
  constexpr absl::string_view kExpected = "a duration like \"1.5s\"";
  if (!value.is_string()) return TypeError(path, kExpected, value);
  absl::string_view text = value.get_ref<const std::string&>();
  if (!absl::ConsumeSuffix(&text, "s")) return TypeError(path, kExpected, value);
  const bool negative = absl::ConsumePrefix(&text, "-");
  const size_t dot = text.find('.');
  absl::string_view whole = text.substr(0, dot);
  absl::string_view fraction = dot == absl::string_view::npos ? "" : text.substr(dot + 1);
  int64_t seconds = 0;
  auto all_digits = [](absl::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return absl::ascii_isdigit(c); });
  };
  if (whole.empty() || !all_digits(whole) || !absl::SimpleAtoi(whole, &seconds) ||
      fraction.size() > 9 || !all_digits(fraction) ||
      (dot != absl::string_view::npos && fraction.empty())) {
    return TypeError(path, kExpected, value);
  }
  int32_t nanos = 0;
  for (size_t i = 0; i < 9; ++i) nanos = nanos * 10 + (i < fraction.size() ? fraction[i] - '0' : 0);
  // Duration's valid range is +-10,000 years.
  if (seconds > 315576000000) return Invalid(path, absl::StrCat(value.dump(), " is out of range"));
  return negative ? std::make_pair(-seconds, -nanos) : std::make_pair(seconds, nanos);
}

// The scalar cases of Decoder::Element that are not numbers: one value of
// `field` decoded from `j` and stored (Add* when `add`, else Set*).
absl::Status DecodeBool(const json& j, google::protobuf::Message* msg, const FieldDescriptor* field,
                        const std::string& path, bool add) {
  const Reflection* reflection = msg->GetReflection();
  bool v = false;
  if (j.is_boolean()) {
    v = j.get<bool>();
  } else if (field->containing_type()->options().map_entry() && j.is_string() &&
             (j == "true" || j == "false")) {  // a map<bool, ...> key, which JSON spells as text
    v = j == "true";
  } else {
    return TypeError(path, "a boolean", j);
  }
  add ? reflection->AddBool(msg, field, v) : reflection->SetBool(msg, field, v);
  return absl::OkStatus();
}

absl::Status DecodeString(const json& j, google::protobuf::Message* msg,
                          const FieldDescriptor* field, const std::string& path, bool add) {
  const Reflection* reflection = msg->GetReflection();
  if (!j.is_string()) return TypeError(path, "a string", j);
  std::string v = j.get<std::string>();
  if (field->type() == FieldDescriptor::TYPE_BYTES) {
    std::string decoded;
    if (!absl::Base64Unescape(v, &decoded) && !absl::WebSafeBase64Unescape(v, &decoded)) {
      return TypeError(path, "a base64 string", j);
    }
    v = std::move(decoded);
  }
  add ? reflection->AddString(msg, field, std::move(v))
      : reflection->SetString(msg, field, std::move(v));
  return absl::OkStatus();
}

absl::Status DecodeEnum(const json& j, google::protobuf::Message* msg, const FieldDescriptor* field,
                        const std::string& path, bool add) {
  const Reflection* reflection = msg->GetReflection();
  int number = 0;
  if (j.is_string()) {
    const EnumValueDescriptor* value =
        field->enum_type()->FindValueByName(j.get_ref<const std::string&>());
    if (value == nullptr) return TypeError(path, "a value name of the enum", j);
    number = value->number();
  } else if (j.is_number_integer()) {
    absl::StatusOr<int64_t> v = ParseSigned(j, path, std::numeric_limits<int32_t>::min(),
                                            std::numeric_limits<int32_t>::max(), "enum");
    if (!v.ok()) return v.status();
    number = static_cast<int>(*v);
  } else {
    return TypeError(path, "a value name of the enum", j);
  }
  add ? reflection->AddEnumValue(msg, field, number) : reflection->SetEnumValue(msg, field, number);
  return absl::OkStatus();
}

class Decoder {
 public:
  absl::Status Message(const json& j, google::protobuf::Message* msg, const std::string& path);

 private:
  absl::Status Field(const json& j, google::protobuf::Message* msg, const FieldDescriptor* field,
                     const std::string& path);
  absl::Status Element(const json& j, google::protobuf::Message* msg, const FieldDescriptor* field,
                       const std::string& path);
  absl::Status WellKnownMessage(WellKnown kind, const json& j, google::protobuf::Message* msg,
                                const std::string& path);
  absl::Status Value(const json& j, google::protobuf::Message* value, const std::string& path);
  absl::Status Struct(const json& j, google::protobuf::Message* msg, const std::string& path);
  absl::Status ListValue(const json& j, google::protobuf::Message* msg, const std::string& path);
};

absl::Status Decoder::Message(const json& j, google::protobuf::Message* msg,
                              const std::string& path) {
  const Descriptor* descriptor = msg->GetDescriptor();
  if (WellKnown kind = WellKnownOf(descriptor); kind != WellKnown::kNone) {
    return WellKnownMessage(kind, j, msg, path);
  }
  if (!j.is_object()) return TypeError(path, "an object", j);
  std::set<const OneofDescriptor*> oneofs_set;
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const FieldDescriptor* field = descriptor->field(i);
    auto it = j.find(field->json_name());
    if (it == j.end()) continue;  // keys without a field are ignored: the API server prunes them
    const std::string field_path = Child(path, field->json_name());
    if (const OneofDescriptor* oneof = field->real_containing_oneof();
        oneof != nullptr && !it->is_null()) {
      if (!oneofs_set.insert(oneof).second) {
        return Invalid(field_path,
                       absl::StrCat("only one field of `", oneof->name(), "` may be set"));
      }
    }
    if (absl::Status status = Field(*it, msg, field, field_path); !status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::Status Decoder::Field(const json& j, google::protobuf::Message* msg,
                            const FieldDescriptor* field, const std::string& path) {
  // null means "unset", except for a google.protobuf.Value, which can hold a JSON null.
  if (j.is_null() && !(IsValueField(field) && !field->is_repeated())) return absl::OkStatus();
  const Reflection* reflection = msg->GetReflection();
  if (field->is_map()) {
    if (!j.is_object()) return TypeError(path, "an object", j);
    const FieldDescriptor* key_field = field->message_type()->map_key();
    const FieldDescriptor* value_field = field->message_type()->map_value();
    for (const auto& [key, value] : j.items()) {
      const std::string entry_path = absl::StrCat(path, "[", json(key).dump(), "]");
      google::protobuf::Message* entry = reflection->AddMessage(msg, field);
      // Map keys arrive as JSON object keys, i.e. strings; decode them like scalar strings.
      if (absl::Status status = Element(json(key), entry, key_field, entry_path); !status.ok()) {
        return status;
      }
      if (absl::Status status = Element(value, entry, value_field, entry_path); !status.ok()) {
        return status;
      }
    }
    return absl::OkStatus();
  }
  if (field->is_repeated()) {
    if (!j.is_array()) return TypeError(path, "an array", j);
    for (size_t i = 0; i < j.size(); ++i) {
      absl::Status status = Element(j[i], msg, field, absl::StrCat(path, "[", i, "]"));
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }
  return Element(j, msg, field, path);
}

// Decodes one value of `field` (the field itself, one item of a list, or a map key or value) and
// stores it: Set* for singular fields, Add* for repeated ones.
absl::Status Decoder::Element(const json& j, google::protobuf::Message* msg,
                              const FieldDescriptor* field, const std::string& path) {
  const Reflection* reflection = msg->GetReflection();
  const bool add = field->is_repeated();
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: {
      absl::StatusOr<int64_t> v = ParseSigned(j, path, std::numeric_limits<int32_t>::min(),
                                              std::numeric_limits<int32_t>::max(), "int32");
      if (!v.ok()) return v.status();
      add ? reflection->AddInt32(msg, field, static_cast<int32_t>(*v))
          : reflection->SetInt32(msg, field, static_cast<int32_t>(*v));
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_INT64: {
      absl::StatusOr<int64_t> v = ParseSigned(j, path, std::numeric_limits<int64_t>::min(),
                                              std::numeric_limits<int64_t>::max(), "int64");
      if (!v.ok()) return v.status();
      add ? reflection->AddInt64(msg, field, *v) : reflection->SetInt64(msg, field, *v);
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_UINT32: {
      absl::StatusOr<uint64_t> v =
          ParseUnsigned(j, path, std::numeric_limits<uint32_t>::max(), "uint32");
      if (!v.ok()) return v.status();
      add ? reflection->AddUInt32(msg, field, static_cast<uint32_t>(*v))
          : reflection->SetUInt32(msg, field, static_cast<uint32_t>(*v));
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_UINT64: {
      absl::StatusOr<uint64_t> v =
          ParseUnsigned(j, path, std::numeric_limits<uint64_t>::max(), "uint64");
      if (!v.ok()) return v.status();
      add ? reflection->AddUInt64(msg, field, *v) : reflection->SetUInt64(msg, field, *v);
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_DOUBLE: {
      absl::StatusOr<double> v = ParseDouble(j, path);
      if (!v.ok()) return v.status();
      add ? reflection->AddDouble(msg, field, *v) : reflection->SetDouble(msg, field, *v);
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_FLOAT: {
      absl::StatusOr<double> v = ParseDouble(j, path);
      if (!v.ok()) return v.status();
      if (std::isfinite(*v) && std::abs(*v) > std::numeric_limits<float>::max()) {
        return Invalid(path, absl::StrCat(j.dump(), " is out of range for float"));
      }
      add ? reflection->AddFloat(msg, field, static_cast<float>(*v))
          : reflection->SetFloat(msg, field, static_cast<float>(*v));
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_BOOL:
      return DecodeBool(j, msg, field, path, add);
    case FieldDescriptor::CPPTYPE_STRING:
      return DecodeString(j, msg, field, path, add);
    case FieldDescriptor::CPPTYPE_ENUM:
      return DecodeEnum(j, msg, field, path, add);
    case FieldDescriptor::CPPTYPE_MESSAGE: {
      google::protobuf::Message* child =
          add ? reflection->AddMessage(msg, field) : reflection->MutableMessage(msg, field);
      return Message(j, child, path);
    }
  }
  return Invalid(path, "unsupported field type");
}

absl::Status Decoder::WellKnownMessage(WellKnown kind, const json& j,
                                       google::protobuf::Message* msg, const std::string& path) {
  const Descriptor* descriptor = msg->GetDescriptor();
  const Reflection* reflection = msg->GetReflection();
  switch (kind) {
    case WellKnown::kStruct:
      return Struct(j, msg, path);
    case WellKnown::kValue:
      return Value(j, msg, path);
    case WellKnown::kListValue:
      return ListValue(j, msg, path);
    case WellKnown::kTimestamp:
    case WellKnown::kDuration: {
      absl::StatusOr<std::pair<int64_t, int32_t>> parsed =
          kind == WellKnown::kTimestamp ? ParseTimestamp(j, path) : ParseDuration(j, path);
      if (!parsed.ok()) return parsed.status();
      reflection->SetInt64(msg, descriptor->FindFieldByName("seconds"), parsed->first);
      reflection->SetInt32(msg, descriptor->FindFieldByName("nanos"), parsed->second);
      return absl::OkStatus();
    }
    case WellKnown::kWrapper:
      return Element(j, msg, descriptor->FindFieldByName("value"), path);
    case WellKnown::kAny:
      return Invalid(path, "google.protobuf.Any is not supported");
    case WellKnown::kNone:
      break;
  }
  return Invalid(path, "not a well-known type");
}

absl::Status Decoder::Value(const json& j, google::protobuf::Message* value,
                            const std::string& path) {
  const Descriptor* descriptor = value->GetDescriptor();
  const Reflection* reflection = value->GetReflection();
  switch (j.type()) {
    case json::value_t::null:
      reflection->SetEnumValue(value, descriptor->FindFieldByName("null_value"), 0);
      return absl::OkStatus();
    case json::value_t::boolean:
      reflection->SetBool(value, descriptor->FindFieldByName("bool_value"), j.get<bool>());
      return absl::OkStatus();
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      // Struct numbers are doubles: integers beyond 2^53 lose precision (protobuf's own rule).
      reflection->SetDouble(value, descriptor->FindFieldByName("number_value"), j.get<double>());
      return absl::OkStatus();
    case json::value_t::string:
      reflection->SetString(value, descriptor->FindFieldByName("string_value"),
                            j.get<std::string>());
      return absl::OkStatus();
    case json::value_t::object:
      return Struct(
          j, reflection->MutableMessage(value, descriptor->FindFieldByName("struct_value")), path);
    case json::value_t::array:
      return ListValue(
          j, reflection->MutableMessage(value, descriptor->FindFieldByName("list_value")), path);
    case json::value_t::binary:
    case json::value_t::discarded:
      break;
  }
  return TypeError(path, "a JSON value", j);
}

absl::Status Decoder::Struct(const json& j, google::protobuf::Message* msg,
                             const std::string& path) {
  if (!j.is_object()) return TypeError(path, "an object", j);
  const FieldDescriptor* fields = msg->GetDescriptor()->FindFieldByName("fields");
  for (const auto& [key, item] : j.items()) {
    google::protobuf::Message* entry = msg->GetReflection()->AddMessage(msg, fields);
    const Descriptor* entry_descriptor = entry->GetDescriptor();
    entry->GetReflection()->SetString(entry, entry_descriptor->map_key(), key);
    google::protobuf::Message* value =
        entry->GetReflection()->MutableMessage(entry, entry_descriptor->map_value());
    if (absl::Status status = Value(item, value, Child(path, key)); !status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::Status Decoder::ListValue(const json& j, google::protobuf::Message* msg,
                                const std::string& path) {
  if (!j.is_array()) return TypeError(path, "an array", j);
  const FieldDescriptor* values = msg->GetDescriptor()->FindFieldByName("values");
  for (size_t i = 0; i < j.size(); ++i) {
    google::protobuf::Message* value = msg->GetReflection()->AddMessage(msg, values);
    absl::Status status = Value(j[i], value, absl::StrCat(path, "[", i, "]"));
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------------------------

json EncodeMessage(const google::protobuf::Message& msg);

json EncodeDouble(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  return value;
}

// metav1.Time: UTC, seconds precision; sub-second parts are dropped as Kubernetes does.
std::string FormatTimestamp(int64_t seconds) {
  const absl::CivilSecond civil =
      absl::ToCivilSecond(absl::FromUnixSeconds(seconds), absl::UTCTimeZone());
  return absl::StrFormat("%04d-%02d-%02dT%02d:%02d:%02dZ", civil.year(), civil.month(), civil.day(),
                         civil.hour(), civil.minute(), civil.second());
}

// Like protobuf: "1s", "1.500s", "-0.000001s" (0, 3, 6 or 9 fractional digits).
std::string FormatDuration(int64_t seconds, int32_t nanos) {
  const bool negative = seconds < 0 || nanos < 0;
  const uint64_t abs_seconds =
      seconds < 0 ? static_cast<uint64_t>(-(seconds + 1)) + 1 : static_cast<uint64_t>(seconds);
  const int32_t abs_nanos = nanos < 0 ? -nanos : nanos;
  std::string text = absl::StrCat(negative ? "-" : "", abs_seconds);
  if (abs_nanos != 0) {
    if (abs_nanos % 1000000 == 0) {
      absl::StrAppendFormat(&text, ".%03d", abs_nanos / 1000000);
    } else if (abs_nanos % 1000 == 0) {
      absl::StrAppendFormat(&text, ".%06d", abs_nanos / 1000);
    } else {
      absl::StrAppendFormat(&text, ".%09d", abs_nanos);
    }
  }
  return text + "s";
}

json EncodeValue(const google::protobuf::Message& value);

json EncodeStruct(const google::protobuf::Message& msg) {
  json object = json::object();
  const FieldDescriptor* fields = msg.GetDescriptor()->FindFieldByName("fields");
  const Reflection* reflection = msg.GetReflection();
  for (int i = 0; i < reflection->FieldSize(msg, fields); ++i) {
    const google::protobuf::Message& entry = reflection->GetRepeatedMessage(msg, fields, i);
    const Descriptor* entry_descriptor = entry.GetDescriptor();
    object[entry.GetReflection()->GetString(entry, entry_descriptor->map_key())] =
        EncodeValue(entry.GetReflection()->GetMessage(entry, entry_descriptor->map_value()));
  }
  return object;
}

json EncodeListValue(const google::protobuf::Message& msg) {
  json array = json::array();
  const FieldDescriptor* values = msg.GetDescriptor()->FindFieldByName("values");
  const Reflection* reflection = msg.GetReflection();
  for (int i = 0; i < reflection->FieldSize(msg, values); ++i) {
    array.push_back(EncodeValue(reflection->GetRepeatedMessage(msg, values, i)));
  }
  return array;
}

json EncodeValue(const google::protobuf::Message& value) {
  const Reflection* reflection = value.GetReflection();
  const OneofDescriptor* kind = value.GetDescriptor()->FindOneofByName("kind");
  const FieldDescriptor* set = reflection->GetOneofFieldDescriptor(value, kind);
  if (set == nullptr || set->name() == "null_value") return nullptr;
  if (set->name() == "number_value") {
    const double number = reflection->GetDouble(value, set);
    // Integral numbers stay integers (`1`, not `1.0`): Slurm's REST API rejects floats where it
    // expects integers, and `extra` is merged into its job descriptor.
    if (std::isfinite(number) && std::trunc(number) == number &&
        std::abs(number) <= kMaxExactDouble) {
      return static_cast<int64_t>(number);
    }
    return EncodeDouble(number);
  }
  if (set->name() == "string_value") return reflection->GetString(value, set);
  if (set->name() == "bool_value") return reflection->GetBool(value, set);
  if (set->name() == "struct_value") return EncodeStruct(reflection->GetMessage(value, set));
  if (set->name() == "list_value") return EncodeListValue(reflection->GetMessage(value, set));
  return nullptr;
}

// One value of `field`; `index` < 0 reads a singular field, otherwise element `index`.
json EncodeElement(const google::protobuf::Message& msg, const FieldDescriptor* field, int index) {
  const Reflection* r = msg.GetReflection();
  const bool repeated = index >= 0;
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return repeated ? r->GetRepeatedInt32(msg, field, index) : r->GetInt32(msg, field);
    case FieldDescriptor::CPPTYPE_INT64:
      return repeated ? r->GetRepeatedInt64(msg, field, index) : r->GetInt64(msg, field);
    case FieldDescriptor::CPPTYPE_UINT32:
      return repeated ? r->GetRepeatedUInt32(msg, field, index) : r->GetUInt32(msg, field);
    case FieldDescriptor::CPPTYPE_UINT64:
      return repeated ? r->GetRepeatedUInt64(msg, field, index) : r->GetUInt64(msg, field);
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return EncodeDouble(repeated ? r->GetRepeatedDouble(msg, field, index)
                                   : r->GetDouble(msg, field));
    case FieldDescriptor::CPPTYPE_FLOAT: {
      const float value =
          repeated ? r->GetRepeatedFloat(msg, field, index) : r->GetFloat(msg, field);
      if (!std::isfinite(value)) return EncodeDouble(value);
      // Shortest decimal that reads back as the same float: 0.1f is written 0.1, not
      // 0.10000000149011612.
      return std::strtod(absl::StrCat(value).c_str(), nullptr);
    }
    case FieldDescriptor::CPPTYPE_BOOL:
      return repeated ? r->GetRepeatedBool(msg, field, index) : r->GetBool(msg, field);
    case FieldDescriptor::CPPTYPE_STRING: {
      std::string value =
          repeated ? r->GetRepeatedString(msg, field, index) : r->GetString(msg, field);
      if (field->type() == FieldDescriptor::TYPE_BYTES) return absl::Base64Escape(value);
      return value;
    }
    case FieldDescriptor::CPPTYPE_ENUM: {
      const int number =
          repeated ? r->GetRepeatedEnumValue(msg, field, index) : r->GetEnumValue(msg, field);
      const EnumValueDescriptor* value = field->enum_type()->FindValueByNumber(number);
      if (value == nullptr) return number;  // open enum holding an unknown number
      return value->name();
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return EncodeMessage(repeated ? r->GetRepeatedMessage(msg, field, index)
                                    : r->GetMessage(msg, field));
  }
  return nullptr;
}

json EncodeMessage(const google::protobuf::Message& msg) {
  const Descriptor* descriptor = msg.GetDescriptor();
  const Reflection* reflection = msg.GetReflection();
  switch (WellKnownOf(descriptor)) {
    case WellKnown::kStruct:
      return EncodeStruct(msg);
    case WellKnown::kValue:
      return EncodeValue(msg);
    case WellKnown::kListValue:
      return EncodeListValue(msg);
    case WellKnown::kTimestamp:
      return FormatTimestamp(reflection->GetInt64(msg, descriptor->FindFieldByName("seconds")));
    case WellKnown::kDuration:
      return FormatDuration(reflection->GetInt64(msg, descriptor->FindFieldByName("seconds")),
                            reflection->GetInt32(msg, descriptor->FindFieldByName("nanos")));
    case WellKnown::kWrapper:
      return EncodeElement(msg, descriptor->FindFieldByName("value"), -1);
    case WellKnown::kAny:  // not decodable either; written as a plain message
    case WellKnown::kNone:
      break;
  }
  json object = json::object();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const FieldDescriptor* field = descriptor->field(i);
    if (field->is_map()) {
      const int size = reflection->FieldSize(msg, field);
      if (size == 0) continue;
      json map = json::object();
      for (int k = 0; k < size; ++k) {
        const google::protobuf::Message& entry = reflection->GetRepeatedMessage(msg, field, k);
        const json key = EncodeElement(entry, entry.GetDescriptor()->map_key(), -1);
        map[key.is_string() ? key.get<std::string>() : key.dump()] =
            EncodeElement(entry, entry.GetDescriptor()->map_value(), -1);
      }
      object[field->json_name()] = std::move(map);
    } else if (field->is_repeated()) {
      const int size = reflection->FieldSize(msg, field);
      if (size == 0) continue;
      json array = json::array();
      for (int k = 0; k < size; ++k) array.push_back(EncodeElement(msg, field, k));
      object[field->json_name()] = std::move(array);
    } else {
      // HasField is "set" for messages and `optional` scalars, and "not the default value" for
      // proto3 scalars without presence — exactly the omission rule of the header.
      if (!reflection->HasField(msg, field)) continue;
      object[field->json_name()] = EncodeElement(msg, field, -1);
    }
  }
  return object;
}

}  // namespace

absl::Status FromJson(const nlohmann::json& j, google::protobuf::Message* msg) {
  msg->Clear();
  if (j.is_null()) return absl::OkStatus();
  Decoder decoder;
  return decoder.Message(j, msg, "");
}

nlohmann::json ToJson(const google::protobuf::Message& msg) { return EncodeMessage(msg); }

}  // namespace slurmop::api
