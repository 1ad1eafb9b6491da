"""NCCL's all-to-all alone, through PyTorch: the ceiling `mgpu bench dist`'s exchange is held to.

Run one process per GPU (torchrun --nproc-per-node N scripts/nccl_all_to_all.py BYTES...): for
each size, every rank sends BYTES split evenly over the ranks (as the bench's ceiling row does),
timed with CUDA events after a warm-up, median of 20. Prints, on rank 0, the bytes that leave
their rank per second (GB/s), the figure `mgpu bench dist` reports as a2a_GB/s.
"""

import os
import statistics
import sys

import torch
import torch.distributed as dist


def main() -> None:
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    dist.init_process_group("nccl")
    for arg in sys.argv[1:] or [str(1 << 31)]:
        per_rank = int(arg) // world * world
        send = torch.randint(0, 255, (per_rank,), dtype=torch.uint8, device="cuda")
        recv = torch.empty_like(send)
        times = []
        for i in range(25):
            dist.barrier()
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            dist.all_to_all_single(recv, send)
            end.record()
            torch.cuda.synchronize()
            if i >= 5:
                times.append(start.elapsed_time(end))
        # The slowest rank's median: every rank's exchange ends when the last one does.
        ms = torch.tensor([statistics.median(times)], device="cuda")
        dist.all_reduce(ms, op=dist.ReduceOp.MAX)
        leaving = world * per_rank * (world - 1) / world
        if rank == 0:
            gbps = leaving / (ms.item() * 1e-3) / 1e9
            print(
                f"nccl all_to_all_single: world {world}, {per_rank} bytes per rank, "
                f"{ms.item():.3f} ms, {gbps:.1f} GB/s leaving their rank "
                f"(NCCL {'.'.join(map(str, torch.cuda.nccl.version()))})",
                flush=True,
            )
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
