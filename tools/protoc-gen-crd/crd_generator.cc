// File: tools/protoc-gen-crd/crd_generator.cc
//
// Proto descriptors → CRD documents → YAML. See crd_generator.h for the contract.
// Schema nodes are collected as unordered keyword bags and put into one fixed key order when they
// are attached to their parent, so the output is stable and reads the same way everywhere.

#include "tools/protoc-gen-crd/crd_generator.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "slurmoperator/crd/options.pb.h"

namespace slurmop::crdgen {
namespace {

using ::google::protobuf::Descriptor;
using ::google::protobuf::FieldDescriptor;
using ::google::protobuf::FileDescriptor;
using ::google::protobuf::SourceLocation;
using json = ::nlohmann::ordered_json;
namespace crd = ::slurmoperator::crd;

// A schema node under construction: OpenAPI keywords in no particular order.
using Bag = std::map<std::string, json>;

// The order in which a schema node's keywords are written: what the node is first, then its
// constraints, then its children, then the Kubernetes extensions.
constexpr std::array<std::string_view, 20> kSchemaKeyOrder = {
    "description",
    "type",
    "format",
    "enum",
    "default",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "maxItems",
    "pattern",
    "items",
    "additionalProperties",
    "properties",
    "required",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-validations",
};

json Ordered(const Bag& bag) {
  json node = json::object();
  for (std::string_view key : kSchemaKeyOrder) {
    auto it = bag.find(std::string(key));
    if (it != bag.end()) node[it->first] = it->second;
  }
  // Keywords outside kSchemaKeyOrder cannot be produced by this file; keep them anyway (sorted,
  // at the end) rather than drop them silently.
  for (const auto& [key, value] : bag) {
    if (!node.contains(key)) node[key] = value;
  }
  return node;
}

json StringArray(const google::protobuf::RepeatedPtrField<std::string>& values) {
  json array = json::array();
  for (const std::string& value : values) array.push_back(value);
  return array;
}

std::string TypeOf(const Bag& node) {
  auto it = node.find("type");
  return it == node.end() ? "" : it->second.get<std::string>();
}

std::string MessageComment(const Descriptor* message) {
  SourceLocation location;
  if (!message->GetSourceLocation(&location)) return "";
  return CommentToDescription(location.leading_comments);
}

std::string FieldComment(const FieldDescriptor* field) {
  SourceLocation location;
  if (!field->GetSourceLocation(&location)) return "";
  return CommentToDescription(location.leading_comments);
}

absl::Status FieldError(const FieldDescriptor* field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(field->full_name(), ": ", what));
}

absl::StatusOr<json> ValidationsToJson(
    const google::protobuf::RepeatedPtrField<crd::Validation>& validations,
    absl::string_view owner) {
  static const std::set<std::string> kReasons = {"FieldValueInvalid", "FieldValueForbidden",
                                                 "FieldValueRequired", "FieldValueDuplicate"};
  json rules = json::array();
  for (const crd::Validation& validation : validations) {
    if (validation.rule().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(owner, ": a validation has no rule"));
    }
    if (!validation.reason().empty() && !kReasons.contains(validation.reason())) {
      return absl::InvalidArgumentError(
          absl::StrCat(owner, ": unknown validation reason \"", validation.reason(), "\""));
    }
    json rule = json::object();
    rule["rule"] = validation.rule();
    if (!validation.message().empty()) rule["message"] = validation.message();
    if (!validation.reason().empty()) rule["reason"] = validation.reason();
    if (!validation.field_path().empty()) rule["fieldPath"] = validation.field_path();
    rules.push_back(std::move(rule));
  }
  return rules;
}

bool DefaultMatchesType(const json& value, absl::string_view type) {
  if (type == "string") return value.is_string();
  if (type == "integer") return value.is_number_integer();
  if (type == "number") return value.is_number();
  if (type == "boolean") return value.is_boolean();
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  return true;  // untyped (preserve-unknown-fields) nodes take anything
}

