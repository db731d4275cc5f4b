// File: controller/agentplatform/envelope.cc
//
// Envelope encoding/decoding through the v1beta1 proto and protobuf's JSON
// mapping (see the header for the contract).

#include "controller/agentplatform/envelope.h"

#include <cmath>
#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"

namespace slurmop::agentplatform {
namespace {

constexpr int kMaxDepth = 100;
constexpr double kMaxSafeInteger = 9007199254740992.0;  // 2^53
constexpr int64_t kMaxSafeInt = int64_t{1} << 53;

absl::Status ToProtoValueAt(const nlohmann::json& j, const std::string& where, int depth,
                            google::protobuf::Value* out) {
  if (depth > kMaxDepth) {
    return absl::InvalidArgumentError(
        absl::StrCat("the request body nests deeper than ", kMaxDepth, " levels at ", where));
  }
  switch (j.type()) {
    case nlohmann::json::value_t::null:
    case nlohmann::json::value_t::discarded:
      out->set_null_value(google::protobuf::NULL_VALUE);
      return absl::OkStatus();
    case nlohmann::json::value_t::boolean:
      out->set_bool_value(j.get<bool>());
      return absl::OkStatus();
    case nlohmann::json::value_t::number_integer: {
      const int64_t v = j.get<int64_t>();
      if (v > kMaxSafeInt || v < -kMaxSafeInt) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the request body holds the integer ", v, " at ", where,
            ", beyond 2^53: callSlurmRestApi carries numbers as doubles and would change it"));
      }
      out->set_number_value(static_cast<double>(v));
      return absl::OkStatus();
    }
    case nlohmann::json::value_t::number_unsigned: {
      const uint64_t v = j.get<uint64_t>();
      if (v > static_cast<uint64_t>(kMaxSafeInt)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the request body holds the integer ", v, " at ", where,
            ", beyond 2^53: callSlurmRestApi carries numbers as doubles and would change it"));
      }
      out->set_number_value(static_cast<double>(v));
      return absl::OkStatus();
    }
    case nlohmann::json::value_t::number_float: {
      const double v = j.get<double>();
      if (!std::isfinite(v)) {
        return absl::InvalidArgumentError(
            absl::StrCat("the request body holds a non-finite number at ", where));
      }
      out->set_number_value(v);
      return absl::OkStatus();
    }
    case nlohmann::json::value_t::string:
      out->set_string_value(j.get<std::string>());
      return absl::OkStatus();
    case nlohmann::json::value_t::binary:
      return absl::InvalidArgumentError(
          absl::StrCat("the request body holds binary data at ", where));
    case nlohmann::json::value_t::array: {
      google::protobuf::ListValue* list = out->mutable_list_value();
      size_t i = 0;
      for (const auto& item : j) {
        absl::Status s =
            ToProtoValueAt(item, absl::StrCat(where, "/", i++), depth + 1, list->add_values());
        if (!s.ok()) return s;
      }
      return absl::OkStatus();
    }
    case nlohmann::json::value_t::object: {
      google::protobuf::Struct* st = out->mutable_struct_value();
      for (const auto& [key, value] : j.items()) {
        google::protobuf::Value v;
        absl::Status s = ToProtoValueAt(value, absl::StrCat(where, "/", key), depth + 1, &v);
        if (!s.ok()) return s;
        (*st->mutable_fields())[key] = std::move(v);
      }
      return absl::OkStatus();
    }
  }
  return absl::InternalError("unknown JSON value type");
}

}  // namespace

v1beta1::HttpMethod ToProtoMethod(HttpMethod method) {
  switch (method) {
    case HttpMethod::kGet:
      return v1beta1::HTTP_METHOD_GET;
    case HttpMethod::kPost:
      return v1beta1::HTTP_METHOD_POST;
    case HttpMethod::kDelete:
      return v1beta1::HTTP_METHOD_DELETE;
  }
  return v1beta1::HTTP_METHOD_UNSPECIFIED;
}

absl::StatusOr<google::protobuf::Value> ToProtoValue(const nlohmann::json& j) {
  google::protobuf::Value out;
  absl::Status s = ToProtoValueAt(j, "", 0, &out);
  if (!s.ok()) return s;
  return out;
}

nlohmann::json FromProtoValue(const google::protobuf::Value& v) {
  switch (v.kind_case()) {
    case google::protobuf::Value::kNullValue:
    case google::protobuf::Value::KIND_NOT_SET:
      return nullptr;
    case google::protobuf::Value::kBoolValue:
      return v.bool_value();
    case google::protobuf::Value::kNumberValue: {
      const double d = v.number_value();
      if (std::isfinite(d) && std::trunc(d) == d && std::fabs(d) <= kMaxSafeInteger) {
        return static_cast<int64_t>(d);
      }
      return d;
    }
    case google::protobuf::Value::kStringValue:
      return v.string_value();
    case google::protobuf::Value::kStructValue:
      return FromProtoStruct(v.struct_value());
    case google::protobuf::Value::kListValue: {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& item : v.list_value().values()) out.push_back(FromProtoValue(item));
      return out;
    }
  }
  return nullptr;
}

nlohmann::json FromProtoStruct(const google::protobuf::Struct& s) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, value] : s.fields()) out[key] = FromProtoValue(value);
  return out;
}

absl::StatusOr<std::string> EncodeRequest(HttpMethod method, std::string_view path,
                                          const nlohmann::json* body) {
  v1beta1::CallSlurmRestApiRequest request;
  request.set_method(ToProtoMethod(method));
  request.set_path(std::string(path));
  if (body != nullptr) {
    if (!body->is_object()) {
      return absl::InvalidArgumentError("the Slurm request body must be a JSON object");
    }
    absl::StatusOr<google::protobuf::Value> value = ToProtoValue(*body);
    if (!value.ok()) return value.status();
    *request.mutable_body() = std::move(*value->mutable_struct_value());
  }
  std::string out;
  const auto status = google::protobuf::util::MessageToJsonString(request, &out);
  if (!status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot encode the callSlurmRestApi request: ", status.message().ToString()));
  }
  return out;
}

absl::StatusOr<SlurmResponse> DecodeResponse(std::string_view json) {
  v1beta1::CallSlurmRestApiResponse response;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  const auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &response, options);
  if (!status.ok()) {
    return absl::InternalError(
        absl::StrCat("Agent Platform: the answer is not a callSlurmRestApi "
                     "envelope (",
                     status.message().ToString(), ")"));
  }
  if (response.status() == 0) {
    return absl::InternalError(
        "Agent Platform: the answer is not a callSlurmRestApi envelope (no status)");
  }
  SlurmResponse out;
  out.status = response.status();
  if (response.has_structured_body()) {
    out.body = FromProtoStruct(response.structured_body());
  } else if (response.has_body()) {
    const google::protobuf::Value& body = response.body();
    if (body.kind_case() == google::protobuf::Value::kStringValue && body.string_value().empty()) {
      out.body = nullptr;
    } else if (body.kind_case() == google::protobuf::Value::kStringValue) {
      nlohmann::json parsed = nlohmann::json::parse(body.string_value(), nullptr, false);
      out.body = parsed.is_discarded() ? nlohmann::json(body.string_value()) : std::move(parsed);
    } else {
      out.body = FromProtoValue(body);
    }
  }
  return out;
}

}  // namespace slurmop::agentplatform
