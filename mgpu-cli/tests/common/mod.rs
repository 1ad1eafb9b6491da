//! What the CLI's test files share.

/// The binary cargo built, or (tests staged to another machine) `MGPU_BIN` / `.gpu/bin/mgpu`.
pub fn mgpu_bin() -> std::path::PathBuf {
    let candidates = [
        std::env::var_os("MGPU_BIN").map(Into::into),
        Some(env!("CARGO_BIN_EXE_mgpu").into()),
        Some(".gpu/bin/mgpu".into()),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|p: &std::path::PathBuf| p.exists())
        .expect("the mgpu binary (set MGPU_BIN)")
}
