//! Shader reflection with naga (the WGSL front end wgpu itself uses): entry points,
//! buffer bindings with the access the shader declares, override constants.
//!
//! The recorder needs the access of every binding to infer barriers (a `read_write`
//! storage binding is a write in wgpu's usage tracking, whatever the shader does with
//! it) and to know which bindings a dispatch may have written (captured outputs).

use std::collections::BTreeMap;

use gpuscope_trace::capture::Access;

/// What a WGSL module exposes to the commands that use it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShaderInterface {
    /// Compute entry points.
    pub compute_entries: Vec<String>,
    /// Group-0 buffer bindings: `read` or `read_write` storage, uniforms as `read`.
    pub bindings: BTreeMap<u32, Access>,
    /// Buffer bindings of every group, by `(group, binding)`.
    pub group_bindings: BTreeMap<(u32, u32), Access>,
    /// Names of the `override` declarations.
    pub overrides: Vec<String>,
    /// Group-0 buffer bindings whose words are integers (`u32`, `i32`, atomics, or a
    /// struct with any integer member): their outputs compare exactly, never within a
    /// float tolerance (a token id 265 against 7 is a "denormal" difference as f32).
    pub integer_bindings: Vec<u32>,
}

/// Parses `wgsl` and reads its interface; the error is naga's message and where, on one
/// line (`expected ';', found 'x' at line 5:3`).
pub fn reflect(wgsl: &str) -> Result<ShaderInterface, String> {
    let module = naga::front::wgsl::parse_str(wgsl).map_err(|e| match e.location(wgsl) {
        Some(at) => format!(
            "{} at line {}:{}",
            e.message(),
            at.line_number,
            at.line_position
        ),
        None => e.message().to_string(),
    })?;
    let mut group_bindings = BTreeMap::new();
    let mut integer_bindings = Vec::new();
    for (_, g) in module.global_variables.iter() {
        let Some(rb) = &g.binding else { continue };
        if rb.group == 0 && has_integer_words(&module.types, g.ty) {
            integer_bindings.push(rb.binding);
        }
        let access = match g.space {
            naga::AddressSpace::Storage { access }
                if access.contains(naga::StorageAccess::STORE) =>
            {
                Access::ReadWrite
            }
            naga::AddressSpace::Storage { .. } | naga::AddressSpace::Uniform => Access::Read,
            _ => continue,
        };
        group_bindings.insert((rb.group, rb.binding), access);
    }
    Ok(ShaderInterface {
        compute_entries: module
            .entry_points
            .iter()
            .filter(|e| e.stage == naga::ShaderStage::Compute)
            .map(|e| e.name.clone())
            .collect(),
        bindings: group_bindings
            .iter()
            .filter(|((g, _), _)| *g == 0)
            .map(|((_, b), a)| (*b, *a))
            .collect(),
        group_bindings,
        overrides: module
            .overrides
            .iter()
            .filter_map(|(_, o)| o.name.clone())
            .collect(),
        integer_bindings,
    })
}

/// Whether a buffer of type `ty` holds any integer word.
fn has_integer_words(types: &naga::UniqueArena<naga::Type>, ty: naga::Handle<naga::Type>) -> bool {
    let integer = |s: naga::Scalar| !matches!(s.kind, naga::ScalarKind::Float);
    match &types[ty].inner {
        naga::TypeInner::Scalar(s) | naga::TypeInner::Atomic(s) => integer(*s),
        naga::TypeInner::Vector { scalar, .. } => integer(*scalar),
        naga::TypeInner::Matrix { .. } => false,
        naga::TypeInner::Array { base, .. } | naga::TypeInner::BindingArray { base, .. } => {
            has_integer_words(types, *base)
        }
        naga::TypeInner::Struct { members, .. } => {
            members.iter().any(|m| has_integer_words(types, m.ty))
        }
        _ => false,
    }
}
