#!/usr/bin/env bash
# Fuzzes each target for a while and rewrites its committed found/ corpus:
# the seeds, the current found/ inputs, the build's scratch
# corpus (build/fuzz/work/<target>, what ctest runs left) and this run's new
# inputs, reduced to a set that covers every coverage edge the seeds do not (libFuzzer
# -set_cover_merge, edges only: -use_counters=0), so the committed corpus
# stays small. ctest then replays it and fuzzes on from there.
#
#   tests/fuzz/update-found.sh [-b BUILD_DIR] [-t SECONDS] [TARGET...]
#
# Without TARGETs it updates every target that has a found/ folder; naming a
# target creates its folder. Review and commit the changed folders.
set -euo pipefail

build=build
seconds=60
while getopts "b:t:" opt; do
  case $opt in
    b) build=$OPTARG ;;
    t) seconds=$OPTARG ;;
    *) echo "usage: $0 [-b BUILD_DIR] [-t SECONDS] [TARGET...]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))

list="$build/fuzz/fuzz_targets.txt"
if [[ ! -f $list ]]; then
  echo "$0: $list not found: build the fuzz targets first (cmake --build $build)" >&2
  exit 1
fi
declare -A seedsOf foundOf
while read -r name seeds found; do
  seedsOf[$name]=$seeds
  foundOf[$name]=$found
done < "$list"

targets=("$@")
if ((${#targets[@]} == 0)); then
  for name in "${!foundOf[@]}"; do
    [[ -d ${foundOf[$name]} ]] && targets+=("$name")
  done
fi
if ((${#targets[@]} == 0)); then
  echo "$0: no target has a found/ folder; name the targets to create them" >&2
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for name in "${targets[@]}"; do
  if [[ -z ${seedsOf[$name]:-} ]]; then
    echo "$0: no fuzz target '$name' in $list" >&2
    exit 1
  fi
  binary="$build/fuzz/$name"
  found=${foundOf[$name]}
  inputs=("${seedsOf[$name]}")
  [[ -d $found ]] && inputs+=("$found")
  [[ -d $build/fuzz/work/$name ]] && inputs+=("$build/fuzz/work/$name")
  mkdir -p "$tmp/$name/new" "$tmp/$name/merged"
  echo "== $name: fuzzing ${seconds} s"
  "$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$tmp/$name/" "$tmp/$name/new" "${inputs[@]}" \
    > "$tmp/$name/fuzz.log" 2>&1 || {
    echo "$0: $name failed while fuzzing; its log:" >&2
    tail -40 "$tmp/$name/fuzz.log" >&2
    exit 1
  }
  # The merge keeps what is already in its output folder, so starting it with
  # the seeds leaves out of found/ whatever they already cover.
  cp "${seedsOf[$name]}"/* "$tmp/$name/merged"/
  "$binary" -set_cover_merge=1 -use_counters=0 -timeout=10 -rss_limit_mb=2048 \
    "$tmp/$name/merged" "${inputs[@]:1}" "$tmp/$name/new" > "$tmp/$name/merge.log" 2>&1 || {
    echo "$0: $name failed while merging; its log:" >&2
    tail -40 "$tmp/$name/merge.log" >&2
    exit 1
  }
  for seed in "${seedsOf[$name]}"/*; do
    rm "$tmp/$name/merged/$(basename "$seed")"
  done
  rm -rf "$found"
  mkdir -p "$found"
  if compgen -G "$tmp/$name/merged/*" > /dev/null; then
    cp "$tmp/$name/merged"/* "$found"/
  fi
  echo "   $(ls "$found" | wc -l) inputs, $(du -sb "$found" | cut -f1) bytes in ${found#"$PWD"/}"
done