// Builds schema nodes from descriptors. Remembers the messages being expanded so that recursive
// types are reported instead of expanded forever (a structural schema cannot refer to itself).
class SchemaBuilder {
 public:
  absl::StatusOr<Bag> Message(const Descriptor* message);
  absl::StatusOr<Bag> Field(const FieldDescriptor* field);

 private:
  absl::StatusOr<Bag> Element(const FieldDescriptor* field);
  absl::StatusOr<Bag> MessageOrWellKnown(const Descriptor* message);
  absl::Status ApplyElementOptions(const FieldDescriptor* field, const crd::Field& options,
                                   Bag& node);
  absl::Status ApplyContainerOptions(const FieldDescriptor* field, const crd::Field& options,
                                     Bag& node);

  std::vector<const Descriptor*> in_progress_;
};

absl::StatusOr<Bag> SchemaBuilder::Message(const Descriptor* message) {
  if (std::find(in_progress_.begin(), in_progress_.end(), message) != in_progress_.end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        message->full_name(), " contains itself; a structural schema cannot express that"));
  }
  in_progress_.push_back(message);
  struct PopOnExit {
    std::vector<const Descriptor*>& stack;
    ~PopOnExit() { stack.pop_back(); }
  } pop_on_exit{in_progress_};

  Bag node;
  if (std::string description = MessageComment(message); !description.empty()) {
    node["description"] = description;
  }
  node["type"] = "object";
  json properties = json::object();
  json required = json::array();
  for (int i = 0; i < message->field_count(); ++i) {
    const FieldDescriptor* field = message->field(i);
    absl::StatusOr<Bag> property = Field(field);
    if (!property.ok()) return property.status();
    if (properties.contains(field->json_name())) {
      return FieldError(field, absl::StrCat("JSON name \"", field->json_name(), "\" is taken"));
    }
    properties[field->json_name()] = Ordered(*property);
    if (field->options().GetExtension(crd::field).required()) {
      required.push_back(field->json_name());
    }
  }
  if (!properties.empty()) node["properties"] = std::move(properties);
  if (!required.empty()) node["required"] = std::move(required);
  if (message->options().HasExtension(crd::message)) {
    absl::StatusOr<json> rules = ValidationsToJson(
        message->options().GetExtension(crd::message).validations(), message->full_name());
    if (!rules.ok()) return rules.status();
    if (!rules->empty()) node["x-kubernetes-validations"] = *std::move(rules);
  }
  return node;
}

absl::StatusOr<Bag> SchemaBuilder::MessageOrWellKnown(const Descriptor* message) {
  const std::string& name = message->full_name();
  const json preserve = true;
  if (name == "google.protobuf.Struct") {
    return Bag{{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", preserve}};
  }
  if (name == "google.protobuf.Value") {
    // Any JSON value: the one node kind a structural schema allows without a `type`.
    return Bag{{"x-kubernetes-preserve-unknown-fields", preserve}};
  }
  if (name == "google.protobuf.ListValue") {
    json any_item = {{"x-kubernetes-preserve-unknown-fields", true}};
    return Bag{{"type", "array"}, {"items", any_item}};
  }
  if (name == "google.protobuf.Timestamp") return Bag{{"type", "string"}, {"format", "date-time"}};
  if (name == "google.protobuf.Duration") return Bag{{"type", "string"}};
  if (name == "google.protobuf.BoolValue") return Bag{{"type", "boolean"}};
  if (name == "google.protobuf.StringValue") return Bag{{"type", "string"}};
  if (name == "google.protobuf.BytesValue") return Bag{{"type", "string"}, {"format", "byte"}};
  if (name == "google.protobuf.Int32Value") return Bag{{"type", "integer"}, {"format", "int32"}};
  if (name == "google.protobuf.Int64Value") return Bag{{"type", "integer"}, {"format", "int64"}};
  if (name == "google.protobuf.UInt32Value" || name == "google.protobuf.UInt64Value") {
    return Bag{{"type", "integer"}, {"format", "int64"}, {"minimum", 0}};
  }
  if (name == "google.protobuf.FloatValue") return Bag{{"type", "number"}, {"format", "float"}};
  if (name == "google.protobuf.DoubleValue") return Bag{{"type", "number"}, {"format", "double"}};
  if (message->file()->package() == "google.protobuf") {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " has no Kubernetes schema mapping in protoc-gen-crd"));
  }
  return Message(message);
}

