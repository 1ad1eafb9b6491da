//! Test sizes: around tile edges, several tiles, several levels.

use mgpu::cuda::segreduce::SegItems;
use mgpu::{Context, Element, Offset};
use rand::rngs::StdRng;
use rand::Rng;
use std::ops::Range;

/// A multi-tile size for the segmented and compaction suites (GPU only).
pub const MULTI_TILE: usize = (1 << 20) + 12345;
/// A multi-level size (several reduce levels, thousands of scan tiles, many merge passes).
pub const MULTI_LEVEL: usize = (1 << 20) + 3;

/// Sizes around the tile edges of tile size `nv`, plus multi-tile and multi-level sizes.
pub fn sizes(nv: usize) -> Vec<usize> {
    let mut v = vec![
        0,
        1,
        2,
        31,
        33,
        nv - 1,
        nv,
        nv + 1,
        2 * nv - 1,
        2 * nv + 1,
        7 * nv + 3,
    ];
    v.extend([(1 << 16) + 7, (1 << 20) + 123, 3 << 20]);
    sorted(v)
}

/// 0, 1, MULTI_LEVEL, and nv - 1, nv + 1, 3 * nv + 5 for each tile size in `tiles`.
pub fn edge_sizes(tiles: &[usize]) -> Vec<usize> {
    let mut v = vec![0, 1, MULTI_LEVEL];
    for &nv in tiles {
        v.extend([nv - 1, nv + 1, 3 * nv + 5]);
    }
    sorted(v)
}

/// `small`; k*nv - 1, k*nv, k*nv + 1 for k = 1..=3 for each tile size in `tiles`; a random size
/// below 4 and one of 4 to 12 of the largest tile; on the GPU MULTI_TILE and a random size in
/// `gpu`, on the CPU a random size in `cpu`.
pub fn tile_sizes(
    ctx: &Context,
    r: &mut StdRng,
    small: &[usize],
    tiles: &[usize],
    gpu: Range<usize>,
    cpu: Range<usize>,
) -> Vec<usize> {
    let mut v = small.to_vec();
    for &nv in tiles {
        for k in 1..=3 {
            v.extend([k * nv - 1, k * nv, k * nv + 1]);
        }
    }
    let max_nv = tiles.iter().copied().max().unwrap();
    v.push(r.random_range(3..4 * max_nv));
    v.push(r.random_range(4 * max_nv..12 * max_nv));
    if ctx.is_gpu() {
        v.push(MULTI_TILE);
        v.push(r.random_range(gpu));
    } else {
        v.push(r.random_range(cpu));
    }
    sorted(v)
}

fn sorted(mut v: Vec<usize>) -> Vec<usize> {
    v.sort();
    v.dedup();
    v
}

/// The table's tile size for a family and element type (sm_90 on the CPU, where no arch exists).
pub fn tile(ctx: &Context, family: mgpu::tuning::Family, size: usize) -> usize {
    mgpu::tuning::lookup(family, ctx.arch().unwrap_or(90), size)
        .unwrap()
        .nv()
}

/// The segmented-reduction tile (positions per tile) the library uses for `T`s with offsets `O`
/// in segments `long` on average or not (sm_90's table on the CPU).
pub fn seg_tile<T: Element, O: Offset>(
    ctx: &Context,
    kind: SegItems,
    indirect: bool,
    long: bool,
) -> usize {
    mgpu::cuda::segreduce::table_tuning::<T, O>(
        &mgpu::tuning::table(Some(ctx.arch().unwrap_or(90))),
        kind,
        indirect,
        long,
    )
    .unwrap()
    .nv()
}

/// The tiles a segmented reduction of `T`s over direct values may take: short segments' then
/// long ones' (one tile where they are the same).
pub fn seg_tiles<T: Element, O: Offset>(ctx: &Context) -> Vec<usize> {
    let short = seg_tile::<T, O>(ctx, SegItems::Values, false, false);
    let long = seg_tile::<T, O>(ctx, SegItems::Values, false, true);
    if short == long {
        vec![short]
    } else {
        vec![short, long]
    }
}
