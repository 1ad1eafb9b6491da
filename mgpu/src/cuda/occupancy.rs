//! Theoretical occupancy: how many CTAs of a kernel fit on one SM, and which resource limits it
//! (the seed's five limits, less the ones that do not bind on current parts).

use super::jit::KernelReport;

/// Per-SM resources of an architecture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmLimits {
    /// 32-bit registers per SM.
    pub registers: u32,
    /// Registers are allocated per warp in units of this many.
    pub register_unit: u32,
    /// Resident threads per SM.
    pub threads: u32,
    /// Resident CTAs per SM.
    pub ctas: u32,
    /// Shared memory per SM with the largest carveout, in bytes.
    pub shared_bytes: u32,
    /// Shared memory the system reserves per CTA, in bytes.
    pub shared_reserved_per_cta: u32,
}

impl SmLimits {
    /// The limits of compute capability `arch` (major * 10 + minor), from NVIDIA's tables.
    pub fn for_arch(arch: u32) -> SmLimits {
        let (threads, ctas, shared_kb) = match arch {
            0..=74 => (2048, 32, 96),
            75 => (1024, 16, 64),
            80 => (2048, 32, 164),
            86 | 87 => (1536, 16, 100),
            89 => (1536, 24, 100),
            _ => (2048, 32, 228),
        };
        SmLimits {
            registers: 65536,
            register_unit: 256,
            threads,
            ctas,
            shared_bytes: shared_kb * 1024,
            shared_reserved_per_cta: if arch >= 80 { 1024 } else { 0 },
        }
    }
}

/// The shared memory per SM (bytes) that a kernel gathering through the L1 cache asks for
/// (`Gpu::keep_l1`): the smallest carveout that holds `ctas` CTAs of `cta_shared` bytes, at most
/// the largest carveout within three quarters of `limits.shared_bytes` (164 of 228 KiB on sm_90),
/// so that the rest of the SM's unified L1 / shared memory stays L1 cache.
pub fn gather_carveout(limits: &SmLimits, ctas: u32, cta_shared: u32) -> u32 {
    // The carveouts an SM can take (KiB) on sm_80 and later, up to the architecture's most.
    const CAPACITIES: [u32; 10] = [0, 8, 16, 32, 64, 100, 132, 164, 196, 228];
    let capacities = || CAPACITIES.iter().map(|k| k * 1024);
    let most = capacities()
        .filter(|&c| c <= limits.shared_bytes / 4 * 3)
        .max()
        .unwrap_or(limits.shared_bytes);
    let need = ctas * (cta_shared + limits.shared_reserved_per_cta);
    capacities().find(|&c| c >= need).unwrap_or(most).min(most)
}

/// The carveout hint (a percentage of `limits.shared_bytes`) that obtains `gather_carveout`'s
/// capacity from the driver: the share of what the CTAs need, rounded up, or where they need the
/// whole capacity that carveout's own share, rounded down. The driver does not simply round a hint
/// up to the next carveout: on the H100 (driver 580) a hint of 71% gave CTAs of 12 KiB 196 KiB
/// (and CTAs of 18 KiB 164), 64% gave both 164 (ncu, 2026-11-24).
pub fn gather_carveout_percent(limits: &SmLimits, ctas: u32, cta_shared: u32) -> u32 {
    let whole = limits.shared_bytes.max(1) as u64;
    let capacity = gather_carveout(limits, ctas, cta_shared) as u64;
    let need = ctas as u64 * (cta_shared + limits.shared_reserved_per_cta) as u64;
    ((need * 100).div_ceil(whole)).min(capacity * 100 / whole) as u32
}

/// Occupancy of one kernel at a CTA size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Occupancy {
    /// Resident CTAs per SM.
    pub ctas_per_sm: u32,
    /// Resident threads over the SM's maximum.
    pub fraction: f64,
    /// The binding resource: "registers", "shared memory", "threads" or "CTA slots".
    pub limited_by: &'static str,
}

/// Resident CTAs of `nt` threads for a kernel with ptxas's `report`.
pub fn theoretical(report: &KernelReport, nt: u32, limits: &SmLimits) -> Occupancy {
    let warps = nt.div_ceil(32);
    let regs_per_warp =
        (report.registers.max(1) * 32).div_ceil(limits.register_unit) * limits.register_unit;
    let by_registers = limits.registers / (regs_per_warp * warps);
    let by_shared =
        limits.shared_bytes / (report.shared_bytes + limits.shared_reserved_per_cta).max(1);
    let by_threads = limits.threads / nt;
    let candidates = [
        (by_registers, "registers"),
        (by_shared, "shared memory"),
        (by_threads, "threads"),
        (limits.ctas, "CTA slots"),
    ];
    let (ctas, limited_by) = candidates.into_iter().min_by_key(|c| c.0).unwrap();
    Occupancy {
        ctas_per_sm: ctas,
        fraction: (ctas * nt) as f64 / limits.threads as f64,
        limited_by,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_bind_the_h100_scan() {
        // 128x31 look-back scan as ncu saw it on an H100: 64 registers, 8 CTAs by registers.
        let r = KernelReport {
            registers: 64,
            shared_bytes: 15_900,
            ..Default::default()
        };
        let o = theoretical(&r, 128, &SmLimits::for_arch(90));
        assert_eq!((o.ctas_per_sm, o.limited_by), (8, "registers"));
        assert!((o.fraction - 0.5).abs() < 1e-9);
    }

    #[test]
    fn gathering_kernels_leave_the_l1_a_third() {
        let h100 = SmLimits::for_arch(90);
        // f32 SpMV tiles at OCC 12: 12 x (11824 + 1024) bytes fit 164 KiB.
        assert_eq!(gather_carveout(&h100, 12, 11_824), 164 * 1024);
        // Larger tiles (f64, or with empty segments) get no more than 164 KiB: fewer CTAs.
        assert_eq!(gather_carveout(&h100, 9, 23_632), 164 * 1024);
        assert_eq!(gather_carveout(&h100, 12, 30_816), 164 * 1024);
        // The hint asks for what the CTAs need (12 x 12352 bytes: 64%), not the carveout's 71%,
        // which the driver took for 196 KiB; where they need more than 164 KiB, for 164 (71%).
        assert_eq!(gather_carveout_percent(&h100, 12, 11_328), 64);
        assert_eq!(gather_carveout_percent(&h100, 12, 16_960), 71);
        assert_eq!(gather_carveout_percent(&h100, 12, 0), 6);
        // A spine's few bytes: the smallest carveout that holds them.
        assert_eq!(gather_carveout(&h100, 12, 48), 16 * 1024);
        // sm_86 (100 KiB per SM): at most 64 KiB.
        assert_eq!(
            gather_carveout(&SmLimits::for_arch(86), 12, 11_824),
            64 * 1024
        );
    }

    #[test]
    fn shared_memory_and_threads_bind_too() {
        let big = KernelReport {
            registers: 32,
            shared_bytes: 40_000,
            ..Default::default()
        };
        assert_eq!(
            theoretical(&big, 128, &SmLimits::for_arch(90)).limited_by,
            "shared memory"
        );
        let small = KernelReport {
            registers: 16,
            shared_bytes: 0,
            ..Default::default()
        };
        let o = theoretical(&small, 1024, &SmLimits::for_arch(90));
        assert_eq!((o.ctas_per_sm, o.limited_by), (2, "threads"));
    }
}