absl::StatusOr<Bag> SchemaBuilder::Element(const FieldDescriptor* field) {
  switch (field->type()) {
    case FieldDescriptor::TYPE_MESSAGE:
    case FieldDescriptor::TYPE_GROUP:
      return MessageOrWellKnown(field->message_type());
    case FieldDescriptor::TYPE_ENUM: {
      json names = json::array();
      for (int i = 0; i < field->enum_type()->value_count(); ++i) {
        names.push_back(field->enum_type()->value(i)->name());
      }
      return Bag{{"type", "string"}, {"enum", names}};
    }
    case FieldDescriptor::TYPE_BOOL:
      return Bag{{"type", "boolean"}};
    case FieldDescriptor::TYPE_STRING:
      return Bag{{"type", "string"}};
    case FieldDescriptor::TYPE_BYTES:
      return Bag{{"type", "string"}, {"format", "byte"}};
    case FieldDescriptor::TYPE_INT32:
    case FieldDescriptor::TYPE_SINT32:
    case FieldDescriptor::TYPE_SFIXED32:
      return Bag{{"type", "integer"}, {"format", "int32"}};
    case FieldDescriptor::TYPE_INT64:
    case FieldDescriptor::TYPE_SINT64:
    case FieldDescriptor::TYPE_SFIXED64:
      return Bag{{"type", "integer"}, {"format", "int64"}};
    case FieldDescriptor::TYPE_UINT32:
    case FieldDescriptor::TYPE_FIXED32:
    case FieldDescriptor::TYPE_UINT64:
    case FieldDescriptor::TYPE_FIXED64:
      // Kubernetes has no unsigned formats; int64 holds every uint32 and the uint64 values that
      // JSON clients can represent exactly anyway.
      return Bag{{"type", "integer"}, {"format", "int64"}, {"minimum", 0}};
    case FieldDescriptor::TYPE_FLOAT:
      return Bag{{"type", "number"}, {"format", "float"}};
    case FieldDescriptor::TYPE_DOUBLE:
      return Bag{{"type", "number"}, {"format", "double"}};
  }
  return FieldError(field, "unsupported field type");
}

// Options that constrain one value: on the field's node when it is singular, on `items` (or the
// map's `additionalProperties`) when it is repeated.
absl::Status SchemaBuilder::ApplyElementOptions(const FieldDescriptor* field,
                                                const crd::Field& options, Bag& node) {
  const std::string type = TypeOf(node);
  if (options.enum_values_size() > 0) {
    if (type != "string") return FieldError(field, "`enum_values` needs a string field");
    if (node.contains("enum")) return FieldError(field, "`enum_values` on a proto enum field");
    node["enum"] = StringArray(options.enum_values());
  }
  if (options.has_minimum() || options.has_maximum()) {
    if (type != "integer" && type != "number") {
      return FieldError(field, "`minimum`/`maximum` need a numeric field");
    }
    if (options.has_minimum()) node["minimum"] = options.minimum();
    if (options.has_maximum()) node["maximum"] = options.maximum();
  }
  if (options.has_min_length() || options.has_max_length() || !options.pattern().empty()) {
    if (type != "string") {
      return FieldError(field, "`min_length`/`max_length`/`pattern` need a string field");
    }
    if (options.has_min_length()) node["minLength"] = options.min_length();
    if (options.has_max_length()) node["maxLength"] = options.max_length();
    if (!options.pattern().empty()) node["pattern"] = options.pattern();
  }
  if (!options.format().empty()) node["format"] = options.format();
  return absl::OkStatus();
}

