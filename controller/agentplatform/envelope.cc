// File: controller/agentplatform/envelope.cc
//
// Envelope encoding/decoding with nlohmann::json, following protobuf's JSON
// mapping of the v1beta1 proto (see the header for the contract). Decoding
// is one SAX pass over the answer that builds only what is kept: the Slurm
// body (structuredBody, or `body`), with the `jobs` filter applied as keys
// arrive; unknown envelope fields are checked for syntax and dropped.

#include "controller/agentplatform/envelope.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <istream>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/agentplatform/body_stream.h"
#include "controller/common/bounded_text.h"

namespace slurmop::agentplatform {
namespace {

using Json = nlohmann::json;

constexpr int kMaxDepth = 100;
constexpr int64_t kMaxSafeInt = int64_t{1} << 53;
constexpr double kMaxSafeDouble = 9007199254740992.0;  // 2^53

// A number as google.protobuf.Value carries it (a double), given back as a
// JSON integer when it is integral and within +-2^53.
Json FromDouble(double d) {
  if (std::isfinite(d) && std::trunc(d) == d && std::fabs(d) <= kMaxSafeDouble) {
    return Json(static_cast<int64_t>(d));
  }
  return Json(d);
}

// ------------------------------------------------------------ decoding

// nlohmann SAX handler building the kept parts of one JSON text.
//  * kEnvelope: the text is a callSlurmRestApi envelope. Only the values of
//    `status`, `structuredBody` / `structured_body` and `body` are read;
//    numbers go through double (google.protobuf.Value), a key repeated
//    within one object is refused (Struct's map), nesting is limited to
//    kMaxDepth (protobuf's parser refuses deeper texts too).
//  * kPlain: any JSON text (a `body` string), read as nlohmann's own parser
//    does (exact numbers, a repeated key keeps the later value), nesting
//    limited to kMaxDepth as well: nothing deeper is built, so no recursion
//    over the answer (dump(), copies) can exhaust the stack.
// In both, the objects of the body's top-level `jobs` array keep only the
// keys of `job_fields` (when not empty): a dropped key's value is skipped by
// the parser without being built. (nlohmann's parse() callback can drop keys
// too, but it builds each dropped value before discarding it, 3x the bytes
// allocated here for 10,000 jobs (bench/agentplatform_client_bench), and in
// 3.11 every object that ends rescans its parent for discarded values, which
// is quadratic in the number of jobs.)
class BodyReader {
 public:
  enum class Mode { kEnvelope, kPlain };

  BodyReader(Mode mode, const std::vector<std::string>& job_fields)
      : mode_(mode), job_fields_(job_fields), proto_(mode == Mode::kEnvelope) {}
  // Streaming (kEnvelope over an EnvelopeStream): the records of the
  // effective body's top-level `jobs` array go to `sink` as each closes,
  // each bounded to kMaxJobRecordBytes by `stream`.
  BodyReader(const std::vector<std::string>& job_fields, EnvelopeStream& stream, JobSink* sink)
      : BodyReader(Mode::kEnvelope, job_fields) {
    stream_ = &stream;
    sink_ = sink;
  }

  // The sink's refusal, if it refused a record.
  const absl::Status& sink_status() const { return sink_status_; }
  // The error lies in the Slurm body a `body` string held.
  bool in_body_string() const { return in_wrapper_; }
  // Records handed to the sink (since its last Restart).
  size_t streamed() const { return streamed_; }

  // Why the text was refused, once a handler returned false.
  const std::string& error() const { return error_; }
  // The text was refused for nesting deeper than kMaxDepth.
  bool too_deep() const { return too_deep_; }

  // kPlain: the text's value.
  Json root;
  // kEnvelope: what the envelope said.
  int32_t status = 0;
  bool has_structured_body = false;
  Json structured_body;
  bool has_body = false;
  Json body;

