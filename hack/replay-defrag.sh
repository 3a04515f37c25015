#!/usr/bin/env bash
# The budget tables of docs/defragmentation.md (issue 40): the replay with
# its defragmenter in the loop, FGD's order, for each mode, trace, move
# budget and seed; then `replay budgets` over the results.
#
#   hack/replay-defrag.sh REPLAY TRACES_DIR OUT_DIR
#
# MODES (fractional: pods with gpu_milli < 1000 as DRA shares of one GPU,
# as FGD replays them; whole: such pods get a whole device-plugin GPU),
# TRACES, BUDGETS (percent of arrivals; 0: no defragmenter, with the stock
# scheduler and the offline packing beside), SEEDS and CONSOLIDATE come from
# the environment. Runs are skipped when their JSON exists, so a stopped
# sweep resumes. Fractional: about 1 minute per run without moves, 0.5-4
# with, on 2 cores; whole GPUs: seconds.
set -euo pipefail

replay=${1:?usage: hack/replay-defrag.sh REPLAY TRACES_DIR OUT_DIR}
traces_dir=${2:?usage: hack/replay-defrag.sh REPLAY TRACES_DIR OUT_DIR}
out=${3:?usage: hack/replay-defrag.sh REPLAY TRACES_DIR OUT_DIR}
MODES=${MODES:-fractional whole}
TRACES=${TRACES:-default multigpu50}
BUDGETS=${BUDGETS:-1 0 0.1 0.5 2}
SEEDS=${SEEDS:-42 43 44 45 46}
CONSOLIDATE=${CONSOLIDATE:-0.1}

if [[ ! -d $traces_dir ]]; then
  echo "replay-defrag: $traces_dir not found. The Alibaba GPU trace v2023 is not part of this"
  echo "replay-defrag: repository; put its CSV files there (or set REPLAY_TRACES). Nothing to do."
  exit 0
fi
mkdir -p "$out"
# FGD's default workload is gpuspec10 without GPU models (docs/placement.md).
if [[ ! -f $out/default.csv ]]; then
  "$replay" variant --pods "$traces_dir/openb_pod_list_gpuspec10.csv" --no-products --out "$out/default.csv"
fi
for mode in $MODES; do
  case $mode in
  fractional) tag="" devices=(--fractional dra-shares --devices dra) ;;
  whole) tag="-whole" devices=(--fractional round-up --devices plugin) ;;
  *) echo "replay-defrag: MODES: $mode is not fractional or whole" >&2; exit 1 ;;
  esac
  for budget in $BUDGETS; do
    for trace in $TRACES; do
      pods=$traces_dir/openb_pod_list_$trace.csv
      [[ $trace == default ]] && pods=$out/default.csv
      for seed in $SEEDS; do
        json=$out/$trace$tag-budget$budget-seed$seed.json
        [[ -f $json ]] && continue
        # Moves past 100% arrived change no figure of the table.
        flags=(--policies devicefit --move-budget "$budget" --consolidate "$CONSOLIDATE" --moves-until 100)
        if [[ $budget == 0 ]]; then
          flags=(--policies default,devicefit --offline)
        fi
        echo "$replay --pods $pods ${devices[*]} --seed $seed ${flags[*]}"
        "$replay" --nodes "$traces_dir/openb_node_list_gpu_node.csv" --pods "$pods" \
          "${devices[@]}" --tune 1.3 --order fgd --seed "$seed" \
          "${flags[@]}" --json "$json.tmp" >/dev/null
        mv "$json.tmp" "$json"
      done
    done
  done
done
fgd=()
f=$traces_dir/fgd-expected-results/analysis_allo_discrete.csv
[[ -f $f ]] && fgd=(--fgd "$f")
"$replay" budgets "${fgd[@]}" --svg "$out/budgets.svg" "$out"/*-budget*-seed*.json