// Options about the field as a whole: list semantics, defaults and CEL rules.
absl::Status SchemaBuilder::ApplyContainerOptions(const FieldDescriptor* field,
                                                  const crd::Field& options, Bag& node) {
  const bool is_list = field->is_repeated() && !field->is_map();
  if (options.has_max_items()) {
    if (!is_list) return FieldError(field, "`max_items` needs a repeated field");
    node["maxItems"] = options.max_items();
  }
  if (!options.list_type().empty()) {
    if (!is_list) return FieldError(field, "`list_type` needs a repeated field");
    const std::string& list_type = options.list_type();
    if (list_type != "atomic" && list_type != "set" && list_type != "map") {
      return FieldError(field, absl::StrCat("unknown list_type \"", list_type, "\""));
    }
    const json& items = node["items"];
    const bool scalar_items = items.value("type", "") != "object" &&
                              items.value("type", "") != "array" && items.contains("type");
    if (list_type == "set" && !scalar_items) {
      return FieldError(field, "list_type `set` needs scalar items");
    }
    if (list_type == "map") {
      if (items.value("type", "") != "object" || !items.contains("properties")) {
        return FieldError(field, "list_type `map` needs message items");
      }
      if (options.list_map_keys_size() == 0) {
        return FieldError(field, "list_type `map` needs `list_map_keys`");
      }
      const json required = items.value("required", json::array());
      for (const std::string& key : options.list_map_keys()) {
        if (!items["properties"].contains(key)) {
          return FieldError(field, absl::StrCat("list map key \"", key, "\" is not a property"));
        }
        // Kubernetes rejects a CRD whose list-map keys are optional without a default.
        const bool key_required =
            std::find(required.begin(), required.end(), key) != required.end();
        if (!key_required && !items["properties"][key].contains("default")) {
          return FieldError(
              field, absl::StrCat("list map key \"", key, "\" must be required or defaulted"));
        }
      }
      node["x-kubernetes-list-map-keys"] = StringArray(options.list_map_keys());
    } else if (options.list_map_keys_size() > 0) {
      return FieldError(field, "`list_map_keys` needs list_type `map`");
    }
    node["x-kubernetes-list-type"] = list_type;
  } else if (options.list_map_keys_size() > 0) {
    return FieldError(field, "`list_map_keys` needs list_type `map`");
  }
  if (!options.default_json().empty()) {
    json value = json::parse(options.default_json(), nullptr, /*allow_exceptions=*/false);
    if (value.is_discarded()) {
      return FieldError(field, absl::StrCat("default_json is not JSON: ", options.default_json()));
    }
    if (!DefaultMatchesType(value, TypeOf(node))) {
      return FieldError(field, absl::StrCat("default ", options.default_json(),
                                            " does not match type ", TypeOf(node)));
    }
    if (auto it = node.find("enum");
        it != node.end() &&
        std::find(it->second.begin(), it->second.end(), value) == it->second.end()) {
      return FieldError(field, absl::StrCat("default ", options.default_json(), " is not in enum"));
    }
    node["default"] = std::move(value);
  }
  if (options.validations_size() > 0) {
    absl::StatusOr<json> rules = ValidationsToJson(options.validations(), field->full_name());
    if (!rules.ok()) return rules.status();
    node["x-kubernetes-validations"] = *std::move(rules);
  }
  return absl::OkStatus();
}

absl::StatusOr<Bag> SchemaBuilder::Field(const FieldDescriptor* field) {
  const crd::Field& options = field->options().GetExtension(crd::field);
  Bag node;
  if (field->is_map()) {
    absl::StatusOr<Bag> value = Element(field->message_type()->map_value());
    if (!value.ok()) return value.status();
    if (absl::Status s = ApplyElementOptions(field, options, *value); !s.ok()) return s;
    node["type"] = "object";
    node["additionalProperties"] = Ordered(*value);
  } else if (field->is_repeated()) {
    absl::StatusOr<Bag> item = Element(field);
    if (!item.ok()) return item.status();
    if (absl::Status s = ApplyElementOptions(field, options, *item); !s.ok()) return s;
    node["type"] = "array";
    node["items"] = Ordered(*item);
  } else {
    absl::StatusOr<Bag> value = Element(field);
    if (!value.ok()) return value.status();
    node = *std::move(value);
    if (absl::Status s = ApplyElementOptions(field, options, node); !s.ok()) return s;
  }
  if (absl::Status s = ApplyContainerOptions(field, options, node); !s.ok()) return s;
  // The field's own comment says what the value means here; a message field without one keeps the
  // comment of its message type.
  if (std::string description = FieldComment(field); !description.empty()) {
    node["description"] = description;
  }
  return node;
}