  // The SAX interface (nlohmann::json::sax_parse).
  bool null() { return Dropped() || Scalar(Json()); }
  bool boolean(bool b) { return Dropped() || Scalar(Json(b)); }
  bool number_integer(Json::number_integer_t v) {
    if (Dropped()) return true;
    if (proto_ && (v > kMaxSafeInt || v < -kMaxSafeInt)) {
      return Scalar(FromDouble(static_cast<double>(v)));
    }
    return Scalar(Json(v));
  }
  bool number_unsigned(Json::number_unsigned_t v) {
    if (Dropped()) return true;
    if (!proto_) return Scalar(Json(v));
    if (v <= static_cast<uint64_t>(kMaxSafeInt)) return Scalar(Json(static_cast<int64_t>(v)));
    return Scalar(FromDouble(static_cast<double>(v)));
  }
  bool number_float(Json::number_float_t v, const std::string& /*text*/) {
    return Dropped() || Scalar(proto_ ? FromDouble(v) : Json(v));
  }
  bool string(std::string& s) { return Dropped() || Scalar(Json(s)); }
  bool binary(Json::binary_t& /*bytes*/) { return Fail("binary data"); }
  bool start_object(std::size_t /*elements*/) { return Open(/*object=*/true); }
  bool start_array(std::size_t /*elements*/) { return Open(/*object=*/false); }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }
  bool key(std::string& k);
  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& e) {
    return Fail(e.what());
  }

 private:
  // The envelope field whose value comes next.
  enum class Field { kStatus, kStructuredBody, kBody };
  // What a container being built is, for the `jobs` filter.
  // kWrapper: the brackets EnvelopeStream puts around a `body` string.
  enum class Kind { kOther, kBodyRoot, kJobs, kJob, kWrapper };
  struct Frame {
    Json* value;
    Kind kind;
    bool streams = false;  // kBodyRoot, kJobs, records: records go to the sink
    bool record = false;   // an element of a streaming jobs array
  };

  // `why` may quote the answer (a repeated key, a status, the parser's last token): cut like any
  // remote text before it reaches a SlurmJob's status.
  bool Fail(std::string why) {
    if (error_.empty()) error_ = CutText(why, kMaxRemoteMessageBytes);
    return false;
  }
  // True when the value that starts now is to be skipped (a scalar, here).
  bool Dropped() {
    if (skip_ > 0) return true;
    if (drop_next_) {
      drop_next_ = false;
      return true;
    }
    return false;
  }
  bool Deeper() {
    if (++depth_ > kMaxDepth) {
      too_deep_ = true;
      return Fail(absl::StrCat("nested deeper than ", kMaxDepth, " levels"));
    }
    return true;
  }
  // Puts `v` where the next value of the innermost container goes.
  Json* Put(Json v) {
    Json& parent = *stack_.back().value;
    if (parent.is_array()) {
      Json::array_t& array = parent.get_ref<Json::array_t&>();
      array.push_back(std::move(v));
      return &array.back();
    }
    *slot_ = std::move(v);
    return slot_;
  }
  bool Scalar(Json v);
  bool Open(bool object);
  // Open's two cases: inside a value being built, or a value at the envelope's top level.
  bool OpenNested(Json fresh, bool object);
  bool OpenTopLevel(Json fresh, bool object);
  bool Close();
  bool SetStatus(const Json& v);
  // A new effective body replaces one whose records the sink may hold.
  void Replacing() {
    if (sink_ != nullptr && streamed_ > 0) {
      sink_->Restart();
      streamed_ = 0;
    }
  }
  bool BodyStreams() const { return sink_ != nullptr && !has_structured_body; }
  bool RecordDone(Frame& record);

