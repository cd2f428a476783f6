//! What several examples share (not an example itself: Cargo builds `examples/*.rs` and
//! `examples/*/main.rs` only).

use anyhow::{ensure, Context, Result};

/// Reads the command line: each `--name N` (N a count) is handed to `take(name, Some(N))`,
/// each switch of `switches` to `take(name, None)`; `take` returns whether it knows the name,
/// and an unknown one is an error that shows `usage`.
pub fn parse_args(
    usage: &str,
    switches: &[&str],
    mut take: impl FnMut(&str, Option<usize>) -> bool,
) -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut it = args.iter();
    while let Some(name) = it.next() {
        let value = match switches.contains(&name.as_str()) {
            true => None,
            false => {
                let v = it.next().with_context(|| format!("{name} needs a value"))?;
                Some(
                    v.parse()
                        .with_context(|| format!("{name} {v:?}: not a count; use {usage}"))?,
                )
            }
        };
        ensure!(take(name, value), "unknown argument {name:?}: use {usage}");
    }
    Ok(())
}
