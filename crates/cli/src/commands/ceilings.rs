//! The measured-ceilings cache as the commands use it: `peak` fills it, `profile`
//! embeds the entry of its adapter, `report` falls back to it. A corrupt or foreign
//! entry is never used, and stderr says so.

use gpuscope_report::cache::{self, CacheKey, Lookup};
use gpuscope_trace::ceilings::Ceilings;
use gpuscope_trace::AdapterDesc;

/// The tool string ceilings are measured and cached under.
pub fn tool() -> String {
    format!("gpuscope {}", env!("CARGO_PKG_VERSION"))
}

/// The cache entry for `adapter` measured by this build, if there is one to trust;
/// with its path. Notes what was wrong on stderr when `warn` is set.
pub fn cached(adapter: &AdapterDesc, warn: bool) -> Option<(Ceilings, String)> {
    let Some(root) = cache::cache_root() else {
        if warn {
            eprintln!(
                "gpuscope: no cache directory on this platform; set {} to keep measured ceilings",
                cache::CACHE_DIR_ENV
            );
        }
        return None;
    };
    match cache::load(&root, &CacheKey::new(adapter, &tool())) {
        Lookup::Found { ceilings, path } => Some((ceilings, path.display().to_string())),
        Lookup::Missing { .. } => None,
        Lookup::Untrusted { path, reason } => {
            if warn {
                eprintln!(
                    "gpuscope: not using the ceilings cache {}: {reason}",
                    path.display()
                );
            }
            None
        }
    }
}

/// Puts this machine's cached ceilings of the profile's adapter into it, or says on
/// stderr that there are none and what to run.
pub fn embed(profile: &mut gpuscope_trace::Profile) {
    match cached(&profile.adapter, true) {
        Some((c, path)) => {
            eprintln!("gpuscope: using the measured ceilings in {path}");
            profile.ceilings = Some(c);
        }
        None => eprintln!(
            "gpuscope: no measured ceilings for this adapter: run `gpuscope peak` once for rooflines and floors"
        ),
    }
}
