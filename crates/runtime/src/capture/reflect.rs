//! Shader reflection with naga (the WGSL front end wgpu itself uses): entry points,
//! group-0 bindings with the access the shader declares, override constants.

use std::collections::BTreeMap;

use gpuscope_trace::capture::Access;

/// What a WGSL module exposes to the commands that use it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShaderInterface {
    /// Compute entry points.
    pub compute_entries: Vec<String>,
    /// Group-0 buffer bindings: `read` or `read_write` storage, uniforms as `read`.
    pub bindings: BTreeMap<u32, Access>,
    /// Names of the `override` declarations.
    pub overrides: Vec<String>,
}

/// Parses `wgsl` and reads its interface; the error is naga's message.
pub fn reflect(wgsl: &str) -> Result<ShaderInterface, String> {
    let module = naga::front::wgsl::parse_str(wgsl).map_err(|e| e.emit_to_string(wgsl))?;
    let mut bindings = BTreeMap::new();
    for (_, g) in module.global_variables.iter() {
        let Some(rb) = &g.binding else { continue };
        if rb.group != 0 {
            continue;
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
        bindings.insert(rb.binding, access);
    }
    Ok(ShaderInterface {
        compute_entries: module
            .entry_points
            .iter()
            .filter(|e| e.stage == naga::ShaderStage::Compute)
            .map(|e| e.name.clone())
            .collect(),
        bindings,
        overrides: module
            .overrides
            .iter()
            .filter_map(|(_, o)| o.name.clone())
            .collect(),
    })
}