  const Mode mode_;
  const std::vector<std::string>& job_fields_;
  bool proto_;  // numbers through double, repeated keys refused (not in a body string)
  std::string error_;
  int depth_ = 0;  // open containers, skipped ones included
  bool too_deep_ = false;
  int skip_ = 0;            // > 0: inside a skipped container, this deep
  bool drop_next_ = false;  // the next value is skipped
  Field field_ = Field::kStatus;
  std::vector<Frame> stack_;  // the containers being built
  Json* slot_ = nullptr;      // where the value of the last key goes
  bool next_is_jobs_ = false;
  EnvelopeStream* stream_ = nullptr;
  JobSink* sink_ = nullptr;
  absl::Status sink_status_;
  size_t streamed_ = 0;
  bool root_has_jobs_ = false;  // the streaming body root had a `jobs` key
  // Inside a kWrapper: the envelope's depth and number mode, set aside.
  bool in_wrapper_ = false;
  int wrapper_values_ = 0;
  int saved_depth_ = 0;
  bool saved_proto_ = true;
};

bool BodyReader::key(std::string& k) {
  if (skip_ > 0) return true;
  if (stack_.empty()) {  // a field of the envelope
    if (k == "status") {
      field_ = Field::kStatus;
    } else if (k == "structuredBody" || k == "structured_body") {
      field_ = Field::kStructuredBody;
    } else if (k == "body") {
      field_ = Field::kBody;
    } else {
      drop_next_ = true;  // unknown fields are ignored
    }
    return true;
  }
  const Frame& top = stack_.back();
  if (top.kind == Kind::kJob && !job_fields_.empty() &&
      std::find(job_fields_.begin(), job_fields_.end(), k) == job_fields_.end()) {
    drop_next_ = true;
    return true;
  }
  Json::object_t& object = top.value->get_ref<Json::object_t&>();
  if (proto_) {
    auto [it, inserted] = object.emplace(k, Json());
    if (!inserted) return Fail(absl::StrCat("the key \"", k, "\" is repeated in an object"));
    slot_ = &it->second;
  } else {
    slot_ = &object[k];
    *slot_ = Json();
  }
  next_is_jobs_ = top.kind == Kind::kBodyRoot && k == "jobs";
  if (next_is_jobs_ && top.streams) {
    if (root_has_jobs_) Replacing();  // the later `jobs` counts
    root_has_jobs_ = true;
  }
  return true;
}

bool BodyReader::RecordDone(Frame& record) {
  stream_->ClearRecordLimit();
  Json::array_t& jobs = stack_.back().value->get_ref<Json::array_t&>();
  Json taken = std::move(*record.value);
  jobs.pop_back();
  ++streamed_;
  absl::Status s = sink_->Job(std::move(taken));
  if (s.ok()) return true;
  sink_status_ = s;
  return Fail(absl::StrCat("a job record was refused: ", s.message()));
}

bool BodyReader::Scalar(Json v) {
  if (!stack_.empty() && stack_.back().kind == Kind::kWrapper) {
    if (wrapper_values_++ > 0) return Fail("its body string holds more than one JSON value");
    body = std::move(v);
    return true;
  }
  if (!stack_.empty()) {
    if (stack_.back().kind == Kind::kJobs && stack_.back().streams) {  // a record, if odd
      ++streamed_;
      absl::Status s = sink_->Job(std::move(v));
      if (s.ok()) return true;
      sink_status_ = s;
      return Fail(absl::StrCat("a job record was refused: ", s.message()));
    }
    Put(std::move(v));
    return true;
  }
  if (mode_ == Mode::kPlain) {
    root = std::move(v);
    return true;
  }
  if (depth_ == 0) return Fail("the answer is not a JSON object");
  switch (field_) {
    case Field::kStatus:
      return SetStatus(v);
    case Field::kStructuredBody:
      // null leaves a message field unset.
      return v.is_null() || Fail("structuredBody is not an object");
    case Field::kBody:
      if (!has_structured_body && has_body) Replacing();
      body = std::move(v);
      has_body = true;
      return true;
  }
  return true;
}

