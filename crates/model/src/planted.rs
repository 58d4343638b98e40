//! A planted slowdown: a measured amount of extra GPU work in one gemv of every layer,
//! for testing that the regression gate (`gpuscope diff --max-regress`) catches a real
//! slowdown from timings alone. The graph, its dispatches, declared costs, counters and
//! outputs stay exactly the same (see `Gemv::dispatch_planted`); only GPU time grows.
//! Hidden from users: `gpuscope profile --plant-slowdown ffn_down=12`.

use std::fmt;

/// Which gemv gets the extra work, and how much.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlantedSlowdown {
    /// The gemv's name within each layer (see [`PlantedSlowdown::TARGETS`]).
    pub target: String,
    /// Extra passes over the matrix per dispatch: each adds about one gemv's compute.
    pub extra_passes: u32,
}

impl PlantedSlowdown {
    /// The per-layer gemvs a slowdown can be planted in.
    pub const TARGETS: [&'static str; 4] = ["attn_qkv", "attn_output", "ffn_gate_up", "ffn_down"];

    /// Parses `TARGET=PASSES`, e.g. `ffn_down=12`.
    pub fn parse(s: &str) -> Result<PlantedSlowdown, String> {
        let (target, passes) = s
            .split_once('=')
            .ok_or_else(|| format!("`{s}`: expected TARGET=PASSES, e.g. ffn_down=12"))?;
        if !Self::TARGETS.contains(&target) {
            return Err(format!(
                "`{s}`: unknown target `{target}`: expected one of {}",
                Self::TARGETS.join(", ")
            ));
        }
        let extra_passes = passes
            .parse()
            .map_err(|_| format!("`{s}`: `{passes}` is not a number of passes"))?;
        Ok(PlantedSlowdown {
            target: target.to_string(),
            extra_passes,
        })
    }

    /// Extra passes for the gemv named `name` (0 for every other).
    pub(crate) fn passes_for(planted: Option<&PlantedSlowdown>, name: &str) -> u32 {
        planted
            .filter(|p| p.target == name)
            .map_or(0, |p| p.extra_passes)
    }

    /// The `workload.settings` key a profile records it under.
    pub const SETTING: &'static str = "planted_slowdown";
}

impl fmt::Display for PlantedSlowdown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} extra passes per dispatch (test-only)",
            self.target, self.extra_passes
        )
    }
}
