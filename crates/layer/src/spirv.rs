//! Just enough of SPIR-V to name a compute pipeline: its entry points and their
//! workgroup size, following specialization constants (glslc writes `local_size_x_id`
//! as spec constants with a `WorkgroupSize` composite, which llama.cpp's shaders use).
//!
//! Hand-written rather than a crate (rspirv, spirv-reflect): the layer needs four
//! instructions of the module, and a parser loaded into another program should be
//! small, allocation-light and impossible to crash on a module the driver accepted —
//! every read here is bounds-checked and a malformed module yields nothing, not a panic.

use std::collections::HashMap;

const MAGIC: u32 = 0x0723_0203;
const OP_DECORATE: u16 = 71;
const OP_ENTRY_POINT: u16 = 15;
const OP_EXECUTION_MODE: u16 = 16;
const OP_EXECUTION_MODE_ID: u16 = 331;
const OP_CONSTANT: u16 = 43;
const OP_SPEC_CONSTANT: u16 = 50;
const OP_SPEC_CONSTANT_COMPOSITE: u16 = 51;
const OP_CONSTANT_COMPOSITE: u16 = 44;
const EXECUTION_MODEL_GL_COMPUTE: u32 = 5;
const MODE_LOCAL_SIZE: u32 = 17;
const MODE_LOCAL_SIZE_ID: u32 = 38;
const DECORATION_SPEC_ID: u32 = 1;
const DECORATION_BUILTIN: u32 = 11;
const BUILTIN_WORKGROUP_SIZE: u32 = 25;

/// A compute entry point and how its workgroup size is given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub size: Option<[Size; 3]>,
}

/// One dimension of a workgroup size: a literal, or a spec constant with its default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    Literal(u32),
    Spec { id: u32, default: u32 },
}

impl Size {
    /// The value with `constants` (spec constant id → value) applied.
    pub fn resolve(self, constants: &[(u32, u64)]) -> u32 {
        match self {
            Size::Literal(v) => v,
            Size::Spec { id, default } => constants
                .iter()
                .find(|(c, _)| *c == id)
                .map_or(default, |&(_, v)| v as u32),
        }
    }
}

/// The module's compute entry points (empty for anything that is not SPIR-V).
pub fn compute_entries(words: &[u32]) -> Vec<Entry> {
    if words.len() < 5 || words[0] != MAGIC {
        return Vec::new();
    }
    let mut entries: Vec<(u32, String)> = Vec::new();
    let mut sizes: HashMap<u32, [Size; 3]> = HashMap::new();
    let mut size_ids: HashMap<u32, [u32; 3]> = HashMap::new();
    let mut spec_ids: HashMap<u32, u32> = HashMap::new();
    let mut scalars: HashMap<u32, u32> = HashMap::new();
    let mut composites: HashMap<u32, [u32; 3]> = HashMap::new();
    let mut workgroup_builtin: Option<u32> = None;
    let mut at = 5;
    while at < words.len() {
        let count = (words[at] >> 16) as usize;
        let op = (words[at] & 0xffff) as u16;
        if count == 0 || at + count > words.len() {
            break;
        }
        let ops = &words[at + 1..at + count];
        match op {
            OP_ENTRY_POINT if ops.len() >= 3 && ops[0] == EXECUTION_MODEL_GL_COMPUTE => {
                entries.push((ops[1], literal_string(&ops[2..])));
            }
            OP_EXECUTION_MODE if ops.len() >= 5 && ops[1] == MODE_LOCAL_SIZE => {
                sizes.insert(
                    ops[0],
                    [
                        Size::Literal(ops[2]),
                        Size::Literal(ops[3]),
                        Size::Literal(ops[4]),
                    ],
                );
            }
            OP_EXECUTION_MODE_ID if ops.len() >= 5 && ops[1] == MODE_LOCAL_SIZE_ID => {
                size_ids.insert(ops[0], [ops[2], ops[3], ops[4]]);
            }
            OP_DECORATE if ops.len() >= 3 && ops[1] == DECORATION_SPEC_ID => {
                spec_ids.insert(ops[0], ops[2]);
            }
            OP_DECORATE
                if ops.len() >= 3
                    && ops[1] == DECORATION_BUILTIN
                    && ops[2] == BUILTIN_WORKGROUP_SIZE =>
            {
                workgroup_builtin = Some(ops[0]);
            }
            OP_CONSTANT | OP_SPEC_CONSTANT if ops.len() >= 3 => {
                scalars.insert(ops[1], ops[2]);
            }
            OP_CONSTANT_COMPOSITE | OP_SPEC_CONSTANT_COMPOSITE if ops.len() >= 5 => {
                composites.insert(ops[1], [ops[2], ops[3], ops[4]]);
            }
            _ => {}
        }
        at += count;
    }
    let scalar = |id: u32| -> Option<Size> {
        let default = *scalars.get(&id)?;
        Some(match spec_ids.get(&id) {
            Some(&spec) => Size::Spec { id: spec, default },
            None => Size::Literal(default),
        })
    };
    let of_ids = |ids: [u32; 3]| -> Option<[Size; 3]> {
        Some([scalar(ids[0])?, scalar(ids[1])?, scalar(ids[2])?])
    };
    // The WorkgroupSize built-in overrides any LocalSize (SPIR-V spec, 3.21).
    let builtin = workgroup_builtin
        .and_then(|id| composites.get(&id).copied())
        .and_then(of_ids);
    entries
        .into_iter()
        .map(|(id, name)| Entry {
            size: builtin
                .or_else(|| sizes.get(&id).copied())
                .or_else(|| size_ids.get(&id).copied().and_then(of_ids)),
            name,
        })
        .collect()
}

/// A nul-terminated UTF-8 string packed into words (little-endian bytes).
fn literal_string(words: &[u32]) -> String {
    let bytes: Vec<u8> = words
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .take_while(|&b| b != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The words of a SPIR-V byte buffer (native order, as `vkCreateShaderModule` takes).
pub fn words(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}
