// File: controller/slurm/output_paths.cc
//
// A port of slurmstepd's batch filename rules (see output_paths.h). The scan
// in ExpandPattern follows _create_batch_fname() step by step, odd corners
// included (a width before an unknown letter keeps only its last digit), so
// that what the status says is the file Slurm opened.

#include "controller/slurm/output_paths.h"

#include <algorithm>
#include <cctype>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace slurmop::slurm {
namespace {

// Slurm's NO_VAL: what %a shows outside an array.
constexpr uint32_t kNoVal = 0xfffffffe;
constexpr unsigned kMaxWidth = 10;

bool IsDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

std::string Padded(int64_t value, unsigned width) {
  return absl::StrFormat("%0*u", static_cast<int>(width), static_cast<uint32_t>(value));
}

// The text that `%<letter>` stands for, nullopt when it needs a part not
// known yet; `known` is false for a letter slurmstepd leaves as written.
struct Substitution {
  bool known = false;
  std::optional<std::string> text;
};

Substitution Substitute(char letter, unsigned width, const BatchOutputContext& c) {
  auto value = [](std::string s) { return Substitution{true, std::move(s)}; };
  auto unknown = Substitution{true, std::nullopt};
  switch (letter) {
    case 'a':
      return value(Padded(c.array_task_id.value_or(kNoVal), width));
    case 'A':
      return value(Padded(c.array_task_id ? c.array_job_id.value_or(c.job_id) : c.job_id, width));
    case 'j':
    case 'J':  // the batch step has no step number to append
      return value(Padded(c.job_id, width));
    case 'n':
    case 't':  // the batch step runs on the first node, as task 0
      return value(Padded(0, width));
    case 's':
      return value("batch");
    case 'N':
      return c.batch_host.empty() ? unknown : value(c.batch_host);
    case 'u':
      return c.user_name.empty() ? unknown : value(c.user_name);
    case 'x':
      return c.job_name.empty() ? unknown : value(c.job_name);
    default:
      return {};
  }
}

// _create_batch_fname(): `q` is the start of the text not yet copied, `p`
// the scan position.
std::optional<std::string> ExpandPattern(std::string_view path, const BatchOutputContext& c) {
  std::string out;
  std::size_t p = 0, q = 0;
  unsigned width = 0;
  auto at = [&](std::size_t i) { return i < path.size() ? path[i] : '\0'; };
  while (p < path.size()) {
    if (path[p] != '%') {
      ++p;
      continue;
    }
    if (at(p + 1) == '%') {  // "%%" -> "%"
      out.append(path.substr(q, p + 1 - q));
      p += 2;
      q = p;
      continue;
    }
    ++p;
    if (IsDigit(at(p))) {
      out.append(path.substr(q, p - 1 - q));
      unsigned long long digits = 0;
      while (IsDigit(at(p))) {
        digits = std::min<unsigned long long>(digits * 10 + (path[p++] - '0'), 1000);
      }
      width = static_cast<unsigned>(std::min<unsigned long long>(digits, kMaxWidth));
      q = p - 1;  // slurmstepd keeps the width's last digit when the letter is unknown
      if (p >= path.size()) break;
    }
    Substitution s = Substitute(at(p), width, c);
    width = 0;
    if (!s.known) continue;  // left as written; the scan goes on from the letter
    if (!s.text) return std::nullopt;
    out.append(path.substr(q, p - 1 - q));  // q <= p - 1: up to the '%' or the width
    out.append(*s.text);
    q = ++p;
  }
  if (q < path.size()) out.append(path.substr(q));
  return out;
}

// remove_path_slashes(): nullopt when the path has no backslash, else the
// path with "\\" as one backslash and every other backslash dropped.
std::optional<std::string> Unescaped(std::string_view path) {
  if (path.find('\\') == std::string_view::npos) return std::nullopt;
  std::string out;
  for (std::size_t i = 0; i < path.size(); ++i) {
    if (path[i] != '\\') {
      out += path[i];
    } else if (i + 1 < path.size() && path[i + 1] == '\\') {
      out += '\\';
      ++i;
    }
  }
  return out;
}

// fname_single_task_io(): a pattern of digits only names the one task whose
// stream goes there; the batch step is task 0.
bool NamesAnotherTask(std::string_view pattern) {
  if (pattern.empty() || !std::all_of(pattern.begin(), pattern.end(), IsDigit)) return false;
  return pattern.find_first_not_of('0') != std::string_view::npos;
}

std::optional<std::string> Bounded(std::string path) {
  if (path.size() > kMaxOutputPathBytes) return std::nullopt;
  return path;
}

// One '/' for each run of them: the same file. REST v0.0.39-v0.0.42 records
// join a working directory that ends in '/' with another one, slurmstepd not.
std::string OneSlashEach(std::string path) {
  path.erase(
      std::unique(path.begin(), path.end(), [](char a, char b) { return a == '/' && b == '/'; }),
      path.end());
  return path;
}

}  // namespace

std::optional<std::string> ExpandBatchOutputPath(std::string_view pattern,
                                                 const BatchOutputContext& context) {
  if (NamesAnotherTask(pattern)) return "/dev/null";
  std::string prefix;
  if (pattern.empty() || pattern[0] != '/') {
    if (context.working_directory.empty()) return std::nullopt;
    prefix = context.working_directory;
  }
  if (std::optional<std::string> escaped = Unescaped(pattern)) {
    // Not expanded, and joined to the working directory as it is (fname_create()).
    return Bounded(absl::StrCat(prefix, *escaped));
  }
  if (!prefix.empty() && prefix.back() != '/') prefix += '/';
  std::optional<std::string> expanded = ExpandPattern(pattern, context);
  if (!expanded) return std::nullopt;
  return Bounded(absl::StrCat(prefix, *expanded));
}

OutputPaths ResolveOutputPaths(const RecordedOutput& recorded, const BatchOutputContext& context) {
  const std::string default_pattern = context.array_task_id ? "slurm-%A_%a.out" : "slurm-%J.out";
  const std::string& out_pattern =
      recorded.standard_output.empty() ? default_pattern : recorded.standard_output;
  const std::string& err_pattern =
      recorded.standard_error.empty() ? out_pattern : recorded.standard_error;
  // Slurm's expansion is taken only once every part is known: before the job
  // started, Slurm (25.05) formats the missing node of a %N as "(null)".
  auto resolve = [&](const std::string& expanded, const std::string& pattern) {
    std::optional<std::string> ours = ExpandBatchOutputPath(pattern, context);
    if (!ours) return std::string();
    return OneSlashEach(expanded.empty() ? *ours : Bounded(expanded).value_or(""));
  };
  return {resolve(recorded.stdout_expanded, out_pattern),
          resolve(recorded.stderr_expanded, err_pattern)};
}

}  // namespace slurmop::slurm
