#!/usr/bin/env bash
# The repository's documents stand alone: no file cites a document that is not in the
# repository, and every relative Markdown link of README.md, docs/*.md and golden/*.md
# resolves, to a file and, where the link names one, to a heading of it.
#
#   tests/docs/check_references.sh [SOURCE_DIR]    (default: the repository of this script)
#
# Citations it rejects, in every tracked file (every file outside .git and build/ when
# SOURCE_DIR is not a git checkout; binary files skipped; this script excepted, since it
# spells the patterns):
#   - the testing design document by its bare name, not docs/TESTING.md. The bare name
#     passes only where it resolves, in a file of docs/ itself;
#   - the PyTorch SDPA notes, and the design and research folders of a shared workspace.
# Prints one line per problem, file:line first, and exits 1 if there is any.
set -euo pipefail
src=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$src"
self=tests/docs/check_references.sh

# Files to scan, NUL-separated, relative to $src.
list_files() {
  if [[ $(git rev-parse --show-toplevel 2>/dev/null) == "$(pwd -P)" ]]; then
    git ls-files -z
  else
    find . \( -path ./.git -o -path ./build \) -prune -o -type f -print0 | sed -z 's#^\./##'
  fi | while IFS= read -r -d '' f; do
    [[ -f $f && $f != "$self" ]] && printf '%s\0' "$f"
  done
}

problems=0
problem() {
  echo "$1"
  problems=$((problems + 1))
}

# 1. Citations of documents outside the repository.
pattern='(?<!docs/)TESTING\.md|pytorch-sdpa|shared/design|shared/research'
while IFS= read -r hit; do
  file=${hit%%:*}
  rest=${hit#*:}
  line=${rest%%:*}
  match=${rest#*:}
  # A bare name that resolves next to the citing file (docs/*.md citing TESTING.md) is a
  # citation of docs/TESTING.md.
  [[ $match == TESTING.md && -f $(dirname "$file")/TESTING.md ]] && continue
  problem "$file:$line: cites '$match', which is not in the repository (docs/TESTING.md, or the upstream source by name)"
done < <(list_files | xargs -0 grep -I -n -o -P "$pattern" -- 2>/dev/null || true)

# 2. Relative Markdown links.
# Prints "line<TAB>target" for every link ](target) outside fenced code blocks.
links() {
  awk '/^[[:space:]]*```/ { fence = !fence; next }
       fence { next }
       { s = $0
         while (match(s, /\]\([^)[:space:]]+\)/)) {
           print FNR "\t" substr(s, RSTART + 2, RLENGTH - 3)
           s = substr(s, RSTART + RLENGTH)
         } }' "$1"
}
# Prints the anchors of a Markdown file's headings as GitHub makes them: lower case, every
# character but letters, digits, spaces, '-' and '_' dropped, spaces turned into '-',
# repeated anchors numbered (-1, -2, ...). ASCII letters only: no heading here has others.
anchors() {
  awk '/^[[:space:]]*```/ { fence = !fence; next }
       fence || !/^#+ / { next }
       { h = $0
         sub(/^#+ +/, "", h)
         sub(/ +#+ *$/, "", h)
         h = tolower(h)
         gsub(/[^a-z0-9 _-]/, "", h)
         gsub(/ /, "-", h)
         if (seen[h]++) print h "-" (seen[h] - 1); else print h }' "$1"
}
checked=0
for md in README.md docs/*.md golden/*.md; do
  [[ -f $md ]] || continue
  dir=$(dirname "$md")
  while IFS=$'\t' read -r line target; do
    [[ $target =~ ^[a-zA-Z][a-zA-Z0-9+.-]*: ]] && continue  # https:, mailto:, ...
    checked=$((checked + 1))
    path=${target%%#*}
    anchor=
    [[ $target == *'#'* ]] && anchor=${target#*#}
    file=$md
    if [[ -n $path ]]; then
      file=$dir/$path
      if [[ ! -e $file ]]; then
        problem "$md:$line: link '$target': no such file ($file)"
        continue
      fi
    fi
    if [[ -n $anchor && $file == *.md && -f $file ]] && ! anchors "$file" | grep -qxF -- "$anchor"; then
      problem "$md:$line: link '$target': $file has no heading with the anchor '#$anchor'"
    fi
  done < <(links "$md")
done

if ((problems > 0)); then
  echo "$problems problem(s)"
  exit 1
fi
echo "documents stand alone: no outside citation; $checked relative links resolve"
