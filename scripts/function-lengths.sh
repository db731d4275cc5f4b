#!/usr/bin/env bash
# Lines per function in controller/, longest first, with Debian's pmccabe
# (apt-get install pmccabe; not needed by the build or the tests).
# pmccabe cannot parse C++17 nested namespace definitions (`namespace a::b {`)
# nor `class A::B {`, and then reports nothing for the file, so each file is
# rewritten into a temporary copy first (`namespace a { namespace b {`, its
# closing brace doubled; `class A__B {`).
# Usage: scripts/function-lengths.sh [THRESHOLD]   (default 80)
#   prints "lines<TAB>file(line): function" and, last, how many exceed THRESHOLD.
set -euo pipefail
cd "$(dirname "$0")/.."
threshold=${1:-80}
command -v pmccabe >/dev/null || { echo "pmccabe is not installed (apt-get install pmccabe)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for f in $(find controller -name '*.cc' -o -name '*.h' | sort); do
  mkdir -p "$tmp/$(dirname "$f")"
  sed -E -e 's/^class ([A-Za-z_]+)::([A-Za-z_]+) \{/class \1__\2 {/' \
         -e 's/^namespace ([a-z_]+)::([a-z_]+)::([a-z_]+) \{/namespace \1 { namespace \2 { namespace \3 {/' \
         -e 's/^namespace ([a-z_]+)::([a-z_]+) \{/namespace \1 { namespace \2 {/' \
         -e 's#^\}  // namespace ([a-z_]+)::([a-z_]+)::([a-z_]+)#}}}#' \
         -e 's#^\}  // namespace ([a-z_]+)::([a-z_]+)$#}}#' "$f" > "$tmp/$f"
  (cd "$tmp" && pmccabe "$f" 2>/dev/null) || true
done | awk -F'\t' '{print $5 "\t" $6}' | sort -rn > "$tmp/lengths"
cat "$tmp/lengths"
echo "functions over $threshold lines: $(awk -v t="$threshold" '$1 > t' "$tmp/lengths" | wc -l)"
