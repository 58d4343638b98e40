//! Guard regions: how `ops test` catches out-of-bounds writes.
//!
//! Every output is a view inside a larger buffer:
//!
//! ```text
//! | guard before (≥ 256 B, the offset alignment) | output | slack (256 B) | guard after (256 B) |
//!                                                 \__ the binding ____/
//! ```
//!
//! All of it starts as canary words (a NaN with the payload `0x40DEAD`). wgpu clamps an
//! out-of-range index into a storage array to its last element (naga's `Restrict` bounds
//! check policy), so a write past the output lands *inside the binding*: in the slack,
//! which is bound with the output for that reason. A write there changes a canary word,
//! whatever index the kernel used. The guard after the binding catches a driver that
//! ignores the binding's size (robust buffer access off); the guard before it catches a
//! write through a wrong binding offset. Canaries inside the output region that the kernel
//! should have overwritten stay NaN and fail the comparison; those it must leave alone are
//! compared too (the executor leaves them as they were).
//!
//! Not caught: a write out of bounds of an *input* binding (read-only, wgpu refuses the
//! shader), and a wrong write that happens to store the canary's own bits.

use gpuscope_runtime::{Gpu, GpuBuffer, GpuError};

/// The canary word (a quiet NaN whose payload is recognisable in a hex dump).
pub const CANARY: u32 = 0x7FC0_DEAD;
/// Canary bytes in the binding after the output, and after the binding.
pub const SLACK_BYTES: u64 = 256;

/// An output bound with guards.
pub struct Guarded {
    pub whole: GpuBuffer,
    pub view: GpuBuffer,
    /// Bytes of guard before the view.
    pub before: u64,
    /// Bytes the op writes (the output proper).
    pub logical: u64,
    /// Slack bytes inside the view after the output.
    pub slack: u64,
}

impl Guarded {
    /// A guarded output of `logical` bytes whose first bytes are `init` (canaries after).
    pub fn new(gpu: &Gpu, label: &str, logical: u64, init: &[u8]) -> Result<Guarded, GpuError> {
        let before = (gpu.limits().min_storage_buffer_offset_alignment as u64).max(256);
        let max_binding = gpu.limits().max_storage_buffer_binding_size;
        // The slack shrinks only when the output itself nearly fills a binding.
        let slack = SLACK_BYTES.min(max_binding.saturating_sub(logical) / 4 * 4);
        let total = before + logical + slack + SLACK_BYTES;
        let mut bytes: Vec<u8> = std::iter::repeat_n(CANARY.to_le_bytes(), (total / 4) as usize)
            .flatten()
            .collect();
        let at = before as usize;
        bytes[at..at + init.len()].copy_from_slice(init);
        let whole = gpu.create_buffer_init(&format!("{label}.guarded"), &bytes)?;
        let view = whole.view(label, before, logical + slack)?;
        Ok(Guarded {
            whole,
            view,
            before,
            logical,
            slack,
        })
    }

    /// Canary words changed outside the output, given the whole buffer read back:
    /// (count, a description of the first).
    pub fn changed(&self, whole: &[u8]) -> (u64, Option<String>) {
        let mut count = 0u64;
        let mut first = None;
        let regions = [
            (0, self.before, "before the output"),
            (
                self.before + self.logical,
                self.before + self.logical + self.slack,
                "in the slack after the output (inside the binding)",
            ),
            (
                self.before + self.logical + self.slack,
                whole.len() as u64,
                "after the binding",
            ),
        ];
        for (start, end, where_) in regions {
            for at in (start..end).step_by(4) {
                let w = u32::from_le_bytes(whole[at as usize..at as usize + 4].try_into().unwrap());
                if w != CANARY {
                    count += 1;
                    first.get_or_insert_with(|| {
                        let element = (at as i64 - (self.before + self.logical) as i64) / 4;
                        format!(
                            "out-of-bounds write {where_}: output \"{}\" element {} (of {}) holds {:#010x}",
                            self.view.label(),
                            self.logical as i64 / 4 + element,
                            self.logical / 4,
                            w
                        )
                    });
                }
            }
        }
        (count, first)
    }
}