constexpr char kApiVersionDescription[] =
    "APIVersion defines the versioned schema of this representation of an object. Servers should "
    "convert recognized schemas to the latest internal value, and may reject unrecognized values. "
    "More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#resources";
constexpr char kKindDescription[] =
    "Kind is a string value representing the REST resource this object represents. Servers may "
    "infer this from the endpoint the client submits requests to. Cannot be updated. In "
    "CamelCase. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#types-kinds";

// Checks that a printer column's simple `.spec...`/`.status...` path names a property, so a typo
// does not silently produce an always-empty column. Paths with filters are checked up to the
// first `[`; `.metadata` paths are not checked (the schema does not describe metadata).
absl::Status CheckColumnPath(const json& root_schema, const std::string& kind,
                             const crd::PrinterColumn& column) {
  absl::string_view path = column.json_path();
  if (!absl::ConsumePrefix(&path, ".")) {
    return absl::InvalidArgumentError(
        absl::StrCat(kind, ": printer column ", column.name(), ": jsonPath must start with '.'"));
  }
  path = path.substr(0, path.find('['));
  const json* node = &root_schema;
  for (absl::string_view segment : absl::StrSplit(path, '.')) {
    if (segment == "metadata" && node == &root_schema) return absl::OkStatus();
    if (segment.empty()) break;
    auto properties = node->find("properties");
    auto it = properties == node->end() ? properties : properties->find(std::string(segment));
    if (properties == node->end() || it == properties->end()) {
      return absl::InvalidArgumentError(absl::StrCat(kind, ": printer column ", column.name(),
                                                     ": no property \"", segment, "\" in ",
                                                     column.json_path()));
    }
    node = &*it;
    if (node->value("type", "") == "array") node = &(*node)["items"];
  }
  return absl::OkStatus();
}

void EmitString(YAML::Emitter& out, const std::string& text) {
  // YAML 1.1 readers (go-yaml, used by kubectl) turn these plain scalars into booleans or null.
  static const std::set<std::string> kNonStringWords = {
      "y",    "Y",    "yes",   "Yes",   "YES",   "n",     "N",     "no", "No",
      "NO",   "true", "True",  "TRUE",  "false", "False", "FALSE", "on", "On",
      "ON",   "off",  "Off",   "OFF",   "null",  "Null",  "NULL",  "~",  ".inf",
      ".Inf", ".INF", "-.inf", "+.inf", ".nan",  ".NaN",  ".NAN",  "=",  "<<"};
  bool quote = text.empty() || kNonStringWords.contains(text);
  // Anything that may read as a number (1, -1, .5, 1e3, 0x1F, 1:20, 1_000) is quoted.
  if (!text.empty()) {
    const char first = text[0];
    const char second = text.size() > 1 ? text[1] : '\0';
    if (std::isdigit(static_cast<unsigned char>(first)) ||
        ((first == '-' || first == '+' || first == '.') &&
         (std::isdigit(static_cast<unsigned char>(second)) || second == '.'))) {
      quote = true;
    }
  }
  // Control characters and line breaks: double quotes keep them exact (`\n`), block scalars would
  // add a trailing newline with yaml-cpp.
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x20) quote = true;
  }
  if (quote) out << YAML::DoubleQuoted;
  out << text;
}