bool BodyReader::Open(bool object) {
  if (skip_ > 0 || drop_next_) {
    drop_next_ = false;
    ++skip_;
    return Deeper();
  }
  if (!Deeper()) return false;
  Json fresh = object ? Json::object() : Json::array();
  if (!stack_.empty()) return OpenNested(std::move(fresh), object);
  return OpenTopLevel(std::move(fresh), object);
}

bool BodyReader::OpenNested(Json fresh, bool object) {
  const Kind parent = stack_.back().kind;
  if (parent == Kind::kWrapper) {  // the Slurm body a `body` string holds
    if (wrapper_values_++ > 0) return Fail("its body string holds more than one JSON value");
    body = std::move(fresh);
    root_has_jobs_ = false;
    stack_.push_back({&body, object ? Kind::kBodyRoot : Kind::kOther, object && BodyStreams()});
    return true;
  }
  const bool streams = stack_.back().streams;
  Kind kind = Kind::kOther;
  if (!object && parent == Kind::kBodyRoot && next_is_jobs_) kind = Kind::kJobs;
  if (object && parent == Kind::kJobs) kind = Kind::kJob;
  Json* value = Put(std::move(fresh));
  // Every element of a streaming jobs array is a record (objects are
  // filtered as kJob; anything else goes to the sink as it is, in order).
  const bool record = streams && parent == Kind::kJobs;
  if (record) stream_->SetRecordLimit(kMaxJobRecordBytes);
  stack_.push_back({value, kind, streams && (kind == Kind::kJobs || record), record});
  return true;
}

bool BodyReader::OpenTopLevel(Json fresh, bool object) {
  const Kind kind = object ? Kind::kBodyRoot : Kind::kOther;
  if (mode_ == Mode::kPlain) {
    root = std::move(fresh);
    stack_.push_back({&root, kind});
    return true;
  }
  if (depth_ == 1) {  // the envelope itself, read but not built
    return object || Fail("the answer is not a JSON object");
  }
  switch (field_) {
    case Field::kStatus:
      return Fail(object ? "status is an object" : "status is an array");
    case Field::kStructuredBody:
      if (!object) return Fail("structuredBody is an array");
      if (has_structured_body || has_body) Replacing();
      structured_body = std::move(fresh);
      has_structured_body = true;
      root_has_jobs_ = false;
      stack_.push_back({&structured_body, kind, sink_ != nullptr});
      return true;
    case Field::kBody:
      if (!has_structured_body && has_body) Replacing();
      has_body = true;
      if (!object && stream_ != nullptr && stream_->OpensBodyString(stream_->consumed() - 1)) {
        body = Json();  // "" holds no value: null
        in_wrapper_ = true;
        wrapper_values_ = 0;
        saved_depth_ = depth_;
        saved_proto_ = proto_;
        depth_ = 0;  // the body string is nested from its own root, as when parsed alone
        proto_ = false;
        stack_.push_back({nullptr, Kind::kWrapper});
        return true;
      }
      body = std::move(fresh);
      root_has_jobs_ = false;
      stack_.push_back({&body, kind, BodyStreams()});
      return true;
  }
  return true;
}

bool BodyReader::Close() {
  --depth_;
  if (skip_ > 0) {
    --skip_;
    return true;
  }
  if (stack_.empty()) return true;
  Frame top = stack_.back();
  stack_.pop_back();
  if (top.kind == Kind::kWrapper) {
    in_wrapper_ = false;
    depth_ = saved_depth_ - 1;
    proto_ = saved_proto_;
  } else if (top.record) {
    return RecordDone(top);
  }
  return true;
}

