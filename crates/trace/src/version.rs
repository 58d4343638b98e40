//! The one "can this build read it" check every versioned JSON file goes through
//! (profiles, captures, the profile inside a compact file).
//!
//! Only the `format` field is parsed first ([`FormatHeader`]), so a file of another
//! major version is refused with both versions named instead of a confusing "missing
//! field" from the full parse. A reader accepts any minor version of its major: newer
//! minors only add fields, which older readers ignore.

use serde::Deserialize;

use crate::FormatVersion;

/// Just the version: every other field may have changed between major versions.
#[derive(Debug, Deserialize)]
pub struct FormatHeader {
    pub format: Option<serde_json::Value>,
}

/// Why a file's `format` field refuses it. Each file kind's error enum turns these into
/// variants that name the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    #[error("no `format` field (this build reads format {supported})")]
    Missing { supported: FormatVersion },
    /// The field as found, in JSON.
    #[error("`format` field is not {{\"major\": N, \"minor\": N}}: found {found}")]
    Malformed { found: String },
    #[error(
        "format {found} cannot be read by this build, which reads format {}.x (writes {supported})",
        supported.major
    )]
    Unsupported {
        found: FormatVersion,
        supported: FormatVersion,
    },
}

impl FormatHeader {
    /// The version this header carries, if a build that writes `supported` reads it.
    pub fn check(self, supported: FormatVersion) -> Result<FormatVersion, VersionError> {
        let Some(value) = self.format else {
            return Err(VersionError::Missing { supported });
        };
        let found: FormatVersion =
            serde_json::from_value(value.clone()).map_err(|_| VersionError::Malformed {
                found: value.to_string(),
            })?;
        if found.major != supported.major {
            return Err(VersionError::Unsupported { found, supported });
        }
        Ok(found)
    }
}
