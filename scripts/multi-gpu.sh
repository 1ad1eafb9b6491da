#!/usr/bin/env bash
# The multi-GPU measurement (issue 34) on a device machine of several GPUs, from the repository
# root with `.gpu/` staged by `../shared/tools/gpu-stage`; results under $OUT (default: .).
#   bash scripts/multi-gpu.sh            # every GPU of the machine
# NVLink multicast stays off (NCCL_NVLS_ENABLE=0), also for every process started here.
set -u
export NCCL_NVLS_ENABLE=0 MGPU_REQUIRE_GPU=1 MGPU_REQUIRE_NCCL=1 MGPU_REQUIRE_MULTI_GPU=1
out=${OUT:-.}
gpus=$(nvidia-smi --list-gpus | wc -l)
ranks=1; r=2; while [ "$r" -le "$gpus" ]; do ranks="$ranks,$r"; r=$((r * 2)); done
status=0
nvidia-smi topo -m > "$out/topo.txt"
python3 -c 'import torch; print("NCCL", torch.cuda.nccl.version())' > "$out/nccl-version.txt" 2>&1
.gpu/bin/mgpu info > "$out/info.txt" 2>&1
# 1. The distributed tests: one process driving every GPU (every_gpu_through_nccl), and ranks on
#    one GPU, against the single-context results.
.gpu/tests/dist-test 2>&1 | tee "$out/dist-test.txt" || status=1
# 2. One process per GPU, torchrun-style, through the rendezvous file: the example checks every
#    result against one context.
torchrun --no-python --nproc-per-node "$gpus" .gpu/bin/dist 2>&1 | tee "$out/torchrun.txt" || status=1
# 3. The bench: strong scaling with 2^30 keys in all, weak with 2^28 per GPU; sort keys and pairs
#    (i32, i64), scan and reduce (i32 and i64 alike); the exchange against NCCL's all-to-all.
.gpu/bin/mgpu bench dist --placement gpus --ranks "$ranks" --scaling strong --sizes 30 \
    --types i32,i64 2>&1 | tee "$out/strong.txt" || status=1
.gpu/bin/mgpu bench dist --placement gpus --ranks "$ranks" --scaling weak --sizes 28 \
    --types i32,i64 2>&1 | tee "$out/weak.txt" || status=1
# 4. NCCL's all-to-all alone through PyTorch, at the bytes a rank sends in the bench's sorts (1,
#    2 and 4 GiB per rank): an outside ceiling beside the communicator's own a2a row.
torchrun --nproc-per-node "$gpus" scripts/nccl_all_to_all.py 1073741824 2147483648 4294967296 \
    2>&1 | tee "$out/nccl-all-to-all.txt" || status=1
exit $status