// An int32 as protobuf's JSON mapping takes it: a number with an integral
// value, or a string of decimal digits with an optional sign; null is 0.
bool BodyReader::SetStatus(const Json& v) {
  constexpr int64_t kMin = std::numeric_limits<int32_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  std::optional<int64_t> n;
  if (v.is_null()) {
    n = 0;
  } else if (v.is_number_integer()) {
    n = v.get<int64_t>();  // through FromDouble: within +-2^53
  } else if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::trunc(d) == d && d >= kMin && d <= kMax) n = static_cast<int64_t>(d);
  } else if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    const size_t digits = !s.empty() && (s[0] == '+' || s[0] == '-') ? 1 : 0;
    int64_t parsed = 0;
    if (s.size() > digits &&
        std::all_of(s.begin() + digits, s.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
        absl::SimpleAtoi(s, &parsed)) {
      n = parsed;
    }
  }
  if (!n.has_value() || *n < kMin || *n > kMax) {
    return Fail(absl::StrCat("status ", v.dump(), " is not an int32"));
  }
  status = static_cast<int32_t>(*n);
  return true;
}

absl::Status NotAnEnvelope(const std::string& why) {
  return absl::InternalError(
      absl::StrCat("Agent Platform: the answer is not a callSlurmRestApi envelope (", why, ")"));
}

// ------------------------------------------------------------ encoding

// Why `j` cannot travel as a google.protobuf.Value ("" = it can), with the
// path to the value at fault in *where (innermost segment first).
std::string Unencodable(const Json& j, int depth, std::vector<std::string>* where) {
  if (depth > kMaxDepth) return absl::StrCat("nests deeper than ", kMaxDepth, " levels");
  switch (j.type()) {
    case Json::value_t::null:
    case Json::value_t::boolean:
    case Json::value_t::string:
      return "";
    case Json::value_t::number_integer: {
      const int64_t v = j.get<int64_t>();
      if (v <= kMaxSafeInt && v >= -kMaxSafeInt) return "";
      return absl::StrCat("holds the integer ", v);
    }
    case Json::value_t::number_unsigned: {
      const uint64_t v = j.get<uint64_t>();
      if (v <= static_cast<uint64_t>(kMaxSafeInt)) return "";
      return absl::StrCat("holds the integer ", v);
    }
    case Json::value_t::number_float:
      return std::isfinite(j.get<double>()) ? "" : "holds a non-finite number";
    case Json::value_t::binary:
      return "holds binary data";
    case Json::value_t::discarded:
      return "holds a discarded value";
    case Json::value_t::array: {
      size_t i = 0;
      for (const Json& item : j) {
        std::string why = Unencodable(item, depth + 1, where);
        if (!why.empty()) {
          where->push_back(absl::StrCat(i));
          return why;
        }
        ++i;
      }
      return "";
    }
    case Json::value_t::object:
      for (const auto& [key, value] : j.items()) {
        std::string why = Unencodable(value, depth + 1, where);
        if (!why.empty()) {
          where->push_back(key);
          return why;
        }
      }
      return "";
  }
  return "holds a value of unknown type";
}

}  // namespace

std::string_view ProtoMethodName(HttpMethod method) {
  switch (method) {
    case HttpMethod::kGet:
      return "HTTP_METHOD_GET";
    case HttpMethod::kPost:
      return "HTTP_METHOD_POST";
    case HttpMethod::kDelete:
      return "HTTP_METHOD_DELETE";
  }
  return "HTTP_METHOD_UNSPECIFIED";
}

absl::StatusOr<std::string> EncodeRequest(HttpMethod method, std::string_view path,
                                          const nlohmann::json* body) {
  if (body != nullptr) {
    if (!body->is_object()) {
      return absl::InvalidArgumentError("the Slurm request body must be a JSON object");
    }
    std::vector<std::string> where;
    const std::string why = Unencodable(*body, 0, &where);
    if (!why.empty()) {
      std::reverse(where.begin(), where.end());
      const bool integer = absl::StartsWith(why, "holds the integer");
      return absl::InvalidArgumentError(absl::StrCat(
          "the request body ", why, " at /", absl::StrJoin(where, "/"),
          integer ? ", beyond 2^53: callSlurmRestApi carries numbers as doubles and would change it"
                  : ""));
    }
  }
  try {
    std::string out = R"({"method":")";
    out += ProtoMethodName(method);
    out += R"(","path":)";
    out += Json(std::string(path)).dump();
    if (body != nullptr) {
      out += R"(,"body":)";
      out += body->dump();
    }
    out += '}';
    return out;
  } catch (const Json::exception& e) {
    // dump() refuses strings that are not UTF-8 (type_error 316).
    return absl::InvalidArgumentError(
        absl::StrCat("cannot encode the callSlurmRestApi request: ", e.what()));
  }
}