void Emit(YAML::Emitter& out, const json& value) {
  switch (value.type()) {
    case json::value_t::object:
      if (value.empty()) out << YAML::Flow;
      out << YAML::BeginMap;
      for (const auto& [key, child] : value.items()) {
        out << YAML::Key;
        EmitString(out, key);
        out << YAML::Value;
        Emit(out, child);
      }
      out << YAML::EndMap;
      break;
    case json::value_t::array:
      if (value.empty()) out << YAML::Flow;
      out << YAML::BeginSeq;
      for (const json& child : value) Emit(out, child);
      out << YAML::EndSeq;
      break;
    case json::value_t::string:
      EmitString(out, value.get<std::string>());
      break;
    case json::value_t::boolean:
      out << value.get<bool>();
      break;
    case json::value_t::number_integer:
      out << value.get<int64_t>();
      break;
    case json::value_t::number_unsigned:
      out << value.get<uint64_t>();
      break;
    case json::value_t::number_float:
      out << value.get<double>();
      break;
    case json::value_t::null:
    case json::value_t::discarded:
    case json::value_t::binary:
      out << YAML::Null;
      break;
  }
}

void CollectResources(const Descriptor* message, std::vector<const Descriptor*>& resources) {
  if (message->options().HasExtension(crd::resource)) resources.push_back(message);
  for (int i = 0; i < message->nested_type_count(); ++i) {
    CollectResources(message->nested_type(i), resources);
  }
}

std::string Header(const std::vector<std::string>& sources) {
  return absl::StrCat("# Generated by tools/protoc-gen-crd from ", absl::StrJoin(sources, ", "),
                      "; DO NOT EDIT.\n# Regenerate with scripts/generate-crds.sh.\n");
}

}  // namespace

absl::StatusOr<GeneratorOptions> ParseParameter(std::string_view parameter_view) {
  const absl::string_view parameter(parameter_view.data(), parameter_view.size());
  GeneratorOptions options;
  for (absl::string_view pair : absl::StrSplit(parameter, ',', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(pair, absl::MaxSplits('=', 1));
    if (kv.first == "source_prefix") {
      options.source_prefix = std::string(kv.second);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown parameter \"", kv.first, "\" (known: source_prefix)"));
    }
  }
  return options;
}

std::string CommentToDescription(std::string_view comments) {
  const absl::string_view leading_comments(comments.data(), comments.size());
  std::vector<std::string> paragraphs;
  std::string current;
  for (absl::string_view line : absl::StrSplit(leading_comments, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    // Block comments (`/* ... */`) often start their lines with `*`.
    if (absl::ConsumePrefix(&line, "*")) line = absl::StripLeadingAsciiWhitespace(line);
    if (line.empty()) {
      if (!current.empty()) paragraphs.push_back(std::move(current));
      current.clear();
      continue;
    }
    if (!current.empty()) current += ' ';
    absl::StrAppend(&current, line);
  }
  if (!current.empty()) paragraphs.push_back(std::move(current));
  return absl::StrJoin(paragraphs, "\n\n");
}

// `a` unchanged from oldSelf, presence included (CEL errors on absent keys).
std::string Unchanged(const std::string& path) {
  return absl::StrCat("(has(self.", path, ") == has(oldSelf.", path, ") && (!has(self.", path,
                      ") || self.", path, " == oldSelf.", path, "))");
}

// The root-level rules of Resource.freeze, one per `frozen` field of `spec`.
absl::StatusOr<json> FreezeRules(const Descriptor* kind, const crd::Freeze& freeze) {
  const FieldDescriptor* spec = kind->FindFieldByName("spec");
  if (spec == nullptr || spec->message_type() == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(kind->full_name(), ": freeze needs a spec"));
  }
  if (freeze.when().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(kind->full_name(), ": freeze needs `when`"));
  }
  const Descriptor* spec_type = spec->message_type();
  std::string escape;
  if (!freeze.unless_changed().empty()) {
    const FieldDescriptor* u = nullptr;
    for (int i = 0; i < spec_type->field_count(); ++i) {
      if (spec_type->field(i)->json_name() == freeze.unless_changed()) u = spec_type->field(i);
    }
    if (u == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(kind->full_name(), ": freeze.unless_changed names no spec field \"",
                       freeze.unless_changed(), "\""));
    }
    escape = absl::StrCat("!", Unchanged("spec." + u->json_name()), " || ");
  }
  json rules = json::array();
  for (int i = 0; i < spec_type->field_count(); ++i) {
    const FieldDescriptor* f = spec_type->field(i);
    if (!f->options().GetExtension(crd::field).frozen()) continue;
    const std::string path = "spec." + f->json_name();
    json rule = json::object();
    rule["rule"] = absl::StrCat("!(", freeze.when(), ") || ", escape, Unchanged(path));
    rule["message"] = freeze.message();
    rule["fieldPath"] = "." + path;
    rules.push_back(std::move(rule));
  }
  return rules;
}

absl::StatusOr<json> BuildCrd(const Descriptor* kind) {
  const crd::Resource& resource = kind->options().GetExtension(crd::resource);
  const std::string& name = kind->full_name();
  for (const auto& [what, value] :
       {std::pair<absl::string_view, const std::string*>{"group", &resource.group()},
        {"version", &resource.version()},
        {"kind", &resource.kind()},
        {"plural", &resource.plural()}}) {
    if (value->empty()) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": resource option needs `", what, "`"));
    }
  }
  if (resource.plural() != absl::AsciiStrToLower(resource.plural())) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": plural must be lower case"));
  }
  const std::string scope = resource.scope().empty() ? "Namespaced" : resource.scope();
  if (scope != "Namespaced" && scope != "Cluster") {
    return absl::InvalidArgumentError(absl::StrCat(name, ": scope must be Namespaced or Cluster"));
  }

  SchemaBuilder builder;
  absl::StatusOr<Bag> body = builder.Message(kind);
  if (!body.ok()) return body.status();
  if (resource.has_freeze()) {
    absl::StatusOr<json> rules = FreezeRules(kind, resource.freeze());
    if (!rules.ok()) return rules.status();
    json all = body->contains("x-kubernetes-validations") ? (*body)["x-kubernetes-validations"]
                                                          : json::array();
    for (auto& r : *rules) all.push_back(std::move(r));
    if (!all.empty()) (*body)["x-kubernetes-validations"] = std::move(all);
  }
  json body_properties = (*body)["properties"];
  for (const char* reserved : {"apiVersion", "kind", "metadata"}) {
    if (body_properties.contains(reserved)) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": field \"", reserved, "\" is reserved for the object envelope"));
    }
  }
  json properties = json::object();
  properties["apiVersion"] = {{"description", kApiVersionDescription}, {"type", "string"}};
  properties["kind"] = {{"description", kKindDescription}, {"type", "string"}};
  properties["metadata"] = {{"type", "object"}};
  for (auto& [key, value] : body_properties.items()) properties[key] = value;
  (*body)["properties"] = std::move(properties);
  const json root_schema = Ordered(*body);

  json version = json::object();
  version["name"] = resource.version();
  version["served"] = true;
  version["storage"] = true;
  if (body_properties.contains("status")) {
    version["subresources"] = {{"status", json::object()}};
  }
  if (resource.printer_columns_size() > 0) {
    static const std::set<std::string> kColumnTypes = {"integer", "number", "string", "boolean",
                                                       "date"};
    json columns = json::array();
    for (const crd::PrinterColumn& column : resource.printer_columns()) {
      if (column.name().empty() || !kColumnTypes.contains(column.type()) || column.priority() < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, ": printer column \"", column.name(),
                         "\" needs a name, a type (integer|number|string|boolean|date) and a "
                         "priority >= 0"));
      }
      if (absl::Status s = CheckColumnPath(root_schema, name, column); !s.ok()) return s;
      json entry = json::object();
      entry["name"] = column.name();
      entry["type"] = column.type();
      entry["jsonPath"] = column.json_path();
      if (!column.description().empty()) entry["description"] = column.description();
      if (column.priority() > 0) entry["priority"] = column.priority();
      columns.push_back(std::move(entry));
    }
    version["additionalPrinterColumns"] = std::move(columns);
  }
  version["schema"] = {{"openAPIV3Schema", root_schema}};

  json names = json::object();
  names["kind"] = resource.kind();
  names["listKind"] = resource.kind() + "List";
  names["plural"] = resource.plural();
  names["singular"] =
      resource.singular().empty() ? absl::AsciiStrToLower(resource.kind()) : resource.singular();
  if (resource.short_names_size() > 0) {
    names["shortNames"] = StringArray(resource.short_names());
  }
  if (resource.categories_size() > 0) {
    names["categories"] = StringArray(resource.categories());
  }

  json crd_document = json::object();
  crd_document["apiVersion"] = "apiextensions.k8s.io/v1";
  crd_document["kind"] = "CustomResourceDefinition";
  crd_document["metadata"] = {{"name", resource.plural() + "." + resource.group()}};
  crd_document["spec"] = json::object();
  crd_document["spec"]["group"] = resource.group();
  crd_document["spec"]["names"] = std::move(names);
  crd_document["spec"]["scope"] = scope;
  crd_document["spec"]["versions"] = json::array({std::move(version)});
  return crd_document;
}