namespace {

// The SlurmResponse of a parsed envelope (`body` a string: parsed whole).
absl::StatusOr<SlurmResponse> Finish(BodyReader& envelope, const CallOptions& options) {
  if (envelope.status == 0) return NotAnEnvelope("no status");
  SlurmResponse out;
  out.status = envelope.status;
  if (envelope.has_structured_body) {
    out.body = std::move(envelope.structured_body);
  } else if (envelope.has_body) {
    if (!envelope.body.is_string()) {
      out.body = std::move(envelope.body);
    } else if (const std::string& text = envelope.body.get_ref<const std::string&>();
               !text.empty()) {
      BodyReader plain(BodyReader::Mode::kPlain, options.job_fields);
      if (Json::sax_parse(text.data(), text.data() + text.size(), &plain)) {
        out.body = std::move(plain.root);
      } else if (plain.too_deep()) {
        return NotAnEnvelope(absl::StrCat("its body is ", plain.error()));
      } else {
        out.body = std::move(envelope.body);  // not JSON: kept as a string
      }
    }  // "" stays null
  }
  return out;
}

}  // namespace

absl::StatusOr<SlurmResponse> DecodeResponse(std::string_view json, const CallOptions& options) {
  BodyReader envelope(BodyReader::Mode::kEnvelope, options.job_fields);
  if (!Json::sax_parse(json.data(), json.data() + json.size(), &envelope)) {
    return NotAnEnvelope(envelope.error());
  }
  return Finish(envelope, options);
}

absl::StatusOr<SlurmResponse> DecodeResponseStream(http::BodySource& source,
                                                   const CallOptions& options) {
  EnvelopeStream stream(source, kMaxWholeDecodeBytes);
  BodyReader envelope(options.job_fields, stream, options.job_sink);
  bool parsed = false;
  {
    std::istream in(&stream);
    parsed = Json::sax_parse(in, &envelope);
  }
  if (!stream.transport_status().ok()) return stream.transport_status();
  if (!envelope.sink_status().ok()) return envelope.sink_status();
  if (stream.record_over_limit()) {
    return absl::InternalError(absl::StrCat(
        "Agent Platform: a job record of the answer's jobs list is over the ", kMaxJobRecordBytes,
        "-byte limit of one record (record ", envelope.streamed() + 1, ")"));
  }
  if (parsed) return Finish(envelope, options);
  // Refused while streaming. A small answer is decoded again whole, so that
  // what only the whole text can tell (a `body` string that is not JSON is
  // kept as a string, "" is null) reads as with DecodeResponse.
  const bool string_body = envelope.in_body_string() || stream.failed();
  stream.Drain();
  if (!stream.transport_status().ok()) return stream.transport_status();
  if (stream.retained_all()) {
    if (options.job_sink != nullptr) options.job_sink->Restart();
    return DecodeResponse(stream.retained(), options);
  }
  if (envelope.too_deep()) {
    return NotAnEnvelope(string_body ? absl::StrCat("its body is ", envelope.error())
                                     : envelope.error());
  }
  const std::string why = stream.failed() ? stream.error() : envelope.error();
  if (string_body) {
    return NotAnEnvelope(absl::StrCat("its body string does not hold one JSON value (", why,
                                      "); a body string over ", kMaxWholeDecodeBytes,
                                      " bytes is read only when it holds one"));
  }
  return NotAnEnvelope(why);
}

}  // namespace slurmop::agentplatform