std::string ToYaml(const json& document, std::string_view header) {
  YAML::Emitter out;
  out.SetIndent(2);
  Emit(out, document);
  return absl::StrCat(absl::string_view(header.data(), header.size()), out.c_str(), "\n");
}

absl::StatusOr<std::vector<GeneratedFile>> GenerateCrds(
    const std::vector<const FileDescriptor*>& files, const GeneratorOptions& options) {
  std::map<std::string, GeneratedFile> by_name;  // sorted by file name
  std::set<std::string> sources;
  for (const FileDescriptor* file : files) {
    std::vector<const Descriptor*> resources;
    for (int i = 0; i < file->message_type_count(); ++i) {
      CollectResources(file->message_type(i), resources);
    }
    for (const Descriptor* kind : resources) {
      absl::StatusOr<json> crd_document = BuildCrd(kind);
      if (!crd_document.ok()) return crd_document.status();
      const crd::Resource& resource = kind->options().GetExtension(crd::resource);
      std::string name = absl::StrCat(resource.group(), "_", resource.plural(), ".yaml");
      if (by_name.contains(name)) {
        return absl::InvalidArgumentError(
            absl::StrCat(kind->full_name(), ": a second resource for ", name));
      }
      const std::string source = options.source_prefix + file->name();
      sources.insert(source);
      by_name[name] = {name, ToYaml(*crd_document, Header({source}))};
    }
  }
  std::vector<GeneratedFile> generated;
  if (by_name.empty()) return generated;
  json kustomization = json::object();
  kustomization["apiVersion"] = "kustomize.config.k8s.io/v1beta1";
  kustomization["kind"] = "Kustomization";
  kustomization["resources"] = json::array();
  for (auto& [name, file] : by_name) {
    kustomization["resources"].push_back(name);
    generated.push_back(std::move(file));
  }
  generated.push_back(
      {"kustomization.yaml",
       ToYaml(kustomization, Header(std::vector<std::string>(sources.begin(), sources.end())))});
  return generated;
}

bool CrdCodeGenerator::Generate(const FileDescriptor* file, const std::string& parameter,
                                google::protobuf::compiler::GeneratorContext* context,
                                std::string* error) const {
  return GenerateAll({file}, parameter, context, error);
}

bool CrdCodeGenerator::GenerateAll(const std::vector<const FileDescriptor*>& files,
                                   const std::string& parameter,
                                   google::protobuf::compiler::GeneratorContext* context,
                                   std::string* error) const {
  absl::StatusOr<GeneratorOptions> options = ParseParameter(parameter);
  if (!options.ok()) {
    *error = std::string(options.status().message());
    return false;
  }
  absl::StatusOr<std::vector<GeneratedFile>> generated = GenerateCrds(files, *options);
  if (!generated.ok()) {
    *error = std::string(generated.status().message());
    return false;
  }
  for (const GeneratedFile& file : *generated) {
    std::unique_ptr<google::protobuf::io::ZeroCopyOutputStream> stream(context->Open(file.name));
    google::protobuf::io::CodedOutputStream out(stream.get());
    out.WriteRaw(file.content.data(), static_cast<int>(file.content.size()));
  }
  return true;
}

}  // namespace slurmop::crdgen
